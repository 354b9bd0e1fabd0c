// hoconv2d's CUDA kernels with the backward versions measured on an H100 (benchmarks/README.md, third pass);
// VARIANT picks the backward; the forward, and version 0's backward, are those of commit cfd8b43. Version 6
// is the one extensions/hoconv2d/hoconv2d_cuda.cu now runs.
//   0: grad X one thread per pixel, channels outer (per_pixel_kernel); grad Wt one thread per weight
//   1: grad X with taps outer and channels inner (each weight read once for all channels), k and C fixed
//   2: 1 + grad Wt one thread per pixel, its C values of G in registers, every tap
//   3: 1 and 2 in one kernel (one launch, G read once)
//   4: 3 + weights loaded and outputs stored as streamed (__ldcs / __stcs: evict first, keep L1 for G, X)
//   5: 4 + the block's tiles of G and X (with their halo) in shared memory
//   6: 5 with registers capped for 4 blocks of 256 threads per SM (__launch_bounds__(256, 4))
//   7: 3 with registers capped for 3 blocks per SM (__launch_bounds__(256, 3))
// Prepared after the third pass, not yet measured:
//   8: 6 with blocks of 32 x 16 pixels (512 threads, 2 blocks per SM): a halo of 20x36 for 16x32 pixels
//      instead of 12x36 for 8x32 (1.41x the tile's reads instead of 1.69x)
//   9: 6 with registers capped for 5 blocks per SM (51 a thread)
//  10: 6 without the streamed loads and stores (what the hints are worth in the tiled kernel)
#ifndef VARIANT
#define VARIANT 6
#endif
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <limits>
#include <tuple>
#include <type_traits>

#include "hoconv2d.h"
#include "hoconv2d_checks.h"

