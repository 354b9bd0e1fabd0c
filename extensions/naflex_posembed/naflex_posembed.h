// Per-token bilinear lookup of a position table resized to the token's sample grid, exactly as
// F.interpolate(mode="bilinear", align_corners=False, antialias=False) would compute that resize.
// Shared by the CPU and CUDA kernels.
#pragma once

#include <cstdint>

#include "benchctl_hd.h"

namespace benchctl {
namespace naflex_posembed {

// The four table rows (y * grid_w + x) one token reads, and their bilinear weights.
template <typename T>
struct Corners {
  int64_t row[4];
  T w[4];
};

// One axis of the resize: source indices i0 <= i1 and weights l0 + l1 = 1 for output index dst.
template <typename T>
struct AxisTaps {
  int64_t i0, i1;
  T l0, l1;
};

template <typename T>
BENCHCTL_HD inline AxisTaps<T> axis_taps(int64_t dst, int64_t out_size, int64_t in_size) {
  // Same arithmetic as torch's upsample: scale = in/out, src = scale * (dst + 0.5) - 0.5, clamped
  // at 0, so our results match F.interpolate to float rounding.
  const T scale = static_cast<T>(in_size) / static_cast<T>(out_size);
  T src = scale * (static_cast<T>(dst) + T(0.5)) - T(0.5);
  src = src < T(0) ? T(0) : src;
  AxisTaps<T> a;
  a.i0 = static_cast<int64_t>(src);  // src >= 0, so truncation is floor
  a.i0 = a.i0 < in_size - 1 ? a.i0 : in_size - 1;
  a.i1 = a.i0 + (a.i0 < in_size - 1 ? 1 : 0);
  const T l1 = src - static_cast<T>(a.i0);
  a.l1 = l1 < T(1) ? l1 : T(1);
  a.l0 = T(1) - a.l1;
  return a;
}

// Fills c for the token at (y, x) of a sample resized to (h, w); false for padding tokens
// (negative or out-of-grid coordinates), which get nothing added and send no gradient.
template <typename T>
BENCHCTL_HD inline bool token_corners(int64_t y, int64_t x, int64_t h, int64_t w, int64_t grid_h, int64_t grid_w,
                             Corners<T>* c) {
  if (y < 0 || x < 0 || y >= h || x >= w) return false;
  const AxisTaps<T> ay = axis_taps<T>(y, h, grid_h), ax = axis_taps<T>(x, w, grid_w);
  c->row[0] = ay.i0 * grid_w + ax.i0;
  c->row[1] = ay.i0 * grid_w + ax.i1;
  c->row[2] = ay.i1 * grid_w + ax.i0;
  c->row[3] = ay.i1 * grid_w + ax.i1;
  c->w[0] = ay.l0 * ax.l0;
  c->w[1] = ay.l0 * ax.l1;
  c->w[2] = ay.l1 * ax.l0;
  c->w[3] = ay.l1 * ax.l1;
  return true;
}

// Corners of token `token` of a (B, L) batch given coords (B, L, 2) as (y, x) and sizes (B, 2) as (h, w).
template <typename T>
BENCHCTL_HD inline bool corners_of(const int64_t* coords, const int64_t* sizes, int64_t token, int64_t seq_len,
                          int64_t grid_h, int64_t grid_w, Corners<T>* c) {
  const int64_t b = token / seq_len;
  return token_corners<T>(coords[2 * token], coords[2 * token + 1], sizes[2 * b], sizes[2 * b + 1], grid_h,
                          grid_w, c);
}

// The interpolated value from the four corners' values of one channel.
template <typename T>
BENCHCTL_HD inline T blend(const Corners<T>& c, T v0, T v1, T v2, T v3) {
  return c.w[0] * v0 + c.w[1] * v1 + c.w[2] * v2 + c.w[3] * v3;
}

// The interpolated table value of channel d (table rows are D long).
template <typename T>
BENCHCTL_HD inline T interp(const T* table, const Corners<T>& c, int64_t dim, int64_t d) {
  return blend(c, table[c.row[0] * dim + d], table[c.row[1] * dim + d], table[c.row[2] * dim + d],
               table[c.row[3] * dim + d]);
}

}  // namespace naflex_posembed
}  // namespace benchctl
