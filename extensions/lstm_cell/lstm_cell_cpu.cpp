// LSTM cell step: the op schemas, the device-independent composition (ATen matmuls + one fused
// pointwise kernel each way) and the CPU pointwise kernels.
//
// torch.ops.lstm_cell.lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh) -> (h', c', gates)
//   gates are the activated i, f, g, o (B, 4H), saved for lstm_cell_backward.
// torch.ops.lstm_cell.lstm_cell_backward(grad_h, grad_c, x, h, c, w_ih, w_hh, c', gates)
//   -> (grad_x, grad_h, grad_c, grad_w_ih, grad_w_hh, grad_b_ih, grad_b_hh)
// The pointwise backward also sums the gate gradients over the batch: the biases' gradient.
// The pointwise parts are separate ops so the CUDA library only has to add kernels for those two; on
// the CPU lstm_cell has a kernel of its own that runs the matmuls and the pointwise pass in one
// parallel region (cell_forward_cpu).
// The autograd kernel of lstm_cell is a C++ torch::autograd::Function (CellFunction below, under the
// Autograd key, so it serves CPU and CUDA): forward and backward never enter Python.

// ATen's SIMD types at the CPU's width (AVX2/AVX-512): see benchctl_vec.h.
#define BENCHCTL_VEC_NAME benchctl_lstm_cell
#include "benchctl_vec.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/cpu/vec/vec.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros_like.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <functional>
#include <tuple>
#include <vector>

#include "lstm_cell.h"

