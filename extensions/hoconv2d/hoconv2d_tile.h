// hoconv2d: the fused backward's math over tiles, shared by the CUDA kernel that runs it (backward_k_kernel
// in hoconv2d_cuda.cu, its tiles in shared memory) and the CPU op that runs the same functions block by
// block (hoconv2d_filter_backward_tiled in hoconv2d_tile_cpu.cpp), which the tests hold against the
// float64 reference. For k = 3, 5, 7 and 1 to 4 channels, both constants of the code.
//
// A block of kTileH x kTileW pixels reads tiles of G and X with a halo of P = K/2 (zeros outside the
// image). Pixel (ty, tx) of the block, at (h, w) in the image, sits at (ty + P, tx + P) of the tiles:
//   grad Wt[b,t,h,w] = sum_c G[b,c,h,w] * X[b,c,h+i-P,w+j-P]                 (tiles only),
//   grad X[b,c,h,w]  = sum_t Wt[b,t,h-i+P,w-j+P] * G[b,c,h-i+P,w-j+P]       (taps outer: one weight, CH channels),
// with t = i*K + j. Sums run in the order of grad_wt_at and grad_x_at (one partial sum per kernel row).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "benchctl_hd.h"
#include "hoconv2d.h"

namespace hoconv2d {

constexpr int kTileW = 32, kTileH = 8;

// The tiles of one block for K and CH; a CUDA block keeps them in shared memory.
template <typename T, int K, int CH>
struct Tiles {
  static constexpr int P = K / 2, TH = kTileH + 2 * P, TW = kTileW + 2 * P, kElements = CH * TH * TW;
  T g[CH][TH][TW];
  T x[CH][TH][TW];
};

// Element n (of kElements) of the tiles of the block whose first pixel is (row0, col0); `gb` and `xb` are
// G[b] and X[b].
template <typename T, int K, int CH>
BENCHCTL_HD inline void fill_tile_element(Tiles<T, K, CH>& t, const T* gb, const T* xb, int H, int W,
                                          int64_t plane, int row0, int col0, int n) {
  using Ts = Tiles<T, K, CH>;
  const int c = n / (Ts::TH * Ts::TW), r = (n / Ts::TW) % Ts::TH, q = n % Ts::TW;
  const int yy = row0 + r - Ts::P, xx = col0 + q - Ts::P;
  const bool in = yy >= 0 && yy < H && xx >= 0 && xx < W;
  t.g[c][r][q] = in ? gb[c * plane + yy * W + xx] : T(0);
  t.x[c][r][q] = in ? xb[c * plane + yy * W + xx] : T(0);
}

// grad Wt of pixel (ty, tx) of the block, tap by tap: store(t, value). A tap that reads padding reads
// the tiles' zeros.
template <typename T, int K, int CH, typename Store>
BENCHCTL_HD inline void grad_wt_tile(const Tiles<T, K, CH>& t, int ty, int tx, Store store) {
  constexpr int P = K / 2;
  BENCHCTL_UNROLL
  for (int i = 0; i < K; ++i) {
    BENCHCTL_UNROLL
    for (int j = 0; j < K; ++j) {
      T acc = T(0);
      BENCHCTL_UNROLL
      for (int c = 0; c < CH; ++c) acc += t.g[c][ty + P][tx + P] * t.x[c][ty + i][tx + j];
      store(i * K + j, acc);
    }
  }
}

// grad X of pixel (ty, tx) of the block, at (h, w) of an H x W image, for all CH channels: out[c]. The
// weight of tap t at the output pixel (hh, ww) that read it comes from load(t, hh, ww), once for all
// channels; taps whose output pixel lies outside the image add nothing.
template <typename T, int K, int CH, typename Load>
BENCHCTL_HD inline void grad_x_tile(const Tiles<T, K, CH>& t, int ty, int tx, int h, int w, int H, int W,
                                    Load load, T (&out)[CH]) {
  constexpr int P = K / 2;
  BENCHCTL_UNROLL
  for (int c = 0; c < CH; ++c) out[c] = T(0);
  BENCHCTL_UNROLL
  for (int i = 0; i < K; ++i) {
    const int hh = h - i + P;
    T row[CH];
    BENCHCTL_UNROLL
    for (int c = 0; c < CH; ++c) row[c] = T(0);
    BENCHCTL_UNROLL
    for (int j = 0; j < K; ++j) {
      const int ww = w - j + P;
      if (hh >= 0 && hh < H && ww >= 0 && ww < W) {
        const T wv = load(i * K + j, hh, ww);
        BENCHCTL_UNROLL
        for (int c = 0; c < CH; ++c) row[c] += wv * t.g[c][ty + 2 * P - i][tx + 2 * P - j];
      }
    }
    BENCHCTL_UNROLL
    for (int c = 0; c < CH; ++c) out[c] += row[c];
  }
}

// k = 3, 5, 7 with planes that an int indexes: `fn` gets k as a constant; else false.
template <typename Fn>
bool with_fixed_k(const Shape& s, Fn fn) {
  if (s.plane() > std::numeric_limits<int>::max()) return false;
  switch (s.k) {
    case 3: fn(std::integral_constant<int, 3>{}); return true;
    case 5: fn(std::integral_constant<int, 5>{}); return true;
    case 7: fn(std::integral_constant<int, 7>{}); return true;
    default: return false;
  }
}

// k = 3, 5, 7 and C = 1 to 4 with planes that an int indexes (the tiled backward's sizes): `fn` gets both
// as constants; else false.
template <typename Fn>
bool with_fixed_k_c(const Shape& s, Fn fn) {
  if (s.channels < 1 || s.channels > 4) return false;
  return with_fixed_k(s, [&](auto k) {
    switch (s.channels) {
      case 1: fn(k, std::integral_constant<int, 1>{}); break;
      case 2: fn(k, std::integral_constant<int, 2>{}); break;
      case 3: fn(k, std::integral_constant<int, 3>{}); break;
      default: fn(k, std::integral_constant<int, 4>{}); break;
    }
  });
}

}  // namespace hoconv2d
