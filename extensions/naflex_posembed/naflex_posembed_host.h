// Host-side argument checks shared by the CPU and CUDA libraries.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

namespace benchctl {
namespace naflex_posembed {

inline void check_args(const at::Tensor& x, const at::Tensor& table, const at::Tensor& coords,
                       const at::Tensor& sizes) {
  TORCH_CHECK(x.dim() == 3, "naflex_posembed: x must be (B, L, D), got ", x.sizes());
  TORCH_CHECK(table.dim() == 3 && table.size(2) == x.size(2), "naflex_posembed: table must be (Gh, Gw, D), got ",
              table.sizes());
  TORCH_CHECK(coords.dim() == 3 && coords.size(0) == x.size(0) && coords.size(1) == x.size(1) && coords.size(2) == 2,
              "naflex_posembed: coords must be (B, L, 2), got ", coords.sizes());
  TORCH_CHECK(sizes.dim() == 2 && sizes.size(0) == x.size(0) && sizes.size(1) == 2,
              "naflex_posembed: sizes must be (B, 2), got ", sizes.sizes());
  TORCH_CHECK(coords.scalar_type() == at::kLong && sizes.scalar_type() == at::kLong,
              "naflex_posembed: coords and sizes must be int64");
  TORCH_CHECK(x.scalar_type() == table.scalar_type(), "naflex_posembed: x and table dtypes differ");
  TORCH_CHECK(x.device() == table.device() && x.device() == coords.device() && x.device() == sizes.device(),
              "naflex_posembed: all tensors must be on one device");
}

}  // namespace naflex_posembed
}  // namespace benchctl