namespace {

using at::Tensor;
using Tensor3 = std::tuple<Tensor, Tensor, Tensor>;

// Hidden elements per chunk of the pointwise kernels: at B=64, H=64 (4096 elements) both threads get
// half, which measured 1-3 us faster than one thread doing all of it right after the matmuls.
constexpr int64_t kGrainElements = 2048;

// Rows per chunk of the pointwise kernels, forward and backward.
inline int64_t rows_per_chunk(int64_t H) { return std::max<int64_t>(1, kGrainElements / std::max<int64_t>(H, 1)); }

// SIMD versions of the header's math policy on whole vectors.
struct VecMath {
  // exp_u20 is the fast exp ATen's own CPU sigmoid uses (float: a 20-ulp polynomial, ~2x faster
  // than Sleef's exp; double: the exact exp), so the fused kernel is as accurate as eager mode.
  template <typename V>
  static V sigmoid(V x) {
    const V one(1);
    return one / (one + x.neg().exp_u20());
  }
  // tanh(x) = 2 sigmoid(2x) - 1: one exp instead of Sleef's tanh, which costs several exps. The
  // error stays within a few ulp of 1 in absolute terms, the scale h' = o tanh(c') is used at.
  template <typename V>
  static V tanh(V x) {
    const V one(1), two(2);
    return two * sigmoid(two * x) - one;
  }
};

void check_pointwise(const Tensor& gates, const Tensor& c) {
  TORCH_CHECK(c.dim() == 2, "lstm_cell: c must be (B, H), got ", c.sizes());
  TORCH_CHECK(gates.dim() == 2 && gates.size(0) == c.size(0) && gates.size(1) == 4 * c.size(1),
              "lstm_cell: gates must be (B, 4H) = (", c.size(0), ", ", 4 * c.size(1), "), got ",
              gates.sizes());
  TORCH_CHECK(gates.scalar_type() == c.scalar_type(), "lstm_cell: dtypes differ: ",
              gates.scalar_type(), " vs ", c.scalar_type());
}

template <typename scalar_t>
void forward_rows(const scalar_t* pre, const scalar_t* bias, const scalar_t* c, scalar_t* h_new,
                  scalar_t* c_new, scalar_t* act, int64_t row0, int64_t row1, int64_t H) {
  using Vec = at::vec::Vectorized<scalar_t>;
  for (int64_t b = row0; b < row1; ++b) {
    const scalar_t* p = pre + b * 4 * H;
    scalar_t* a = act + b * 4 * H;
    const int64_t r = b * H;
    for (int64_t j = 0; j < H; j += Vec::size()) {
      const int64_t n = std::min<int64_t>(Vec::size(), H - j);
      // The bias (b_hh, or both biases summed) is broadcast over the batch: added here instead of
      // materialising a (B, 4H) copy.
      auto gate = [&](int64_t k) { return Vec::loadu(p + k * H + j, n) + Vec::loadu(bias + k * H + j, n); };
      auto out = lstm_cell::forward_element<Vec, VecMath>(gate(0), gate(1), gate(2), gate(3),
                                                          Vec::loadu(c + r + j, n));
      out.act.i.store(a + j, n);
      out.act.f.store(a + H + j, n);
      out.act.g.store(a + 2 * H + j, n);
      out.act.o.store(a + 3 * H + j, n);
      out.c_new.store(c_new + r + j, n);
      out.h_new.store(h_new + r + j, n);
    }
  }
}

// Also adds rows [row0, row1) of the gate gradients to `col_sums` (4H). Column-major over the rows:
// each column's four sums stay in registers down the rows and are stored once.
template <typename scalar_t>
void backward_rows(const scalar_t* grad_h, const scalar_t* grad_c, const scalar_t* c,
                   const scalar_t* c_new, const scalar_t* act, scalar_t* grad_gates,
                   scalar_t* grad_c_prev, scalar_t* col_sums, int64_t row0, int64_t row1, int64_t H) {
  using Vec = at::vec::Vectorized<scalar_t>;
  for (int64_t j = 0; j < H; j += Vec::size()) {
    const int64_t n = std::min<int64_t>(Vec::size(), H - j);
    Vec sums[4] = {Vec::loadu(col_sums + j, n), Vec::loadu(col_sums + H + j, n),
                   Vec::loadu(col_sums + 2 * H + j, n), Vec::loadu(col_sums + 3 * H + j, n)};
    for (int64_t b = row0; b < row1; ++b) {
      const scalar_t* a = act + b * 4 * H + j;
      scalar_t* gg = grad_gates + b * 4 * H + j;
      const int64_t r = b * H + j;
      lstm_cell::Gates<Vec> g{Vec::loadu(a, n), Vec::loadu(a + H, n), Vec::loadu(a + 2 * H, n),
                              Vec::loadu(a + 3 * H, n)};
      auto out = lstm_cell::backward_element<Vec, VecMath>(Vec::loadu(grad_h + r, n), Vec::loadu(grad_c + r, n),
                                                           Vec::loadu(c + r, n), Vec::loadu(c_new + r, n), g);
      const Vec grads[4] = {out.grad.i, out.grad.f, out.grad.g, out.grad.o};
      for (int k = 0; k < 4; ++k) {
        grads[k].store(gg + k * H, n);
        sums[k] = sums[k] + grads[k];
      }
      out.grad_c.store(grad_c_prev + r, n);
    }
    for (int k = 0; k < 4; ++k) sums[k].store(col_sums + k * H + j, n);
  }
}

Tensor3 pointwise_forward_cpu(const Tensor& gates, const Tensor& b_hh, const Tensor& c) {
  check_pointwise(gates, c);
  TORCH_CHECK(b_hh.numel() == gates.size(1), "lstm_cell: b_hh must have 4H elements");
  const Tensor pre = gates.contiguous(), bias = b_hh.contiguous(), cc = c.contiguous();
  const int64_t B = c.size(0), H = c.size(1);
  Tensor h_new = at::empty({B, H}, c.options()), c_new = at::empty({B, H}, c.options());
  Tensor act = at::empty({B, 4 * H}, c.options());
  AT_DISPATCH_FLOATING_TYPES(c.scalar_type(), "lstm_cell_pointwise", [&] {
    at::parallel_for(0, B, rows_per_chunk(H),
                     [&](int64_t row0, int64_t row1) {
                       forward_rows<scalar_t>(pre.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(),
                                              cc.data_ptr<scalar_t>(), h_new.data_ptr<scalar_t>(),
                                              c_new.data_ptr<scalar_t>(), act.data_ptr<scalar_t>(),
                                              row0, row1, H);
                     });
  });
  return {h_new, c_new, act};
}

// (grad_gates, grad_c, grad_bias). Each block of rows sums its gate gradients into a row of its own,
// and the blocks' rows are added up in order, so the bias gradient is the same bit for bit on any
// number of threads. A separate grad_gates.sum(0) took 3-4 us of a ~190 us forward+backward at
// B=64, H=64, on the backward's longer thread.
Tensor3 pointwise_backward_cpu(const Tensor& grad_h, const Tensor& grad_c, const Tensor& c,
                               const Tensor& c_new, const Tensor& gates) {
  check_pointwise(gates, c);
  // Autograd may hand in expanded (stride 0) gradients, e.g. from out.sum().backward().
  const Tensor gh = grad_h.contiguous(), gc = grad_c.contiguous(), cc = c.contiguous();
  const Tensor cn = c_new.contiguous(), act = gates.contiguous();
  const int64_t B = c.size(0), H = c.size(1);
  const int64_t rows = rows_per_chunk(H);
  const int64_t blocks = std::max<int64_t>(1, (B + rows - 1) / rows);
  Tensor grad_gates = at::empty({B, 4 * H}, c.options()), grad_c_prev = at::empty({B, H}, c.options());
  Tensor sums = at::zeros({blocks, 4 * H}, c.options()), grad_bias = at::empty({4 * H}, c.options());
  AT_DISPATCH_FLOATING_TYPES(c.scalar_type(), "lstm_cell_pointwise_backward", [&] {
    scalar_t* const s = sums.data_ptr<scalar_t>();
    at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
      for (int64_t k = first; k < last; ++k) {
        backward_rows<scalar_t>(gh.data_ptr<scalar_t>(), gc.data_ptr<scalar_t>(), cc.data_ptr<scalar_t>(),
                                cn.data_ptr<scalar_t>(), act.data_ptr<scalar_t>(), grad_gates.data_ptr<scalar_t>(),
                                grad_c_prev.data_ptr<scalar_t>(), s + k * 4 * H, k * rows,
                                std::min(B, (k + 1) * rows), H);
      }
    });
    scalar_t* const out = grad_bias.data_ptr<scalar_t>();
    std::copy(s, s + 4 * H, out);
    for (int64_t k = 1; k < blocks; ++k) {
      for (int64_t j = 0; j < 4 * H; ++j) out[j] += s[k * 4 * H + j];
    }
  });
  return {grad_gates, grad_c_prev, grad_bias};
}

