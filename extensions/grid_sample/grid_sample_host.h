// Host-side argument checks and views shared by the CPU and CUDA libraries.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include "grid_sample.h"

namespace benchctl {
namespace grid_sample {

inline void check_args(const at::Tensor& image, const at::Tensor& grid) {
  TORCH_CHECK(image.dim() == 4, "grid_sample: image must be (N, C, H, W), got ", image.sizes());
  TORCH_CHECK(grid.dim() == 4 && grid.size(3) == 2, "grid_sample: grid must be (N, Hout, Wout, 2), got ",
              grid.sizes());
  TORCH_CHECK(image.size(0) == grid.size(0), "grid_sample: image and grid batch sizes differ");
  TORCH_CHECK(image.scalar_type() == grid.scalar_type(), "grid_sample: image and grid dtypes differ");
  TORCH_CHECK(image.device() == grid.device(), "grid_sample: image and grid are on different devices");
}

inline ImageView view_of(const at::Tensor& image) {
  return ImageView{image.size(1), image.size(2), image.size(3),
                   image.stride(1), image.stride(2), image.stride(3)};
}

}  // namespace grid_sample
}  // namespace benchctl
