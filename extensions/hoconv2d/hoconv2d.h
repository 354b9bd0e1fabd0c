// hoconv2d: the per-element math of the per-pixel k x k filter, shared by the CPU and CUDA code.
//
//   out[b,c,h,w] = sum_{i,j<k} Wt[b,i*k+j,h,w] * Xpad[b,c,h+i,w+j],   Xpad = X zero-padded by p = k/2
//
// Every function computes one element and clips its taps to the image, so it is correct anywhere.
// CUDA threads call them for every element; the CPU code calls them for the columns past its last
// whole vector (W mod 16 in float32) and runs vectorised loops over zero-padded rows for the rest
// (see hoconv2d_cpu.cpp), clipping the forward's kernel rows with the same taps_reading_inside.
#pragma once

#include <cstdint>

#include "benchctl_hd.h"


namespace hoconv2d {

// Sizes of one call; planes are H*W elements, a batch of weights is k*k planes.
struct Shape {
  int64_t batch, channels, height, width, k;

  BENCHCTL_HD int64_t pad() const { return k / 2; }
  BENCHCTL_HD int64_t plane() const { return height * width; }
  BENCHCTL_HD int64_t taps() const { return k * k; }
  BENCHCTL_HD bool inside(int64_t y, int64_t x) const {
    return y >= 0 && y < height && x >= 0 && x < width;
  }
};

BENCHCTL_HD inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
BENCHCTL_HD inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// A half-open range of kernel rows (or columns) [begin, end).
struct TapRange {
  int64_t begin, end;
};

// The taps i of output position `pos` (a row h or column w) that read inside the image:
// 0 <= pos + i - p < size. The forward pass and grad Wt read X at these taps.
BENCHCTL_HD inline TapRange taps_reading_inside(const Shape& s, int64_t pos, int64_t size) {
  return {max64(0, s.pad() - pos), min64(s.k, size + s.pad() - pos)};
}

// The taps i through which input position `pos` (a row y or column x) was read by an output inside
// the image: 0 <= pos - i + p < size. grad X gathers over these.
BENCHCTL_HD inline TapRange taps_reaching(const Shape& s, int64_t pos, int64_t size) {
  return {max64(0, pos + s.pad() - size + 1), min64(s.k, pos + s.pad() + 1)};
}

// out[b,c,h,w]. `x_plane` is X[b,c], `wt_batch` is Wt[b] (k*k planes). The tap ranges are clipped
// once up front (taps that read padding add zero), so the inner loops carry no bounds checks.
template <typename T>
BENCHCTL_HD inline T forward_at(const T* x_plane, const T* wt_batch, const Shape& s, int64_t h, int64_t w) {
  const int64_t p = s.pad(), at = h * s.width + w;
  const TapRange rows = taps_reading_inside(s, h, s.height), cols = taps_reading_inside(s, w, s.width);
  T acc = T(0);
  for (int64_t i = rows.begin; i < rows.end; ++i) {
    T row = T(0);  // one partial sum per kernel row: k short add chains instead of one long one
    for (int64_t j = cols.begin; j < cols.end; ++j) {
      row += wt_batch[(i * s.k + j) * s.plane() + at] * x_plane[at + (i - p) * s.width + (j - p)];
    }
    acc += row;
  }
  return acc;
}

// grad_X[b,c,y,x] = sum_{i,j} Wt[b,i*k+j,h,w] * G[b,c,h,w] with (h,w) = (y-i+p, x-j+p) inside the
// image: a gather, so each element has one owner and no thread ever adds into another's output.
template <typename T>
BENCHCTL_HD inline T grad_x_at(const T* g_plane, const T* wt_batch, const Shape& s, int64_t y, int64_t x) {
  const int64_t p = s.pad();
  const TapRange rows = taps_reaching(s, y, s.height), cols = taps_reaching(s, x, s.width);
  T acc = T(0);
  for (int64_t i = rows.begin; i < rows.end; ++i) {
    T row = T(0);
    for (int64_t j = cols.begin; j < cols.end; ++j) {
      const int64_t at = (y - i + p) * s.width + (x - j + p);
      row += wt_batch[(i * s.k + j) * s.plane() + at] * g_plane[at];
    }
    acc += row;
  }
  return acc;
}

// grad_Wt[b,i*k+j,h,w] = sum_c G[b,c,h,w] * Xpad[b,c,h+i,w+j]; zero where the tap reads padding.
// `g_batch` and `x_batch` are G[b] and X[b] (C planes each). The tap comes as (i, j): the CPU loops
// over them directly and so avoids two integer divisions per element.
template <typename T>
BENCHCTL_HD inline T grad_wt_at(const T* g_batch, const T* x_batch, const Shape& s, int64_t i, int64_t j,
                       int64_t h, int64_t w) {
  const int64_t y = h + i - s.pad(), x = w + j - s.pad();
  if (!s.inside(y, x)) return T(0);
  const int64_t at = h * s.width + w, shifted = y * s.width + x;
  T acc = T(0);
  for (int64_t c = 0; c < s.channels; ++c) {
    acc += g_batch[c * s.plane() + at] * x_batch[c * s.plane() + shifted];
  }
  return acc;
}

}  // namespace hoconv2d