void check_cell(const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih,
                const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
  TORCH_CHECK(x.dim() == 2 && h.dim() == 2 && c.sizes() == h.sizes() && x.size(0) == h.size(0),
              "lstm_cell: need x (B, I), h and c (B, H); got ", x.sizes(), ", ", h.sizes(), ", ", c.sizes());
  const int64_t H = h.size(1);
  TORCH_CHECK(w_ih.dim() == 2 && w_ih.size(0) == 4 * H && w_ih.size(1) == x.size(1),
              "lstm_cell: w_ih must be (4H, I), got ", w_ih.sizes());
  TORCH_CHECK(w_hh.dim() == 2 && w_hh.size(0) == 4 * H && w_hh.size(1) == H,
              "lstm_cell: w_hh must be (4H, H), got ", w_hh.sizes());
  TORCH_CHECK(b_ih.dim() == 1 && b_hh.dim() == 1 && b_ih.size(0) == 4 * H && b_hh.size(0) == 4 * H,
              "lstm_cell: biases must be (4H,), got ", b_ih.sizes(), " and ", b_hh.sizes());
}

// Whether independent jobs run side by side: on the CPU with two or more threads, outside a parallel
// region. At B=64, H=64 each matmul is ~24 us: too small for the BLAS to split well over two cores,
// while two of them on two cores take the time of one.
bool side_by_side_here(const Tensor& like) {
  return like.is_cpu() && at::get_num_threads() > 1 && !at::in_parallel_region();
}

// Runs the jobs side by side on CPU threads (each job on one thread) where that pays, else in turn.
// Every job runs under the caller's thread-local state (grad mode, dispatch keys): an OpenMP thread
// has its own, grad mode on, and a matmul there of an input that requires grad recorded an autograd
// node, so the backward's weight gradients came back with a grad_fn (forward+backward took the same
// time either way: 188 against 187 us, B=64, H=64, 20 paired rounds).
template <size_t N>
void side_by_side(const Tensor& like, const std::array<std::function<void()>, N>& jobs) {
  if (!side_by_side_here(like)) {
    for (const auto& job : jobs) job();
    return;
  }
  const at::ThreadLocalState caller;
  at::parallel_for(0, N, 1, [&](int64_t begin, int64_t end) {
    at::ThreadLocalStateGuard state(caller);
    for (int64_t i = begin; i < end; ++i) jobs[i]();
  });
}

// Splits the batch in two halves side by side where that pays (side_by_side_here, B > 1), else one job.
void by_halves(const Tensor& like, int64_t B, const std::function<void(int64_t, int64_t)>& rows) {
  const int64_t half = (B + 1) / 2;
  if (side_by_side_here(like) && B > 1) {
    side_by_side<2>(like, {[&] { rows(0, half); }, [&] { rows(half, B); }});
  } else {
    rows(0, B);
  }
}

