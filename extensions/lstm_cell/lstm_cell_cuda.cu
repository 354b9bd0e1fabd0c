// CUDA kernels for the two pointwise ops of the LSTM cell (schemas and the matmul composition live
// in lstm_cell_cpu.cpp, which must be loaded first). One thread per (b, j) hidden element; the gate
// algebra is the shared header's, so CPU and CUDA agree by construction.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <tuple>

#include "lstm_cell.h"

namespace {

using at::Tensor;
constexpr int kThreads = 256;

template <typename scalar_t>
__global__ void forward_kernel(const scalar_t* __restrict__ pre, const scalar_t* __restrict__ b_hh,
                               const scalar_t* __restrict__ c, scalar_t* __restrict__ h_new,
                               scalar_t* __restrict__ c_new, scalar_t* __restrict__ act, int64_t B,
                               int64_t H) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= B * H) return;
  const int64_t b = idx / H, j = idx % H;
  const scalar_t* p = pre + b * 4 * H + j;
  // Every batch row reads the same broadcast bias: route it through the read-only cache.
  auto out = lstm_cell::forward_element<scalar_t>(p[0] + __ldg(b_hh + j), p[H] + __ldg(b_hh + H + j),
                                                  p[2 * H] + __ldg(b_hh + 2 * H + j),
                                                  p[3 * H] + __ldg(b_hh + 3 * H + j), c[idx]);
  scalar_t* a = act + b * 4 * H + j;
  a[0] = out.act.i;
  a[H] = out.act.f;
  a[2 * H] = out.act.g;
  a[3 * H] = out.act.o;
  c_new[idx] = out.c_new;
  h_new[idx] = out.h_new;
}

template <typename scalar_t>
__global__ void backward_kernel(const scalar_t* __restrict__ grad_h, const scalar_t* __restrict__ grad_c,
                                const scalar_t* __restrict__ c, const scalar_t* __restrict__ c_new,
                                const scalar_t* __restrict__ act, scalar_t* __restrict__ grad_gates,
                                scalar_t* __restrict__ grad_c_prev, int64_t B, int64_t H) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= B * H) return;
  const int64_t b = idx / H, j = idx % H;
  const scalar_t* a = act + b * 4 * H + j;
  lstm_cell::Gates<scalar_t> g{a[0], a[H], a[2 * H], a[3 * H]};
  auto out = lstm_cell::backward_element<scalar_t>(grad_h[idx], grad_c[idx], c[idx], c_new[idx], g);
  scalar_t* gg = grad_gates + b * 4 * H + j;
  gg[0] = out.grad.i;
  gg[H] = out.grad.f;
  gg[2 * H] = out.grad.g;
  gg[3 * H] = out.grad.o;
  grad_c_prev[idx] = out.grad_c;
}

void check(const Tensor& gates, const Tensor& c) {
  TORCH_CHECK(gates.is_cuda() && c.is_cuda(), "lstm_cell CUDA kernel: tensors must be on a CUDA device");
  TORCH_CHECK(c.dim() == 2 && gates.dim() == 2 && gates.size(0) == c.size(0) &&
                  gates.size(1) == 4 * c.size(1),
              "lstm_cell: gates must be (B, 4H) for c (B, H); got ", gates.sizes(), " and ", c.sizes());
}

unsigned int blocks_for(int64_t n) {
  return static_cast<unsigned int>((n + kThreads - 1) / kThreads);
}

std::tuple<Tensor, Tensor, Tensor> pointwise_forward_cuda(const Tensor& gates, const Tensor& b_hh,
                                                          const Tensor& c) {
  check(gates, c);
  TORCH_CHECK(b_hh.numel() == gates.size(1), "lstm_cell: b_hh must have 4H elements");
  const c10::cuda::CUDAGuard guard(c.device());
  const Tensor pre = gates.contiguous(), bias = b_hh.contiguous(), cc = c.contiguous();
  const int64_t B = c.size(0), H = c.size(1);
  Tensor h_new = at::empty({B, H}, c.options()), c_new = at::empty({B, H}, c.options());
  Tensor act = at::empty({B, 4 * H}, c.options());
  if (B * H == 0) return {h_new, c_new, act};
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(c.scalar_type(), "lstm_cell_pointwise_cuda", [&] {
    forward_kernel<scalar_t><<<blocks_for(B * H), kThreads, 0, stream>>>(
        pre.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(), cc.data_ptr<scalar_t>(),
        h_new.data_ptr<scalar_t>(), c_new.data_ptr<scalar_t>(), act.data_ptr<scalar_t>(), B, H);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {h_new, c_new, act};
}

// (grad_gates, grad_c, grad_bias): the bias gradient is grad_gates summed over the batch.
std::tuple<Tensor, Tensor, Tensor> pointwise_backward_cuda(const Tensor& grad_h, const Tensor& grad_c,
                                                   const Tensor& c, const Tensor& c_new,
                                                   const Tensor& gates) {
  check(gates, c);
  const c10::cuda::CUDAGuard guard(c.device());
  // Autograd may hand in expanded (stride 0) gradients, e.g. from out.sum().backward().
  const Tensor gh = grad_h.contiguous(), gc = grad_c.contiguous(), cc = c.contiguous();
  const Tensor cn = c_new.contiguous(), act = gates.contiguous();
  const int64_t B = c.size(0), H = c.size(1);
  Tensor grad_gates = at::empty({B, 4 * H}, c.options()), grad_c_prev = at::empty({B, H}, c.options());
  if (B * H != 0) {
    auto stream = c10::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES(c.scalar_type(), "lstm_cell_pointwise_backward_cuda", [&] {
      backward_kernel<scalar_t><<<blocks_for(B * H), kThreads, 0, stream>>>(
          gh.data_ptr<scalar_t>(), gc.data_ptr<scalar_t>(), cc.data_ptr<scalar_t>(), cn.data_ptr<scalar_t>(),
          act.data_ptr<scalar_t>(), grad_gates.data_ptr<scalar_t>(), grad_c_prev.data_ptr<scalar_t>(), B, H);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  }
  return {grad_gates, grad_c_prev, grad_gates.sum(0)};
}

}  // namespace

TORCH_LIBRARY_IMPL(lstm_cell, CUDA, m) {
  m.impl("lstm_cell_pointwise", &pointwise_forward_cuda);
  m.impl("lstm_cell_pointwise_backward", &pointwise_backward_cuda);
}
