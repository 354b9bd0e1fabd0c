// CUDA kernels: fused gather-interpolate-add forward, and the table gradient by atomic scatter-add.
// A block is 32 lanes over channels (coalesced rows) x kTokensPerBlock tokens.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "naflex_posembed.h"
#include "naflex_posembed_host.h"

namespace benchctl {
namespace naflex_posembed {
namespace {

constexpr int kLanes = 32;
constexpr int kTokensPerBlock = 8;

struct Shape {
  int64_t tokens, seq_len, dim, grid_h, grid_w;
};

template <typename T>
__global__ void forward_kernel(const T* x, const T* table, const int64_t* coords, const int64_t* sizes, Shape s,
                               T* out) {
  const int64_t tok = blockIdx.x * static_cast<int64_t>(kTokensPerBlock) + threadIdx.y;
  if (tok >= s.tokens) return;
  Corners<T> c;
  const bool inside = corners_of(coords, sizes, tok, s.seq_len, s.grid_h, s.grid_w, &c);
  const T* xr = x + tok * s.dim;
  T* o = out + tok * s.dim;
  for (int64_t d = threadIdx.x; d < s.dim; d += kLanes) o[d] = inside ? xr[d] + interp(table, c, s.dim, d) : xr[d];
}

template <typename T>
__global__ void table_backward_kernel(const T* grad_out, const int64_t* coords, const int64_t* sizes, Shape s,
                                      T* grad_table) {
  const int64_t tok = blockIdx.x * static_cast<int64_t>(kTokensPerBlock) + threadIdx.y;
  if (tok >= s.tokens) return;
  Corners<T> c;
  if (!corners_of(coords, sizes, tok, s.seq_len, s.grid_h, s.grid_w, &c)) return;
  const T* g = grad_out + tok * s.dim;
  for (int64_t d = threadIdx.x; d < s.dim; d += kLanes) {
    const T v = g[d];
    // Many tokens share table rows, so the adds must be atomic.
    for (int k = 0; k < 4; ++k) atomicAdd(grad_table + c.row[k] * s.dim + d, c.w[k] * v);
  }
}

Shape shape_of(const at::Tensor& x, const at::Tensor& table) {
  return Shape{x.size(0) * x.size(1), x.size(1), x.size(2), table.size(0), table.size(1)};
}

dim3 blocks_for(const Shape& s) {
  return dim3(static_cast<unsigned int>((s.tokens + kTokensPerBlock - 1) / kTokensPerBlock));
}

at::Tensor forward_cuda(const at::Tensor& x_in, const at::Tensor& table_in, const at::Tensor& coords_in,
                        const at::Tensor& sizes_in) {
  check_args(x_in, table_in, coords_in, sizes_in);
  TORCH_CHECK(x_in.is_cuda(), "naflex_posembed_forward (CUDA): tensors must be on a CUDA device");
  const c10::cuda::CUDAGuard guard(x_in.device());
  const at::Tensor x = x_in.contiguous(), table = table_in.contiguous();
  const at::Tensor coords = coords_in.contiguous(), sizes = sizes_in.contiguous();
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  const Shape s = shape_of(x, table);
  if (s.tokens == 0) return out;
  const auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "naflex_posembed_forward_cuda", [&] {
    forward_kernel<scalar_t><<<blocks_for(s), dim3(kLanes, kTokensPerBlock), 0, stream>>>(
        x.const_data_ptr<scalar_t>(), table.const_data_ptr<scalar_t>(), coords.const_data_ptr<int64_t>(),
        sizes.const_data_ptr<int64_t>(), s, out.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

at::Tensor table_backward_cuda(const at::Tensor& grad_out_in, const at::Tensor& table, const at::Tensor& coords_in,
                               const at::Tensor& sizes_in) {
  check_args(grad_out_in, table, coords_in, sizes_in);
  TORCH_CHECK(grad_out_in.is_cuda(), "naflex_posembed_table_backward (CUDA): tensors must be on a CUDA device");
  const c10::cuda::CUDAGuard guard(grad_out_in.device());
  const at::Tensor grad_out = grad_out_in.contiguous();
  const at::Tensor coords = coords_in.contiguous(), sizes = sizes_in.contiguous();
  at::Tensor grad_table = at::zeros(table.sizes(), grad_out.options());
  const Shape s = shape_of(grad_out, table);
  if (s.tokens == 0) return grad_table;
  const auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(grad_out.scalar_type(), "naflex_posembed_table_backward_cuda", [&] {
    table_backward_kernel<scalar_t><<<blocks_for(s), dim3(kLanes, kTokensPerBlock), 0, stream>>>(
        grad_out.const_data_ptr<scalar_t>(), coords.const_data_ptr<int64_t>(), sizes.const_data_ptr<int64_t>(), s,
        grad_table.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return grad_table;
}

}  // namespace
}  // namespace naflex_posembed
}  // namespace benchctl

TORCH_LIBRARY_IMPL(naflex_posembed, CUDA, m) {
  m.impl("naflex_posembed_forward", &benchctl::naflex_posembed::forward_cuda);
  m.impl("naflex_posembed_table_backward", &benchctl::naflex_posembed::table_backward_cuda);
}
