// hoconv2d on CUDA. Every kernel is a gather (each thread owns the elements it writes), so no atomics
// and the results do not depend on scheduling. Blocks are 32 columns by 8 rows of one plane; the outer
// index (b, or b*k*k + tap for grad Wt) is the grid's z, so no thread divides a 64-bit index.
//
// For k = 3, 5 or 7 (and, in the backward, 1 to 4 channels), k and C are constants of the kernel:
// - forward: one thread per pixel holds its k*k weights in registers and reuses them for every channel
//   (forward_k_kernel);
// - backward: one kernel, one thread per pixel for both gradients (backward_k_kernel). The block's tiles
//   of G and X, with a halo of k/2, sit in shared memory (zero outside the image); grad Wt reads them for
//   all k*k taps of its pixel; grad X takes taps outer and channels inner, so each weight is read once
//   for all channels. Weights are loaded, and both gradients stored, as streamed data (evict first).
//   Its math is hoconv2d_tile.h's, which the CPU library runs too (hoconv2d_filter_backward_tiled).
// Other sizes run the per-element functions of hoconv2d.h (per_pixel_kernel, grad_wt_kernel).
//
// On an H100 at the seed's B=64 (benchmarks/README.md) the forward moves 76% of the calibrated copy
// bandwidth and the backward 71% (0.355 ms, against 1.04 ms for the two kernels of hoconv2d.h's
// functions it replaced). The op schemas come from the CPU library.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>

#include "hoconv2d.h"
#include "hoconv2d_checks.h"
#include "hoconv2d_tile.h"

namespace hoconv2d {
namespace {

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

// Uncapped, the forward takes 56 registers at k=5 (float, sm_90): 4 blocks of 256 threads an SM. A version of
// benchmarks/hoconv2d_cuda_ab_bench.py may define HOCONV2D_FORWARD_BLOCKS to cap them for that many blocks.
#ifdef HOCONV2D_FORWARD_BLOCKS
#define FORWARD_BOUNDS __launch_bounds__(kTileW * kTileH, HOCONV2D_FORWARD_BLOCKS)
#else
#define FORWARD_BOUNDS
#endif

// out[b,c,h,w] for k fixed at compile time: the pixel's k*k weights are read once, into registers.
template <typename T, int K>
__global__ void FORWARD_BOUNDS forward_k_kernel(const T* __restrict__ x, const T* __restrict__ wt,
                                                T* __restrict__ out, Shape s) {
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

// Loads of data read once (the weights) and stores of data written once (the gradients): streamed
// past the caches (evict first), so that L1 keeps the tiles that are read again.
template <typename T>
__device__ __forceinline__ T load_once(const T* p) { return __ldcs(p); }
template <typename T>
__device__ __forceinline__ void store_once(T* p, T v) { __stcs(p, v); }

// grad X and grad Wt of one pixel per thread, k = K and C = CH fixed: the block copies its tiles of G and
// X into shared memory, then each thread runs hoconv2d_tile.h's math for its pixel. Registers are capped
// so that 4 blocks fit an SM (64 per thread): uncapped, the compiler took 72 and fit 3, and the kernel
// was 19% slower on an H100 (more loads in flight beat the registers it gave up).
template <typename T, int K, int CH>
__global__ void __launch_bounds__(kTileW * kTileH, 4)
    backward_k_kernel(const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ wt,
                      T* __restrict__ gx, T* __restrict__ gwt, Shape s) {
  __shared__ Tiles<T, K, CH> tiles;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int w = blockIdx.x * kTileW + tx, h = blockIdx.y * kTileH + ty;
  const int H = static_cast<int>(s.height), W = static_cast<int>(s.width);
  const int64_t plane = s.plane();
  for (int64_t b = blockIdx.z; b < s.batch; b += gridDim.z) {
    const T* gb = g + b * CH * plane;
    const T* xb = x + b * CH * plane;
    for (int n = ty * kTileW + tx; n < Tiles<T, K, CH>::kElements; n += kTileW * kTileH) {
      fill_tile_element(tiles, gb, xb, H, W, plane, blockIdx.y * kTileH, blockIdx.x * kTileW, n);
    }
    __syncthreads();
    if (w < W && h < H) {  // no return before the barriers: every thread copies its share of the tiles
      const int pos = h * W + w;
      const T* wb = wt + b * (K * K) * plane;
      T* gwb = gwt + b * (K * K) * plane + pos;
      grad_wt_tile(tiles, ty, tx, [&](int tap, T v) { store_once(gwb + tap * plane, v); });
      T out[CH];
      grad_x_tile(tiles, ty, tx, h, w, H, W,
                  [&](int tap, int hh, int ww) { return load_once(wb + tap * plane + hh * W + ww); }, out);
#pragma unroll
      for (int c = 0; c < CH; ++c) store_once(gx + (b * CH + c) * plane + pos, out[c]);
    }
    __syncthreads();  // the next batch's tiles overwrite these
  }
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
    const bool fixed = gx.numel() > 0 && with_fixed_k_c(s, [&](auto k, auto c) {
      backward_k_kernel<scalar_t, decltype(k)::value, decltype(c)::value>
          <<<tile_grid(s, s.batch), block, 0, stream>>>(gp, xp, wp, gxp, gwp, s);
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
