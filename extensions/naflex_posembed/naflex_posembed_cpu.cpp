// CPU kernels: fused gather-interpolate-add forward, and the table gradient by scatter-add.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <algorithm>

#include "naflex_posembed.h"
#include "naflex_posembed_host.h"

namespace benchctl {
namespace naflex_posembed {
namespace {

constexpr int64_t kTokenGrain = 16;
// Channels per backward task: each task owns its slice of the table gradient, so no two threads
// ever add into the same element (no atomics, no per-thread tables to reduce).
constexpr int64_t kChannelGrain = 64;

template <typename T>
void add_row(T* __restrict out, const T* __restrict x, const T* __restrict table, const Corners<T>& c,
             int64_t dim) {
  const T* __restrict t0 = table + c.row[0] * dim;
  const T* __restrict t1 = table + c.row[1] * dim;
  const T* __restrict t2 = table + c.row[2] * dim;
  const T* __restrict t3 = table + c.row[3] * dim;
  for (int64_t d = 0; d < dim; ++d) out[d] = x[d] + c.w[0] * t0[d] + c.w[1] * t1[d] + c.w[2] * t2[d] + c.w[3] * t3[d];
}

template <typename T>
void scatter_row(T* __restrict grad_table, const T* __restrict g, const Corners<T>& c, int64_t dim,
                 int64_t d0, int64_t d1) {
  for (int k = 0; k < 4; ++k) {
    T* __restrict dst = grad_table + c.row[k] * dim;
    const T w = c.w[k];
    for (int64_t d = d0; d < d1; ++d) dst[d] += w * g[d];
  }
}

at::Tensor forward_cpu(const at::Tensor& x_in, const at::Tensor& table_in, const at::Tensor& coords_in,
                       const at::Tensor& sizes_in) {
  check_args(x_in, table_in, coords_in, sizes_in);
  TORCH_CHECK(x_in.is_cpu(), "naflex_posembed_forward (CPU): tensors must be on the CPU");
  const at::Tensor x = x_in.contiguous(), table = table_in.contiguous();
  const at::Tensor coords = coords_in.contiguous(), sizes = sizes_in.contiguous();
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  const int64_t seq_len = x.size(1), dim = x.size(2), grid_h = table.size(0), grid_w = table.size(1);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "naflex_posembed_forward_cpu", [&] {
    const scalar_t* xp = x.const_data_ptr<scalar_t>();
    const scalar_t* tp = table.const_data_ptr<scalar_t>();
    scalar_t* op = out.mutable_data_ptr<scalar_t>();
    const int64_t* cp = coords.const_data_ptr<int64_t>();
    const int64_t* sp = sizes.const_data_ptr<int64_t>();
    at::parallel_for(0, x.size(0) * seq_len, kTokenGrain, [&](int64_t begin, int64_t end) {
      Corners<scalar_t> c;
      for (int64_t tok = begin; tok < end; ++tok) {
        if (corners_of(cp, sp, tok, seq_len, grid_h, grid_w, &c)) {
          add_row(op + tok * dim, xp + tok * dim, tp, c, dim);
        } else {
          std::copy(xp + tok * dim, xp + (tok + 1) * dim, op + tok * dim);
        }
      }
    });
  });
  return out;
}

at::Tensor table_backward_cpu(const at::Tensor& grad_out_in, const at::Tensor& table, const at::Tensor& coords_in,
                              const at::Tensor& sizes_in) {
  check_args(grad_out_in, table, coords_in, sizes_in);
  TORCH_CHECK(grad_out_in.is_cpu(), "naflex_posembed_table_backward (CPU): tensors must be on the CPU");
  const at::Tensor grad_out = grad_out_in.contiguous();
  const at::Tensor coords = coords_in.contiguous(), sizes = sizes_in.contiguous();
  const int64_t tokens = grad_out.size(0) * grad_out.size(1), seq_len = grad_out.size(1), dim = grad_out.size(2);
  const int64_t grid_h = table.size(0), grid_w = table.size(1);
  at::Tensor grad_table = at::zeros(table.sizes(), grad_out.options());
  AT_DISPATCH_FLOATING_TYPES(grad_out.scalar_type(), "naflex_posembed_table_backward_cpu", [&] {
    const scalar_t* gp = grad_out.const_data_ptr<scalar_t>();
    scalar_t* gtp = grad_table.mutable_data_ptr<scalar_t>();
    const int64_t* cp = coords.const_data_ptr<int64_t>();
    const int64_t* sp = sizes.const_data_ptr<int64_t>();
    at::parallel_for(0, dim, kChannelGrain, [&](int64_t d0, int64_t d1) {
      Corners<scalar_t> c;
      for (int64_t tok = 0; tok < tokens; ++tok) {
        if (corners_of(cp, sp, tok, seq_len, grid_h, grid_w, &c)) scatter_row(gtp, gp + tok * dim, c, dim, d0, d1);
      }
    });
  });
  return grad_table;
}

}  // namespace
}  // namespace naflex_posembed
}  // namespace benchctl

TORCH_LIBRARY_FRAGMENT(benchctl, m) {
  m.def("naflex_posembed_forward(Tensor x, Tensor table, Tensor coords, Tensor sizes) -> Tensor");
  m.def("naflex_posembed_table_backward(Tensor grad_out, Tensor table, Tensor coords, Tensor sizes) -> Tensor");
}

TORCH_LIBRARY_IMPL(benchctl, CPU, m) {
  m.impl("naflex_posembed_forward", &benchctl::naflex_posembed::forward_cpu);
  m.impl("naflex_posembed_table_backward", &benchctl::naflex_posembed::table_backward_cpu);
}