// Rows [begin, end) of the gate pre-activations: x W_ih^T (+ b_ih when given), then h W_hh^T
// accumulated in place, so no second (B, 4H) buffer is added in afterwards.
void gate_rows(Tensor& gates, const Tensor& x, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh,
               const Tensor* b_ih, int64_t begin, int64_t end) {
  // Below autograd: out= refuses inputs that require grad under autograd.
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  Tensor g = gates.narrow(0, begin, end - begin);
  const Tensor xs = x.narrow(0, begin, end - begin);
  if (b_ih != nullptr) {
    at::addmm_out(g, *b_ih, xs, w_ih.t());
  } else {
    at::mm_out(g, xs, w_ih.t());
  }
  g.addmm_(h.narrow(0, begin, end - begin), w_hh.t());
}

// Device-independent (CUDA): ATen matmuls around the pointwise op, which dispatches to the device.
Tensor3 cell_forward(const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih,
                  const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
  check_cell(x, h, c, w_ih, w_hh, b_ih, b_hh);
  static auto pointwise = c10::Dispatcher::singleton()
                              .findSchemaOrThrow("lstm_cell::lstm_cell_pointwise", "")
                              .typed<Tensor3(const Tensor&, const Tensor&, const Tensor&)>();
  Tensor gates = at::empty({x.size(0), w_ih.size(0)}, x.options());
  gate_rows(gates, x, h, w_ih, w_hh, &b_ih, 0, x.size(0));  // b_hh is added by the pointwise kernel
  return pointwise.call(gates, b_hh, c);
}

// CPU: each thread takes half the rows through both matmuls and then the pointwise pass, so one
// parallel region serves the whole forward and the pointwise pass reads rows its own matmuls have
// just written. Both biases are summed once and added by the pointwise pass (addmm's bias term would
// first copy the broadcast bias over the rows). The activations overwrite the pre-activations
// (forward_rows loads a column's four gates before it stores them).
Tensor3 cell_forward_cpu(const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih,
                         const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
  check_cell(x, h, c, w_ih, w_hh, b_ih, b_hh);
  const int64_t B = x.size(0), H = h.size(1);
  Tensor gates = at::empty({B, 4 * H}, x.options());
  check_pointwise(gates, c);
  TORCH_CHECK(b_ih.scalar_type() == c.scalar_type() && b_hh.scalar_type() == c.scalar_type(),
              "lstm_cell: the biases' dtype must be c's");
  const Tensor cc = c.contiguous(), bi = b_ih.contiguous(), bh = b_hh.contiguous();
  Tensor h_new = at::empty({B, H}, c.options()), c_new = at::empty({B, H}, c.options());
  AT_DISPATCH_FLOATING_TYPES(c.scalar_type(), "lstm_cell_cpu", [&] {
    std::vector<scalar_t> bias(4 * H);
    std::transform(bi.data_ptr<scalar_t>(), bi.data_ptr<scalar_t>() + 4 * H, bh.data_ptr<scalar_t>(), bias.begin(),
                   std::plus<scalar_t>());
    by_halves(x, B, [&](int64_t begin, int64_t end) {
      gate_rows(gates, x, h, w_ih, w_hh, nullptr, begin, end);
      scalar_t* const act = gates.data_ptr<scalar_t>();
      forward_rows<scalar_t>(act, bias.data(), cc.data_ptr<scalar_t>(), h_new.data_ptr<scalar_t>(),
                             c_new.data_ptr<scalar_t>(), act, begin, end, H);
    });
  });
  return {h_new, c_new, gates};
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor> cell_backward(
    const Tensor& grad_h, const Tensor& grad_c, const Tensor& x, const Tensor& h, const Tensor& c,
    const Tensor& w_ih, const Tensor& w_hh, const Tensor& c_new, const Tensor& gates) {
  static auto pointwise = c10::Dispatcher::singleton()
                              .findSchemaOrThrow("lstm_cell::lstm_cell_pointwise_backward", "")
                              .typed<Tensor3(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                             const Tensor&)>();
  // Both biases were broadcast over the batch into the same sum, so each gets the column sum of
  // grad_gates (the JIT's grad_sum_to_size), which the pointwise kernel forms; copied for the second.
  auto [grad_gates, grad_c_prev, gb_ih] = pointwise.call(grad_h, grad_c, c, c_new, gates);
  Tensor gx, gh, gw_ih, gw_hh, gb_hh;
  // The copy goes with a grad-input matmul, which is a little faster than a grad-weight one.
  side_by_side<4>(x, {[&] { gx = at::mm(grad_gates, w_ih); },
                      [&] {
                        gh = at::mm(grad_gates, w_hh);
                        gb_hh = gb_ih.clone();
                      },
                      [&] { gw_ih = at::mm(grad_gates.t(), x); }, [&] { gw_hh = at::mm(grad_gates.t(), h); }});
  return {gx, gh, grad_c_prev, gw_ih, gw_hh, gb_ih, gb_hh};
}

// Autograd in C++: a torch::autograd::Function registered under the Autograd key, so a
// forward+backward never enters Python (the wrapper torch.library.register_autograd generates cost
// ~50 us per fwd+bwd at B=64, H=64). The fake kernels stay registered from Python; under fake
// tensors this kernel runs unchanged and both inner calls go through the dispatcher to them.
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class CellFunction : public torch::autograd::Function<CellFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const Tensor& x, const Tensor& h, const Tensor& c,
                               const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                               const Tensor& b_hh) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("lstm_cell::lstm_cell", "")
                         .typed<Tensor3(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                        const Tensor&, const Tensor&, const Tensor&)>();
    Tensor h_new, c_new, gates;
    {
      at::AutoDispatchBelowADInplaceOrView guard;
      std::tie(h_new, c_new, gates) = op.call(x, h, c, w_ih, w_hh, b_ih, b_hh);
    }
    ctx->save_for_backward({x, h, c, w_ih, w_hh, c_new, gates});
    ctx->mark_non_differentiable({gates});
    // Otherwise autograd zero-fills a (B, 4H) gradient for `gates` on every backward, unused.
    ctx->set_materialize_grads(false);
    return {h_new, c_new, gates};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("lstm_cell::lstm_cell_backward", "")
                         .typed<std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor>(
                             const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                             const Tensor&, const Tensor&, const Tensor&, const Tensor&)>();
    const auto saved = ctx->get_saved_variables();
    const Tensor& c_new = saved[5];
    // An output left out of the loss has no gradient; the kernel wants explicit zeros for it.
    const Tensor grad_h = grads[0].defined() ? grads[0] : at::zeros_like(c_new);
    const Tensor grad_c = grads[1].defined() ? grads[1] : at::zeros_like(c_new);
    // The backward has no derivative of its own: say so rather than let autograd's fallback give a
    // silently wrong second derivative.
    TORCH_CHECK(!at::GradMode::is_enabled(),
                "lstm_cell: the cpp op has no second derivative (backward with create_graph=True)");
    // Nothing below needs autograd: dispatching past it skips the boxed not-implemented fallback of
    // the two ops and ATen's autograd wrappers (~8 us of ~270 on one thread).
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [gx, gh, gc, gw_ih, gw_hh, gb_ih, gb_hh] =
        op.call(grad_h, grad_c, saved[0], saved[1], saved[2], saved[3], saved[4], c_new, saved[6]);
    return {gx, gh, gc, gw_ih, gw_hh, gb_ih, gb_hh};
  }
};

