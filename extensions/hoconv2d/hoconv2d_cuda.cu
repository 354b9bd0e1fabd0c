// hoconv2d on CUDA: every output element computed by the shared functions of hoconv2d.h, one thread
// per pixel (all its channels) or per weight. Every kernel is a gather (each thread owns the elements
// it writes), so no atomics and the results do not depend on scheduling. The op schemas come from the
// CPU library.
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

namespace hoconv2d {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU many times over; larger tensors use the grid-stride loop.
constexpr int64_t kMaxBlocks = int64_t{1} << 20;

int64_t blocks_for(int64_t n) { return std::min(kMaxBlocks, (n + kThreads - 1) / kThreads); }

// Flat index -> (outer, h, w) of a (..., H, W) contiguous tensor; w is fastest, so consecutive
// threads of a warp touch consecutive addresses.
struct Pixel {
  int64_t outer, h, w;
};

__device__ __forceinline__ Pixel pixel_of(int64_t idx, const Shape& s) {
  return {idx / s.plane(), (idx / s.width) % s.height, idx % s.width};
}

__device__ __forceinline__ int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ int64_t grid_stride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// The forward and grad X run one thread per (b, h, w), looping over the channels: the k*k weights a
// thread reads for the first channel are in L1 for the others, so the weights (k*k planes per batch,
// the largest input) cross from L2 once instead of once per channel. `outer` of the pixel is b.

// The per-pixel math the per-channel kernel applies: out = forward_at(x), or grad_x = grad_x_at(grad_out).
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
// (from grad_out, gathered from the k*k output pixels that read x[b,c,y,x]).
template <typename T, typename At>
__global__ void per_channel_kernel(const T* __restrict__ src, const T* __restrict__ wt, T* __restrict__ dst,
                                   Shape s, At at) {
  const int64_t n = s.batch * s.plane();
  for (int64_t idx = first_index(); idx < n; idx += grid_stride()) {
    const Pixel px = pixel_of(idx, s);
    const T* wt_batch = wt + px.outer * s.taps() * s.plane();
    const int64_t first = px.outer * s.channels * s.plane(), pos = px.h * s.width + px.w;
    for (int64_t c = 0; c < s.channels; ++c) {
      const int64_t plane = first + c * s.plane();
      dst[plane + pos] = at(src + plane, wt_batch, s, px.h, px.w);
    }
  }
}

// grad_wt[b,t,h,w], summed over channels; `outer` of the pixel is b*k*k + t.
template <typename T>
__global__ void grad_wt_kernel(const T* __restrict__ g, const T* __restrict__ x, T* __restrict__ gwt,
                               Shape s) {
  const int64_t n = s.batch * s.taps() * s.plane();
  for (int64_t idx = first_index(); idx < n; idx += grid_stride()) {
    const Pixel px = pixel_of(idx, s);
    const int64_t b = px.outer / s.taps(), tap = px.outer % s.taps();
    const int64_t batch = b * s.channels * s.plane();
    gwt[idx] = grad_wt_at(g + batch, x + batch, s, tap / s.k, tap % s.k, px.h, px.w);
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
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "hoconv2d_filter_cuda", [&] {
    per_channel_kernel<<<blocks_for(s.batch * s.plane()), kThreads, 0, stream>>>(
        x.const_data_ptr<scalar_t>(), wt.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(), s,
        ForwardAt{});
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
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "hoconv2d_filter_backward_cuda", [&] {
    const scalar_t* gp = g.const_data_ptr<scalar_t>();
    if (gx.numel() > 0) {
      per_channel_kernel<<<blocks_for(s.batch * s.plane()), kThreads, 0, stream>>>(
          gp, wt.const_data_ptr<scalar_t>(), gx.mutable_data_ptr<scalar_t>(), s, GradXAt{});
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (gwt.numel() > 0) {
      grad_wt_kernel<scalar_t><<<blocks_for(gwt.numel()), kThreads, 0, stream>>>(
          gp, x.const_data_ptr<scalar_t>(), gwt.mutable_data_ptr<scalar_t>(), s);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  });
  return {gx, gwt};
}

}  // namespace hoconv2d

TORCH_LIBRARY_IMPL(benchctl, CUDA, m) {
  m.impl("hoconv2d_filter", &hoconv2d::filter_cuda);
  m.impl("hoconv2d_filter_backward", &hoconv2d::filter_backward_cuda);
}
