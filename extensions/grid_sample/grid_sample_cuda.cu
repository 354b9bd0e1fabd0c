// CUDA kernels for bilinear grid sampling with a grid-only backward: one thread per point.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "grid_sample.h"
#include "grid_sample_host.h"

namespace benchctl {
namespace grid_sample {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void forward_kernel(const T* img, int64_t s_n, ImageView v, const T* grid, int64_t hw,
                               int64_t points, T* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= points) return;
  const int64_t n = i / hw, p = i - n * hw;
  const Taps<T> t = taps(v, grid[2 * i], grid[2 * i + 1]);
  sample_taps(img + n * s_n, v, t, out + n * v.C * hw + p, hw);
}

template <typename T>
__global__ void grid_backward_kernel(const T* img, int64_t s_n, ImageView v, const T* grid, int64_t hw,
                                     int64_t points, const T* grad_out, T* grad_grid) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= points) return;
  const int64_t n = i / hw, p = i - n * hw;
  const Taps<T> t = taps(v, grid[2 * i], grid[2 * i + 1]);
  grid_grad_taps(img + n * s_n, v, t, grad_out + n * v.C * hw + p, hw, grad_grid + 2 * i);
}

inline unsigned int blocks_for(int64_t points) {
  return static_cast<unsigned int>((points + kThreads - 1) / kThreads);
}

at::Tensor forward_cuda(const at::Tensor& image, const at::Tensor& grid_in) {
  check_args(image, grid_in);
  TORCH_CHECK(image.is_cuda(), "grid_sample_forward (CUDA): tensors must be on a CUDA device");
  const c10::cuda::CUDAGuard guard(image.device());
  const at::Tensor grid = grid_in.contiguous();
  const ImageView v = view_of(image);
  const int64_t hw = grid.size(1) * grid.size(2), points = image.size(0) * hw;
  at::Tensor out = at::empty({image.size(0), v.C, grid.size(1), grid.size(2)}, image.options());
  if (points == 0) return out;
  const auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(image.scalar_type(), "grid_sample_forward_cuda", [&] {
    forward_kernel<scalar_t><<<blocks_for(points), kThreads, 0, stream>>>(
        image.const_data_ptr<scalar_t>(), image.stride(0), v, grid.const_data_ptr<scalar_t>(), hw, points,
        out.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

at::Tensor grid_backward_cuda(const at::Tensor& grad_out_in, const at::Tensor& image, const at::Tensor& grid_in) {
  check_args(image, grid_in);
  TORCH_CHECK(image.is_cuda(), "grid_sample_grid_backward (CUDA): tensors must be on a CUDA device");
  const c10::cuda::CUDAGuard guard(image.device());
  const at::Tensor grid = grid_in.contiguous();
  const at::Tensor grad_out = grad_out_in.contiguous();
  const ImageView v = view_of(image);
  const int64_t hw = grid.size(1) * grid.size(2), points = image.size(0) * hw;
  TORCH_CHECK(grad_out.numel() == points * v.C, "grid_sample_grid_backward: grad_out has the wrong size");
  at::Tensor grad_grid = at::empty(grid.sizes(), grid.options());
  if (points == 0) return grad_grid;
  const auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(image.scalar_type(), "grid_sample_grid_backward_cuda", [&] {
    grid_backward_kernel<scalar_t><<<blocks_for(points), kThreads, 0, stream>>>(
        image.const_data_ptr<scalar_t>(), image.stride(0), v, grid.const_data_ptr<scalar_t>(), hw, points,
        grad_out.const_data_ptr<scalar_t>(), grad_grid.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return grad_grid;
}

}  // namespace
}  // namespace grid_sample
}  // namespace benchctl

TORCH_LIBRARY_IMPL(grid_sample, CUDA, m) {
  m.impl("grid_sample_forward", &benchctl::grid_sample::forward_cuda);
  m.impl("grid_sample_grid_backward", &benchctl::grid_sample::grid_backward_cuda);
}
