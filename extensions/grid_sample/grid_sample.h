// Bilinear sampling (zeros padding, align_corners=False) of one point, and the gradient of that
// sample with respect to the point's coordinates only. Shared by the CPU and CUDA kernels.
#pragma once

#include <cstdint>

#include "benchctl_hd.h"

namespace benchctl {
namespace grid_sample {

// One image of the batch, described by strides so NCHW and channels-last layouts both work
// without a copy (channels-last puts a pixel's channels on one cache line).
struct ImageView {
  int64_t C, H, W;
  int64_t sC, sH, sW;
};

// The four taps of one point (nw, ne, sw, se). Taps in the zero padding get offset 0 (a valid
// address) and valid 0, so the channel loops read without branches. Index is int32_t where an
// image's offsets fit (twice the gather width on the CPU), else int64_t.
template <typename T, typename Index = int64_t>
struct Taps {
  Index off[4];
  T valid[4];
  T tx, ty;  // position inside the cell, in [0, 1)
};

template <typename T>
BENCHCTL_HD inline T unnormalize(T coord, int64_t size) {
  // align_corners=False: -1 and +1 are the outer edges of the border pixels.
  return ((coord + T(1)) * T(size) - T(1)) / T(2);
}

template <typename T>
BENCHCTL_HD inline T clamp_coord(T v, int64_t size) {
  // Keeps the integer conversion defined for far-away or NaN points; they stay fully outside.
  const T lo = v > T(-3) ? v : T(-3);
  return lo < T(size + 2) ? lo : T(size + 2);
}

template <typename Index, typename T>
BENCHCTL_HD inline Index floor_to_int(T v) {
  // Truncate, then step down for negative non-integers: unlike floor() this vectorises without
  // -fno-trapping-math.
  const Index i = static_cast<Index>(v);
  return i - static_cast<Index>(static_cast<T>(i) > v);
}

// Branch-free (bitwise &, selects) so loops over many points vectorise.
template <typename T, typename Index = int64_t>
BENCHCTL_HD inline Taps<T, Index> taps(const ImageView v, T gx, T gy) {  // by value: its fields stay in registers
  const T ix = clamp_coord(unnormalize(gx, v.W), v.W), iy = clamp_coord(unnormalize(gy, v.H), v.H);
  const Index x0 = floor_to_int<Index>(ix), y0 = floor_to_int<Index>(iy);
  const Index width = static_cast<Index>(v.W), height = static_cast<Index>(v.H);
  const Index s_h = static_cast<Index>(v.sH), s_w = static_cast<Index>(v.sW);
  Taps<T, Index> t;
  t.tx = ix - static_cast<T>(x0);
  t.ty = iy - static_cast<T>(y0);
  for (int k = 0; k < 4; ++k) {
    const Index x = x0 + (k & 1), y = y0 + (k >> 1);
    const bool inside = (x >= 0) & (x < width) & (y >= 0) & (y < height);
    const Index off = y * s_h + x * s_w;  // unconditional, so the select below is plain
    t.off[k] = inside ? off : 0;
    t.valid[k] = inside ? T(1) : T(0);
  }
  return t;
}

// Asks the memory system for a point's tap rows ahead of use: random points in a large image are
// bound by memory latency, and keeping the misses of many points in flight hides most of it.
template <typename T, typename Index>
inline void prefetch_taps(const T* img, const ImageView& v, const Taps<T, Index>& t) {
#ifndef __CUDA_ARCH__
  for (int64_t c = 0; c < v.C; ++c) {
    const T* p = img + c * v.sC;
    __builtin_prefetch(p + t.off[0]);
    __builtin_prefetch(p + t.off[2]);
    if (v.sC == 1) break;  // channels-last: the other channels share the line
  }
#endif
}

// The bilinear value at (tx, ty) inside a cell with corner values nw, ne, sw, se.
template <typename T>
BENCHCTL_HD inline T bilinear(T tx, T ty, T nw, T ne, T sw, T se) {
  return (T(1) - ty) * ((T(1) - tx) * nw + tx * ne) + ty * ((T(1) - tx) * sw + tx * se);
}

// Its derivatives with respect to tx and ty (per pixel); the corner values do not depend on them.
template <typename T>
BENCHCTL_HD inline void bilinear_grad(T tx, T ty, T nw, T ne, T sw, T se, T* d_tx, T* d_ty) {
  *d_tx = (T(1) - ty) * (ne - nw) + ty * (se - sw);
  *d_ty = (T(1) - tx) * (sw - nw) + tx * (se - ne);
}

// d(pixel coordinate) / d(grid coordinate) under align_corners=False.
template <typename T>
BENCHCTL_HD inline T pixels_per_unit(int64_t size) {
  return T(size) / T(2);
}

// Corner value k of channel base p: zero in the padding (valid 0, offset 0 reads a real pixel).
template <typename T, typename Index>
BENCHCTL_HD inline T corner(const T* p, const Taps<T, Index>& t, int k) {
  return p[t.off[k]] * t.valid[k];
}

// out[c * out_sC] = bilinear sample of channel c at the taps, for every channel.
template <typename T>
BENCHCTL_HD inline void sample_taps(const T* img, const ImageView& v, const Taps<T>& t, T* out, int64_t out_sC) {
  for (int64_t c = 0; c < v.C; ++c) {
    const T* p = img + c * v.sC;
    out[c * out_sC] = bilinear(t.tx, t.ty, corner(p, t, 0), corner(p, t, 1), corner(p, t, 2), corner(p, t, 3));
  }
}

// grad_grid[0..1] = d(sum_c gout_c * sample_c) / d(gx, gy). Only the grid gradient: the image
// gradient is never formed, so the cost does not depend on the image size.
template <typename T>
BENCHCTL_HD inline void grid_grad_taps(const T* img, const ImageView& v, const Taps<T>& t, const T* gout,
                              int64_t gout_sC, T* grad_grid) {
  T dx = T(0), dy = T(0);
  for (int64_t c = 0; c < v.C; ++c) {
    const T* p = img + c * v.sC;
    T d_tx, d_ty;
    bilinear_grad(t.tx, t.ty, corner(p, t, 0), corner(p, t, 1), corner(p, t, 2), corner(p, t, 3), &d_tx, &d_ty);
    dx += gout[c * gout_sC] * d_tx;
    dy += gout[c * gout_sC] * d_ty;
  }
  grad_grid[0] = dx * pixels_per_unit<T>(v.W);
  grad_grid[1] = dy * pixels_per_unit<T>(v.H);
}

}  // namespace grid_sample
}  // namespace benchctl