namespace hoconv2d {
namespace {

constexpr int kTileW = 32, kTileH = 8;
constexpr int64_t kMaxGrid = 65535;  // the grid's y and z limit; z is walked in strides past it

dim3 tile_grid(const Shape& s, int64_t outer) {
  TORCH_CHECK(s.height <= kTileH * kMaxGrid, "hoconv2d: images of more than ", kTileH * kMaxGrid,
              " rows are not supported on CUDA, got ", s.height);
  return dim3(static_cast<unsigned>((s.width + kTileW - 1) / kTileW),
              static_cast<unsigned>((s.height + kTileH - 1) / kTileH),
              static_cast<unsigned>(std::min(outer, kMaxGrid)));
}

// The per-pixel math the per-pixel kernel applies: out = forward_at(x), or grad_x = grad_x_at(grad_out).
struct ForwardAt {
  template <typename T>
  __device__ T operator()(const T* x_plane, const T* wt_batch, const Shape& s, int64_t h, int64_t w) const {
    return forward_at(x_plane, wt_batch, s, h, w);
  }
};

struct GradXAt {
  template <typename T>
  __device__ T operator()(const T* g_plane, const T* wt_batch, const Shape& s, int64_t y, int64_t x) const {
    return grad_x_at(g_plane, wt_batch, s, y, x);
  }
};

// dst[b,c,h,w] = at(src plane of (b,c), weights of b) for every c: the forward (out from x) and grad X
// (from grad_out, gathered from the k*k output pixels that read x[b,c,y,x]). The k*k weights a thread
// reads for the first channel are in L1 for the others.
template <typename T, typename At>
__global__ void per_pixel_kernel(const T* __restrict__ src, const T* __restrict__ wt,
                                 T* __restrict__ dst, Shape s, At at) {
  const int w = blockIdx.x * kTileW + threadIdx.x, h = blockIdx.y * kTileH + threadIdx.y;
  if (w >= s.width || h >= s.height) return;
  const int64_t plane = s.plane(), pos = static_cast<int64_t>(h) * s.width + w;
  for (int64_t b = blockIdx.z; b < s.batch; b += gridDim.z) {
    const T* wt_batch = wt + b * s.taps() * plane;
    for (int64_t c = 0; c < s.channels; ++c) {
      const int64_t off = (b * s.channels + c) * plane;
      dst[off + pos] = at(src + off, wt_batch, s, h, w);
    }
  }
}

// grad_wt[b,t,h,w], summed over channels.
template <typename T>
__global__ void grad_wt_kernel(const T* __restrict__ g, const T* __restrict__ x, T* __restrict__ gwt,
                               Shape s) {
  const int w = blockIdx.x * kTileW + threadIdx.x, h = blockIdx.y * kTileH + threadIdx.y;
  if (w >= s.width || h >= s.height) return;
  const int taps = static_cast<int>(s.taps()), k = static_cast<int>(s.k);
  const int64_t plane = s.plane(), pos = static_cast<int64_t>(h) * s.width + w;
  for (int64_t bt = blockIdx.z; bt < s.batch * taps; bt += gridDim.z) {
    const int64_t b = bt / taps;
    const int tap = static_cast<int>(bt - b * taps);
    const int64_t batch = b * s.channels * plane;
    gwt[bt * plane + pos] = grad_wt_at(g + batch, x + batch, s, tap / k, tap % k, h, w);
  }
}

// out[b,c,h,w] for k fixed at compile time: the pixel's k*k weights are read once, into registers.
template <typename T, int K>
__global__ void forward_k_kernel(const T* __restrict__ x, const T* __restrict__ wt, T* __restrict__ out,
                                 Shape s) {
  constexpr int P = K / 2;
  const int w = blockIdx.x * kTileW + threadIdx.x, h = blockIdx.y * kTileH + threadIdx.y;
  if (w >= s.width || h >= s.height) return;
  const int H = static_cast<int>(s.height), W = static_cast<int>(s.width);
  const int64_t plane = s.plane();
  const int pos = h * W + w;
  for (int64_t b = blockIdx.z; b < s.batch; b += gridDim.z) {
    const T* wb = wt + b * (K * K) * plane + pos;
    T wr[K * K];
#pragma unroll
    for (int t = 0; t < K * K; ++t) wr[t] = wb[t * plane];
    for (int64_t c = 0; c < s.channels; ++c) {
      const T* xp = x + (b * s.channels + c) * plane;
      T acc = T(0);
#pragma unroll
      for (int i = 0; i < K; ++i) {
        const int y = h + i - P;
        if (y < 0 || y >= H) continue;
        T row = T(0);
#pragma unroll
        for (int j = 0; j < K; ++j) {
          const int xx = w + j - P;
          if (xx >= 0 && xx < W) row += wr[i * K + j] * xp[y * W + xx];
        }
        acc += row;
      }
      out[(b * s.channels + c) * plane + pos] = acc;
    }
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

// ---- backward versions (VARIANT 1-10); k and the channel count C fixed at compile time ----

template <typename T>
__device__ __forceinline__ T load_once(const T* p) {  // read once: streamed past L1 (evict first)
#if (VARIANT >= 4 && VARIANT <= 6) || VARIANT == 8 || VARIANT == 9
  return __ldcs(p);
#else
  return *p;
#endif
}
template <typename T>
__device__ __forceinline__ void store_once(T* p, T v) {
#if (VARIANT >= 4 && VARIANT <= 6) || VARIANT == 8 || VARIANT == 9
  __stcs(p, v);
#else
  *p = v;
#endif
}

// grad X of one pixel (y, x) of batch b for every channel: taps outer, channels inner, so each weight
// Wt[b, t, y-i+p, x-j+p] is read once for all CH channels.
template <typename T, int K, int CH>
__device__ __forceinline__ void grad_x_pixel(const T* gb, const T* wb, T* gxb, int H, int W, int64_t plane,
                                             int y, int x) {
  constexpr int P = K / 2;
  T acc[CH];
#pragma unroll
  for (int c = 0; c < CH; ++c) acc[c] = T(0);
#pragma unroll
  for (int i = 0; i < K; ++i) {
    const int hh = y - i + P;
    T row[CH];
#pragma unroll
    for (int c = 0; c < CH; ++c) row[c] = T(0);
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int ww = x - j + P;
      if (hh >= 0 && hh < H && ww >= 0 && ww < W) {
        const int at = hh * W + ww;
        const T wv = load_once(wb + (i * K + j) * plane + at);
#pragma unroll
        for (int c = 0; c < CH; ++c) row[c] += wv * gb[c * plane + at];
      }
    }
#pragma unroll
    for (int c = 0; c < CH; ++c) acc[c] += row[c];
  }
#pragma unroll
  for (int c = 0; c < CH; ++c) store_once(gxb + c * plane + y * W + x, acc[c]);
}

// grad Wt of one pixel (h, w) of batch b for every tap: the pixel's CH values of G held in registers.
template <typename T, int K, int CH>
__device__ __forceinline__ void grad_wt_pixel(const T* gb, const T* xb, T* gwb, int H, int W, int64_t plane,
                                              int h, int w) {
  constexpr int P = K / 2;
  const int pos = h * W + w;
  T gown[CH];
#pragma unroll
  for (int c = 0; c < CH; ++c) gown[c] = gb[c * plane + pos];
#pragma unroll
  for (int i = 0; i < K; ++i) {
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int y = h + i - P, xx = w + j - P;
      T acc = T(0);
      if (y >= 0 && y < H && xx >= 0 && xx < W) {
#pragma unroll
        for (int c = 0; c < CH; ++c) acc += gown[c] * xb[c * plane + y * W + xx];
      }
      store_once(gwb + (i * K + j) * plane + pos, acc);
    }
  }
}

template <typename T, int K, int CH>
__global__ void grad_x_k_kernel(const T* __restrict__ g, const T* __restrict__ wt, T* __restrict__ gx, Shape s) {
  const int x = blockIdx.x * kTileW + threadIdx.x, y = blockIdx.y * kTileH + threadIdx.y;
  const int H = static_cast<int>(s.height), W = static_cast<int>(s.width);
  if (x >= W || y >= H) return;
  const int64_t plane = s.plane();
  for (int64_t b = blockIdx.z; b < s.batch; b += gridDim.z) {
    grad_x_pixel<T, K, CH>(g + b * CH * plane, wt + b * (K * K) * plane, gx + b * CH * plane, H, W, plane, y, x);
  }
}

template <typename T, int K, int CH>
__global__ void grad_wt_k_kernel(const T* __restrict__ g, const T* __restrict__ x, T* __restrict__ gwt, Shape s) {
  const int w = blockIdx.x * kTileW + threadIdx.x, h = blockIdx.y * kTileH + threadIdx.y;
  const int H = static_cast<int>(s.height), W = static_cast<int>(s.width);
  if (w >= W || h >= H) return;
  const int64_t plane = s.plane();
  for (int64_t b = blockIdx.z; b < s.batch; b += gridDim.z) {
    grad_wt_pixel<T, K, CH>(g + b * CH * plane, x + b * CH * plane, gwt + b * (K * K) * plane, H, W, plane, h, w);
  }
}

// Both gradients of one pixel in one thread (VARIANT 3, 4).
#if VARIANT == 7
#define FUSED_BOUNDS __launch_bounds__(kTileW * kTileH, 3)
#else
#define FUSED_BOUNDS
#endif
#if VARIANT == 6 || VARIANT == 10
#define TILE_BOUNDS __launch_bounds__(kTileW * kTileH, 4)
#elif VARIANT == 8
#define TILE_BOUNDS __launch_bounds__(kTileW * 16, 2)
#elif VARIANT == 9
#define TILE_BOUNDS __launch_bounds__(kTileW * kTileH, 5)
#else
#define TILE_BOUNDS
#endif
// The rows of a block of the tiled kernel (float only in 8: float64's tiles for k = 7 would pass 48 KB).
template <typename T>
__host__ __device__ constexpr int tile_rows() { return VARIANT == 8 && sizeof(T) == 4 ? 16 : kTileH; }

template <typename T, int K, int CH>
__global__ void FUSED_BOUNDS backward_k_kernel(const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ wt,
                                  T* __restrict__ gx, T* __restrict__ gwt, Shape s) {
  const int w = blockIdx.x * kTileW + threadIdx.x, h = blockIdx.y * kTileH + threadIdx.y;
  const int H = static_cast<int>(s.height), W = static_cast<int>(s.width);
  if (w >= W || h >= H) return;
  const int64_t plane = s.plane();
  for (int64_t b = blockIdx.z; b < s.batch; b += gridDim.z) {
    const T* gb = g + b * CH * plane;
    grad_wt_pixel<T, K, CH>(gb, x + b * CH * plane, gwt + b * (K * K) * plane, H, W, plane, h, w);
    grad_x_pixel<T, K, CH>(gb, wt + b * (K * K) * plane, gx + b * CH * plane, H, W, plane, h, w);
  }
}

// VARIANT 5: both gradients with the block's tiles of G and X (and a halo of p) in shared memory,
// zero outside the image; only the weights and the outputs go to global memory.
template <typename T, int K, int CH>
__global__ void TILE_BOUNDS backward_tile_kernel(const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ wt,
                                     T* __restrict__ gx, T* __restrict__ gwt, Shape s) {
  constexpr int kRows = tile_rows<T>();
  constexpr int P = K / 2, TH = kRows + 2 * P, TW = kTileW + 2 * P;
  __shared__ T gt[CH][TH][TW];
  __shared__ T xt[CH][TH][TW];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int w = blockIdx.x * kTileW + tx, h = blockIdx.y * kRows + ty;
  const int H = static_cast<int>(s.height), W = static_cast<int>(s.width);
  const bool inside = w < W && h < H;
  const int64_t plane = s.plane();
  for (int64_t b = blockIdx.z; b < s.batch; b += gridDim.z) {
    const T* gb = g + b * CH * plane;
    const T* xb = x + b * CH * plane;
    for (int n = ty * kTileW + tx; n < CH * TH * TW; n += kTileW * kRows) {
      const int c = n / (TH * TW), r = (n / TW) % TH, q = n % TW;
      const int yy = blockIdx.y * kRows + r - P, xx = blockIdx.x * kTileW + q - P;
      const bool in = yy >= 0 && yy < H && xx >= 0 && xx < W;
      gt[c][r][q] = in ? gb[c * plane + yy * W + xx] : T(0);
      xt[c][r][q] = in ? xb[c * plane + yy * W + xx] : T(0);
    }
    __syncthreads();
    if (inside) {
      const int pos = h * W + w;
      T* gwb = gwt + b * (K * K) * plane + pos;
      const T* wb = wt + b * (K * K) * plane;
#pragma unroll
      for (int i = 0; i < K; ++i) {
#pragma unroll
        for (int j = 0; j < K; ++j) {
          T acc = T(0);  // taps reading padding read the tile's zeros
#pragma unroll
          for (int c = 0; c < CH; ++c) acc += gt[c][ty + P][tx + P] * xt[c][ty + i][tx + j];
          store_once(gwb + (i * K + j) * plane, acc);
        }
      }
      T out[CH];
#pragma unroll
      for (int c = 0; c < CH; ++c) out[c] = T(0);
#pragma unroll
      for (int i = 0; i < K; ++i) {
        const int hh = h - i + P;
        T row[CH];
#pragma unroll
        for (int c = 0; c < CH; ++c) row[c] = T(0);
#pragma unroll
        for (int j = 0; j < K; ++j) {
          const int ww = w - j + P;
          if (hh >= 0 && hh < H && ww >= 0 && ww < W) {
            const T wv = load_once(wb + (i * K + j) * plane + hh * W + ww);
#pragma unroll
            for (int c = 0; c < CH; ++c) row[c] += wv * gt[c][ty + 2 * P - i][tx + 2 * P - j];
          }
        }
#pragma unroll
        for (int c = 0; c < CH; ++c) out[c] += row[c];
      }
#pragma unroll
      for (int c = 0; c < CH; ++c) store_once(gx + (b * CH + c) * plane + pos, out[c]);
    }
    __syncthreads();
  }
}

// k = 3, 5, 7 and C = 1 to 4 with planes that an int indexes: `fn` gets both as constants; else false.
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

}  // namespace

at::Tensor filter_cuda(const at::Tensor& x_in, const at::Tensor& weights_in) {
  const Shape s = check_inputs(x_in, weights_in);
  const c10::cuda::CUDAGuard guard(x_in.device());
  const at::Tensor x = x_in.contiguous(), wt = weights_in.contiguous();
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (out.numel() == 0) return out;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const dim3 grid = tile_grid(s, s.batch), block(kTileW, kTileH);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "hoconv2d_filter_cuda", [&] {
    const scalar_t* xp = x.const_data_ptr<scalar_t>();
    const scalar_t* wp = wt.const_data_ptr<scalar_t>();
    scalar_t* op = out.mutable_data_ptr<scalar_t>();
    const bool fixed = with_fixed_k(s, [&](auto k) {
      forward_k_kernel<scalar_t, decltype(k)::value><<<grid, block, 0, stream>>>(xp, wp, op, s);
    });
    if (!fixed) per_pixel_kernel<<<grid, block, 0, stream>>>(xp, wp, op, s, ForwardAt{});
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor> filter_backward_cuda(const at::Tensor& grad_out,
                                                        const at::Tensor& x_in,
                                                        const at::Tensor& weights_in) {
  const Shape s = check_backward_inputs(grad_out, x_in, weights_in);
  const c10::cuda::CUDAGuard guard(x_in.device());
  const at::Tensor g = grad_out.contiguous(), x = x_in.contiguous(), wt = weights_in.contiguous();
  at::Tensor gx = at::empty_like(x, at::MemoryFormat::Contiguous);
  at::Tensor gwt = at::empty_like(wt, at::MemoryFormat::Contiguous);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const dim3 block(kTileW, kTileH);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "hoconv2d_filter_backward_cuda", [&] {
    const scalar_t* gp = g.const_data_ptr<scalar_t>();
    const scalar_t* xp = x.const_data_ptr<scalar_t>();
    const scalar_t* wp = wt.const_data_ptr<scalar_t>();
    scalar_t* gxp = gx.mutable_data_ptr<scalar_t>();
    scalar_t* gwp = gwt.mutable_data_ptr<scalar_t>();
    if (gx.numel() == 0 && gwt.numel() == 0) return;
    const bool fixed = VARIANT >= 1 && gx.numel() > 0 && with_fixed_k_c(s, [&](auto k, auto c) {
      constexpr int K = decltype(k)::value, CH = decltype(c)::value;
      const dim3 grid = tile_grid(s, s.batch);
      if (VARIANT == 5 || VARIANT == 6 || VARIANT >= 8) {
        constexpr int rows = tile_rows<scalar_t>();
        const dim3 rows_grid(grid.x, static_cast<unsigned>((s.height + rows - 1) / rows), grid.z);
        backward_tile_kernel<scalar_t, K, CH><<<rows_grid, dim3(kTileW, rows), 0, stream>>>(
            gp, xp, wp, gxp, gwp, s);
      } else if (VARIANT >= 3) {
        backward_k_kernel<scalar_t, K, CH><<<grid, block, 0, stream>>>(gp, xp, wp, gxp, gwp, s);
      } else {
        grad_x_k_kernel<scalar_t, K, CH><<<grid, block, 0, stream>>>(gp, wp, gxp, s);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        if (VARIANT >= 2) {
          grad_wt_k_kernel<scalar_t, K, CH><<<grid, block, 0, stream>>>(gp, xp, gwp, s);
        } else {
          grad_wt_kernel<scalar_t><<<tile_grid(s, s.batch * s.taps()), block, 0, stream>>>(gp, xp, gwp, s);
        }
      }
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
    if (fixed) return;
    if (gx.numel() > 0) {
      per_pixel_kernel<<<tile_grid(s, s.batch), block, 0, stream>>>(gp, wp, gxp, s, GradXAt{});
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (gwt.numel() > 0) {
      grad_wt_kernel<scalar_t><<<tile_grid(s, s.batch * s.taps()), block, 0, stream>>>(gp, xp, gwp, s);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  });
  return {gx, gwt};
}

}  // namespace hoconv2d

TORCH_LIBRARY_IMPL(hoconv2d, CUDA, m) {
  m.impl("hoconv2d_filter", &hoconv2d::filter_cuda);
  m.impl("hoconv2d_filter_backward", &hoconv2d::filter_backward_cuda);
}
