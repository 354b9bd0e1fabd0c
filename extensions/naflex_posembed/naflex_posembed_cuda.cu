// CUDA kernels: fused gather-interpolate-add forward, and the table gradient by atomic scatter-add.
// A block is 32 lanes over channels (coalesced rows) x kTokensPerBlock tokens. The float32 forward with
// D a multiple of 4 (and 16-byte aligned rows) moves four channels per lane and access (float4).
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>

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

// The forward for float32 rows of D = 4 * dim4 channels, four channels per access; the same blend per channel.
__global__ void forward_float4_kernel(const float4* x, const float4* table, const int64_t* coords,
                                      const int64_t* sizes, Shape s, int64_t dim4, float4* out) {
  const int64_t tok = blockIdx.x * static_cast<int64_t>(kTokensPerBlock) + threadIdx.y;
  if (tok >= s.tokens) return;
  Corners<float> c;
  const bool inside = corners_of(coords, sizes, tok, s.seq_len, s.grid_h, s.grid_w, &c);
  const float4* xr = x + tok * dim4;
  float4* o = out + tok * dim4;
  for (int64_t d = threadIdx.x; d < dim4; d += kLanes) {
    float4 v = xr[d];
    if (inside) {
      const float4 a = table[c.row[0] * dim4 + d], b = table[c.row[1] * dim4 + d];
      const float4 e = table[c.row[2] * dim4 + d], f = table[c.row[3] * dim4 + d];
      v.x += blend(c, a.x, b.x, e.x, f.x);
      v.y += blend(c, a.y, b.y, e.y, f.y);
      v.z += blend(c, a.z, b.z, e.z, f.z);
      v.w += blend(c, a.w, b.w, e.w, f.w);
    }
    o[d] = v;
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

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
  if (x.scalar_type() == at::kFloat && s.dim % 4 == 0 && aligned16(x.const_data_ptr()) &&
      aligned16(table.const_data_ptr()) && aligned16(out.const_data_ptr())) {
    forward_float4_kernel<<<blocks_for(s), dim3(kLanes, kTokensPerBlock), 0, stream>>>(
        static_cast<const float4*>(x.const_data_ptr()), static_cast<const float4*>(table.const_data_ptr()),
        coords.const_data_ptr<int64_t>(), sizes.const_data_ptr<int64_t>(), s, s.dim / 4,
        static_cast<float4*>(out.mutable_data_ptr()));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
  }
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