Tensor3 cell_autograd(const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih,
                      const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
  auto out = CellFunction::apply(x, h, c, w_ih, w_hh, b_ih, b_hh);
  return {out[0], out[1], out[2]};
}

}  // namespace

TORCH_LIBRARY(lstm_cell, m) {
  m.def("lstm_cell(Tensor x, Tensor h, Tensor c, Tensor w_ih, Tensor w_hh, Tensor b_ih, Tensor b_hh)"
        " -> (Tensor, Tensor, Tensor)");
  m.def("lstm_cell_backward(Tensor grad_h, Tensor grad_c, Tensor x, Tensor h, Tensor c, Tensor w_ih,"
        " Tensor w_hh, Tensor c_new, Tensor gates)"
        " -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)");
  m.def("lstm_cell_pointwise(Tensor gates, Tensor b_hh, Tensor c) -> (Tensor, Tensor, Tensor)");
  m.def("lstm_cell_pointwise_backward(Tensor grad_h, Tensor grad_c, Tensor c, Tensor c_new,"
        " Tensor gates) -> (Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(lstm_cell, CompositeExplicitAutograd, m) {
  m.impl("lstm_cell", &cell_forward);
  m.impl("lstm_cell_backward", &cell_backward);
}

TORCH_LIBRARY_IMPL(lstm_cell, CPU, m) {
  m.impl("lstm_cell", &cell_forward_cpu);
  m.impl("lstm_cell_pointwise", &pointwise_forward_cpu);
  m.impl("lstm_cell_pointwise_backward", &pointwise_backward_cpu);
}

TORCH_LIBRARY_IMPL(lstm_cell, Autograd, m) {
  m.impl("lstm_cell", &cell_autograd);
}
