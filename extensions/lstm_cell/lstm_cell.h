// Pointwise math of one LSTM cell step for one (batch row b, hidden unit j) element, shared by the
// CPU (lstm_cell_cpu.cpp) and CUDA (lstm_cell_cuda.cu) kernels.
//
// The element functions are templates over the value type T and a math policy M (sigmoid, tanh) so
// the CPU kernel can run them on at::vec::Vectorized<T> lanes (SIMD exp/tanh) and the CUDA kernel on
// plain float/double registers, with the gate algebra written once.
//
// Gate order is i, f, g, o (as torch.nn.LSTMCell): i, f, o use sigmoid, g uses tanh;
// c' = f * c + i * g and h' = o * tanh(c').
#pragma once

#include <cmath>

#include "benchctl_hd.h"

namespace lstm_cell {

// Scalar math for float and double. Overloads (not std::) so the same call compiles in device code.
struct ScalarMath {
  BENCHCTL_HD static float tanh(float x) { return ::tanhf(x); }
  BENCHCTL_HD static double tanh(double x) { return ::tanh(x); }
  // 1 / (1 + exp(-x)) saturates correctly at both ends: exp overflows to inf, giving 0.
  BENCHCTL_HD static float sigmoid(float x) { return 1.0f / (1.0f + ::expf(-x)); }
  BENCHCTL_HD static double sigmoid(double x) { return 1.0 / (1.0 + ::exp(-x)); }
};

// The four activated gates of one element; the forward saves them for the backward.
template <typename T>
struct Gates {
  T i, f, g, o;
};

template <typename T>
struct ForwardOut {
  Gates<T> act;
  T c_new;
  T h_new;
};

template <typename T>
struct BackwardOut {
  Gates<T> grad;  // gradient w.r.t. the gate pre-activations (shared by both matmuls and biases)
  T grad_c;       // gradient w.r.t. the previous cell state c
};

// Forward of one element from the gate pre-activations (matmuls and both biases already summed).
template <typename T, typename M = ScalarMath>
BENCHCTL_HD inline ForwardOut<T> forward_element(T pre_i, T pre_f, T pre_g, T pre_o, T c) {
  ForwardOut<T> out;
  out.act.i = M::sigmoid(pre_i);
  out.act.f = M::sigmoid(pre_f);
  out.act.g = M::tanh(pre_g);
  out.act.o = M::sigmoid(pre_o);
  out.c_new = out.act.f * c + out.act.i * out.act.g;
  out.h_new = out.act.o * M::tanh(out.c_new);
  return out;
}

// Backward of one element. tanh(c') is recomputed rather than saved: one transcendental per element
// is cheaper than another (B, H) buffer written in the forward and read back here.
// Derivatives in terms of the activations: sigmoid' = s (1 - s), tanh' = 1 - t^2.
template <typename T, typename M = ScalarMath>
BENCHCTL_HD inline BackwardOut<T> backward_element(T grad_h, T grad_c_new, T c, T c_new, Gates<T> a) {
  const T one(1);
  const T tc = M::tanh(c_new);
  // c' reaches the loss directly and through h' = o tanh(c').
  const T dc = grad_c_new + grad_h * a.o * (one - tc * tc);
  BackwardOut<T> out;
  out.grad.i = dc * a.g * a.i * (one - a.i);
  out.grad.f = dc * c * a.f * (one - a.f);
  out.grad.g = dc * a.i * (one - a.g * a.g);
  out.grad.o = grad_h * tc * a.o * (one - a.o);
  out.grad_c = dc * a.f;
  return out;
}

}  // namespace lstm_cell
