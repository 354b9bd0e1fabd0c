// The grid backward's corner reads for the common case of a float image in channels-last layout with
// at most 4 channels (RGB), on AVX-512 CPUs. Include after ATen's vec headers (CPU only).
//
// There a point's north taps (nw, ne) are 2C consecutive floats, and so are its south taps (sw, se):
// two masked loads of 8 floats per point, then a transpose into vectors of 16 points, replace the 4C
// gathers of 16 lanes each. On a 2-core AMD EPYC (Zen 4) VM the gathers were ~90% of the backward
// in cache (the taps alone 13 of 116 us on one thread, 4x64x64 points, C=3).
#pragma once

#include <ATen/cpu/vec/vec.h>

#include <cstdint>

#include "grid_sample.h"

#if defined(CPU_CAPABILITY_AVX512)
#include <immintrin.h>
#endif

namespace benchctl {
namespace grid_sample {

#if defined(CPU_CAPABILITY_AVX512)
constexpr int kPoints = 16;  // per vector of row_grads

// Whether the row loads apply to a float image with 32-bit offsets: channels-last with 1 to 4 channels.
inline bool row_loads_apply(const ImageView& v) {
  return v.sC == 1 && v.sW == v.C && v.C >= 1 && v.C <= 4;
}

// The 8-float rows of kPoints points (row i at img + base[i], lanes outside mask[i] read as zero, and never
// touched: a masked-off lane does not fault), transposed: out[l] holds lane l of the 16 points.
inline void load_transposed(const float* img, const int32_t* base, const int32_t* mask, __m512 (&out)[8]) {
  __m512 z[8], t[8], s[8];
  for (int i = 0; i < 8; ++i) {  // points i and i + 8 share a register, one per 256-bit half
    const __m256 lo = _mm256_maskz_loadu_ps(static_cast<__mmask8>(mask[i]), img + base[i]);
    const __m256 hi = _mm256_maskz_loadu_ps(static_cast<__mmask8>(mask[i + 8]), img + base[i + 8]);
    z[i] = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
  }
  // An 8x8 transpose in each 256-bit half: interleave pairs of rows, then pairs of pairs...
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm512_unpacklo_ps(z[i], z[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(z[i], z[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    s[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    s[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    s[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    s[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  // ... then the 128-bit quarters of rows 0-3 and 4-7 side by side.
  const __m512i low = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
  const __m512i high = _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
  for (int l = 0; l < 4; ++l) {
    out[l] = _mm512_permutex2var_ps(s[l], low, s[l + 4]);
    out[l + 4] = _mm512_permutex2var_ps(s[l], high, s[l + 4]);
  }
}

// Where the west tap k of a row starts and which of its 2C lanes are inside the image, for the 16
// points whose taps are at off/valid[k] (west) and off/valid[k + 1] (east). A west tap outside the
// image still gives the row's start (the east tap's offset minus one pixel); its lanes are masked.
inline void row_of(const int32_t* const (&off)[4], const float* const (&valid)[4], int k, int64_t C,
                   int32_t* base, int32_t* mask) {
  const __m512 zero = _mm512_setzero_ps();
  const __mmask16 west = _mm512_cmp_ps_mask(_mm512_loadu_ps(valid[k]), zero, _CMP_NEQ_OQ);
  const __mmask16 east = _mm512_cmp_ps_mask(_mm512_loadu_ps(valid[k + 1]), zero, _CMP_NEQ_OQ);
  const __m512i from_east = _mm512_maskz_sub_epi32(east, _mm512_loadu_si512(off[k + 1]),
                                                   _mm512_set1_epi32(static_cast<int32_t>(C)));
  _mm512_storeu_si512(base, _mm512_mask_loadu_epi32(from_east, west, off[k]));
  const int32_t lanes = (1 << C) - 1;
  const __m512i m = _mm512_or_si512(_mm512_maskz_set1_epi32(west, lanes), _mm512_maskz_set1_epi32(east, lanes << C));
  _mm512_storeu_si512(mask, m);
}

// The pixel-space gradients of kPoints points of a C-channel image: `off`/`valid` point at their taps,
// `gout` at their first channel's grad_out (channels hw apart).
template <int C>
inline void row_grads(const float* img, const int32_t* const (&off)[4], const float* const (&valid)[4],
                      const float* tx_in, const float* ty_in, const float* gout, int64_t hw, float* dx, float* dy) {
  using Vec = at::vec::Vectorized<float>;
  alignas(64) int32_t base[2][kPoints], mask[2][kPoints];
  row_of(off, valid, 0, C, base[0], mask[0]);
  row_of(off, valid, 2, C, base[1], mask[1]);
  __m512 north[8], south[8];
  load_transposed(img, base[0], mask[0], north);
  load_transposed(img, base[1], mask[1], south);
  const Vec tx = Vec::loadu(tx_in), ty = Vec::loadu(ty_in);
  Vec gx(0.f), gy(0.f);
  for (int c = 0; c < C; ++c) {
    Vec d_tx, d_ty;
    bilinear_grad(tx, ty, Vec(north[c]), Vec(north[C + c]), Vec(south[c]), Vec(south[C + c]), &d_tx, &d_ty);
    const Vec g = Vec::loadu(gout + c * hw);
    gx = at::vec::fmadd(g, d_tx, gx);
    gy = at::vec::fmadd(g, d_ty, gy);
  }
  gx.store(dx);
  gy.store(dy);
}

// The gradients of a block's whole vectors of kPoints points (its TapBlock `b`) where row_loads_apply;
// returns how many points it did.
template <typename Block>
int64_t grad_rows(const float* img, const ImageView& v, const Block& b, const float* gout, int64_t hw, float* dx,
                  float* dy) {
  int64_t j = 0;
  for (; j + kPoints <= b.size; j += kPoints) {
    const int32_t* const off[4] = {b.off[0] + j, b.off[1] + j, b.off[2] + j, b.off[3] + j};
    const float* const valid[4] = {b.valid[0] + j, b.valid[1] + j, b.valid[2] + j, b.valid[3] + j};
    const auto args = [&](auto fn) { fn(img, off, valid, b.tx + j, b.ty + j, gout + j, hw, dx + j, dy + j); };
    switch (v.C) {
      case 1: args(row_grads<1>); break;
      case 2: args(row_grads<2>); break;
      case 3: args(row_grads<3>); break;
      default: args(row_grads<4>); break;
    }
  }
  return j;
}
#else
inline bool row_loads_apply(const ImageView&) { return false; }

template <typename Block>
int64_t grad_rows(const float*, const ImageView&, const Block&, const float*, int64_t, float*, float*) {
  return 0;
}
#endif

}  // namespace grid_sample
}  // namespace benchctl
