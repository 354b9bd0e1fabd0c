// out = x * x + y: the schema of sqadd_ext::sqadd and its CPU kernel. The autograd formula and the fake
// (meta) kernel are registered from Python, in ../sqadd.py.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

namespace {

at::Tensor sqadd_cpu(const at::Tensor& x, const at::Tensor& y) {
  TORCH_CHECK(x.sizes() == y.sizes(), "sqadd: x and y must have one shape, got ", x.sizes(), " and ", y.sizes());
  TORCH_CHECK(x.scalar_type() == y.scalar_type(), "sqadd: dtypes differ: ", x.scalar_type(), " vs ",
              y.scalar_type());
  const at::Tensor xc = x.contiguous(), yc = y.contiguous();
  at::Tensor out = at::empty_like(xc, at::MemoryFormat::Contiguous);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "sqadd_cpu", [&] {
    const scalar_t* px = xc.const_data_ptr<scalar_t>();
    const scalar_t* py = yc.const_data_ptr<scalar_t>();
    scalar_t* po = out.mutable_data_ptr<scalar_t>();
    at::parallel_for(0, xc.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) po[i] = px[i] * px[i] + py[i];
    });
  });
  return out;
}

}  // namespace

TORCH_LIBRARY(sqadd_ext, m) {
  m.def("sqadd(Tensor x, Tensor y) -> Tensor");
}

TORCH_LIBRARY_IMPL(sqadd_ext, CPU, m) {
  m.impl("sqadd", &sqadd_cpu);
}
