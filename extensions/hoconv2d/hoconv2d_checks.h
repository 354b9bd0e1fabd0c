// hoconv2d: argument checks shared by the CPU and CUDA libraries (host code only).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <cmath>

#include "hoconv2d.h"

namespace hoconv2d {

// Checks x (B,C,H,W) and weights (B,k*k,H,W) with an odd k; returns the sizes of the call.
inline Shape check_inputs(const at::Tensor& x, const at::Tensor& weights) {
  TORCH_CHECK(x.dim() == 4, "hoconv2d: x must be (B, C, H, W), got ", x.sizes());
  TORCH_CHECK(weights.dim() == 4, "hoconv2d: weights must be (B, k*k, H, W), got ", weights.sizes());
  TORCH_CHECK(x.scalar_type() == weights.scalar_type(), "hoconv2d: x is ", x.scalar_type(),
              " but weights is ", weights.scalar_type());
  TORCH_CHECK(x.device() == weights.device(), "hoconv2d: x is on ", x.device(), " but weights on ",
              weights.device());
  const int64_t taps = weights.size(1);
  const auto k = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(taps))));
  TORCH_CHECK(k * k == taps && k % 2 == 1,
              "hoconv2d: weights.size(1) must be k*k for an odd k, got ", taps);
  TORCH_CHECK(weights.size(0) == x.size(0) && weights.size(2) == x.size(2) &&
                  weights.size(3) == x.size(3),
              "hoconv2d: weights ", weights.sizes(), " do not match x ", x.sizes());
  return Shape{x.size(0), x.size(1), x.size(2), x.size(3), k};
}

inline Shape check_backward_inputs(const at::Tensor& grad_out, const at::Tensor& x,
                                   const at::Tensor& weights) {
  const Shape s = check_inputs(x, weights);
  TORCH_CHECK(grad_out.sizes() == x.sizes(), "hoconv2d: grad_out ", grad_out.sizes(),
              " does not match x ", x.sizes());
  TORCH_CHECK(grad_out.scalar_type() == x.scalar_type() && grad_out.device() == x.device(),
              "hoconv2d: grad_out must have the dtype and device of x");
  return s;
}

}  // namespace hoconv2d
