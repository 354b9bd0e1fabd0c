// hoconv2d on CUDA. Every kernel is a gather (each thread owns the elements it writes), so no atomics
// and the results do not depend on scheduling. Blocks are 32 columns by 8 rows of one plane; the outer
// index (b, or b*k*k + tap for grad Wt) is the grid's z, so no thread divides a 64-bit index.
//
// - forward, k = 3, 5 or 7: one thread per pixel holds its k*k weights in registers and reuses them for
//   every channel (forward_k_kernel); other k: the shared forward_at per channel.
// - grad X: one thread per pixel, every channel, by the shared grad_x_at (per_pixel_kernel).
// - grad Wt: one thread per weight, summing the channels, by the shared grad_wt_at (grad_wt_kernel).
//
// On an H100 at the seed's B=64 (benchmarks/README.md) the forward moved 2274 GB/s (76% of the
// calibrated copy bandwidth) against 944 before; the backward 733 GB/s against 580. Register versions of
// grad X and grad Wt (k*k weights, or k*k sums, per thread) were slower: ncu showed them limited by
// registers to 12.5% occupancy. The op schemas come from the CPU library.
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
    if (gx.numel() > 0) {
      per_pixel_kernel<<<tile_grid(s, s.batch), block, 0, stream>>>(
          gp, wt.const_data_ptr<scalar_t>(), gx.mutable_data_ptr<scalar_t>(), s, GradXAt{});
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (gwt.numel() > 0) {
      grad_wt_kernel<scalar_t><<<tile_grid(s, s.batch * s.taps()), block, 0, stream>>>(
          gp, x.const_data_ptr<scalar_t>(), gwt.mutable_data_ptr<scalar_t>(), s);
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
