// hoconv2d on CUDA, the versions measured on an H100 (benchmarks/README.md); VARIANT picks which changes are in.
//   1: grad Wt on a (w, h, b*k*k) grid, no 64-bit division per thread
//   2: 1 + forward and grad X on a (w, h, b) grid
//   3: 2 + forward and grad X for k = 3, 5, 7 with the k*k weights of a pixel held in registers
//   4: 3 + grad Wt one thread per pixel for all k*k taps (k = 3, 5, 7)
#ifndef VARIANT
#define VARIANT 4
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
#include <type_traits>
#include <tuple>

#include "hoconv2d.h"
#include "hoconv2d_checks.h"

namespace hoconv2d {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 20;
int64_t blocks_for(int64_t n) { return std::min(kMaxBlocks, (n + kThreads - 1) / kThreads); }

struct Pixel {
  int64_t outer, h, w;
};

__device__ __forceinline__ Pixel pixel_of(int64_t idx, const Shape& s) {
  return {idx / s.plane(), (idx / s.width) % s.height, idx % s.width};
}
__device__ __forceinline__ int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

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

// ---- tiled kernels: blocks of 32 columns by 8 rows, the outer index (b, or b*k*k + tap) on z ----
constexpr int kTileW = 32, kTileH = 8;
constexpr int64_t kMaxZ = 65535;

dim3 tile_grid(const Shape& s, int64_t outer) {
  return dim3(static_cast<unsigned>((s.width + kTileW - 1) / kTileW),
              static_cast<unsigned>((s.height + kTileH - 1) / kTileH),
              static_cast<unsigned>(std::min(outer, kMaxZ)));
}

template <typename T, typename At>
__global__ void per_channel_tile_kernel(const T* __restrict__ src, const T* __restrict__ wt,
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

template <typename T>
__global__ void grad_wt_tile_kernel(const T* __restrict__ g, const T* __restrict__ x, T* __restrict__ gwt,
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

// ---- k fixed at compile time: a pixel's k*k weights in registers, reused for every channel ----
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

template <typename T, int K>
__global__ void grad_x_k_kernel(const T* __restrict__ g, const T* __restrict__ wt, T* __restrict__ gx,
                                Shape s) {
  constexpr int P = K / 2;
  const int x = blockIdx.x * kTileW + threadIdx.x, y = blockIdx.y * kTileH + threadIdx.y;
  if (x >= s.width || y >= s.height) return;
  const int H = static_cast<int>(s.height), W = static_cast<int>(s.width);
  const int64_t plane = s.plane();
  for (int64_t b = blockIdx.z; b < s.batch; b += gridDim.z) {
    const T* wb = wt + b * (K * K) * plane;
    T wr[K * K];  // Wt[b, i*k+j] at the output pixel (y-i+p, x-j+p) that read this input pixel
#pragma unroll
    for (int i = 0; i < K; ++i) {
#pragma unroll
      for (int j = 0; j < K; ++j) {
        const int hh = y - i + P, ww = x - j + P;
        const bool in = hh >= 0 && hh < H && ww >= 0 && ww < W;
        wr[i * K + j] = in ? wb[(i * K + j) * plane + hh * W + ww] : T(0);
      }
    }
    for (int64_t c = 0; c < s.channels; ++c) {
      const T* gp = g + (b * s.channels + c) * plane;
      T acc = T(0);
#pragma unroll
      for (int i = 0; i < K; ++i) {
        const int hh = y - i + P;
        if (hh < 0 || hh >= H) continue;
        T row = T(0);
#pragma unroll
        for (int j = 0; j < K; ++j) {
          const int ww = x - j + P;
          if (ww >= 0 && ww < W) row += wr[i * K + j] * gp[hh * W + ww];
        }
        acc += row;
      }
      gx[(b * s.channels + c) * plane + y * W + x] = acc;
    }
  }
}

template <typename T, int K>
__global__ void grad_wt_k_kernel(const T* __restrict__ g, const T* __restrict__ x, T* __restrict__ gwt,
                                 Shape s) {
  constexpr int P = K / 2;
  const int w = blockIdx.x * kTileW + threadIdx.x, h = blockIdx.y * kTileH + threadIdx.y;
  if (w >= s.width || h >= s.height) return;
  const int H = static_cast<int>(s.height), W = static_cast<int>(s.width);
  const int64_t plane = s.plane();
  const int pos = h * W + w;
  for (int64_t b = blockIdx.z; b < s.batch; b += gridDim.z) {
    const T* gb = g + b * s.channels * plane;
    const T* xb = x + b * s.channels * plane;
    T* ob = gwt + b * (K * K) * plane + pos;
#pragma unroll
    for (int i = 0; i < K; ++i) {
#pragma unroll
      for (int j = 0; j < K; ++j) {
        const int y = h + i - P, xx = w + j - P;
        T acc = T(0);
        if (y >= 0 && y < H && xx >= 0 && xx < W) {
          const int shifted = y * W + xx;
          for (int64_t c = 0; c < s.channels; ++c) acc += gb[c * plane + pos] * xb[c * plane + shifted];
        }
        ob[(i * K + j) * plane] = acc;
      }
    }
  }
}

// k = 3, 5, 7 with a plane that int indexes: the register kernels; else false.
template <typename Fn>
bool with_fixed_k(const Shape& s, Fn fn) {
  if (s.plane() > std::numeric_limits<int>::max() || s.height > int64_t{kTileH} * kMaxZ) return false;
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
  const dim3 block(kTileW, kTileH);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "hoconv2d_filter_cuda", [&] {
    const scalar_t* xp = x.const_data_ptr<scalar_t>();
    const scalar_t* wp = wt.const_data_ptr<scalar_t>();
    scalar_t* op = out.mutable_data_ptr<scalar_t>();
    if (VARIANT >= 3 && with_fixed_k(s, [&](auto k) {
          forward_k_kernel<scalar_t, decltype(k)::value><<<tile_grid(s, s.batch), block, 0, stream>>>(xp, wp, op, s);
        })) {
    } else if (VARIANT >= 2) {
      per_channel_tile_kernel<<<tile_grid(s, s.batch), block, 0, stream>>>(xp, wp, op, s, ForwardAt{});
    } else {
      per_channel_kernel<<<blocks_for(s.batch * s.plane()), kThreads, 0, stream>>>(xp, wp, op, s, ForwardAt{});
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor> filter_backward_cuda(const at::Tensor& grad_out, const at::Tensor& x_in,
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
    if (gx.numel() > 0) {
      scalar_t* op = gx.mutable_data_ptr<scalar_t>();
      if (VARIANT >= 3 && with_fixed_k(s, [&](auto k) {
            grad_x_k_kernel<scalar_t, decltype(k)::value><<<tile_grid(s, s.batch), block, 0, stream>>>(gp, wp, op, s);
          })) {
      } else if (VARIANT >= 2) {
        per_channel_tile_kernel<<<tile_grid(s, s.batch), block, 0, stream>>>(gp, wp, op, s, GradXAt{});
      } else {
        per_channel_kernel<<<blocks_for(s.batch * s.plane()), kThreads, 0, stream>>>(gp, wp, op, s, GradXAt{});
      }
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (gwt.numel() > 0) {
      scalar_t* op = gwt.mutable_data_ptr<scalar_t>();
      if (VARIANT >= 4 && with_fixed_k(s, [&](auto k) {
            grad_wt_k_kernel<scalar_t, decltype(k)::value><<<tile_grid(s, s.batch), block, 0, stream>>>(gp, xp, op, s);
          })) {
      } else if (VARIANT >= 1) {
        grad_wt_tile_kernel<scalar_t><<<tile_grid(s, s.batch * s.taps()), block, 0, stream>>>(gp, xp, op, s);
      } else {
        grad_wt_kernel<scalar_t><<<blocks_for(gwt.numel()), kThreads, 0, stream>>>(gp, xp, op, s);
      }
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
