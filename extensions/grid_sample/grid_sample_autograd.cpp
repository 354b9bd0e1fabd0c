// Autograd for grid_sample::grid_sample_forward, in C++: a torch::autograd::Function registered under
// the Autograd key (for every device), so a forward+backward never enters Python. The wrapper that
// torch.library.register_autograd generates costs 10-15 us a call, as much as the whole backward
// of a small grid. The fake kernels stay registered from Python; under fake tensors this kernel
// runs unchanged and both inner calls reach them through the dispatcher.
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

namespace {

using at::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class GridSampleFunction : public torch::autograd::Function<GridSampleFunction> {
 public:
  static Tensor forward(AutogradContext* ctx, const Tensor& image, const Tensor& grid) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("grid_sample::grid_sample_forward", "")
                         .typed<Tensor(const Tensor&, const Tensor&)>();
    Tensor out;
    {
      at::AutoDispatchBelowADInplaceOrView guard;
      out = op.call(image, grid);
    }
    ctx->save_for_backward({image, grid});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("grid_sample::grid_sample_grid_backward", "")
                         .typed<Tensor(const Tensor&, const Tensor&, const Tensor&)>();
    TORCH_CHECK(!ctx->needs_input_grad(0),
                "grid_sample::grid_sample_forward computes only the grid gradient; the image must not require grad");
    if (!ctx->needs_input_grad(1)) return {Tensor(), Tensor()};
    const auto saved = ctx->get_saved_variables();
    return {Tensor(), op.call(grads[0], saved[0], saved[1])};
  }
};

Tensor grid_sample_autograd(const Tensor& image, const Tensor& grid) {
  return GridSampleFunction::apply(image, grid);
}

}  // namespace

TORCH_LIBRARY_IMPL(grid_sample, Autograd, m) {
  m.impl("grid_sample_forward", &grid_sample_autograd);
}
