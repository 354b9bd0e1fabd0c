// hoconv2d on the CPU: op schemas and fused forward / backward loops.
//
// Work is split over (batch, row) with at::parallel_for. In a row, columns [p, W-p) go through loops
// over contiguous W that keep their sums in vector registers (kernel rows that would read outside
// the image are clipped with the header's taps_* functions); the 2p columns at the left and right
// edges go through the per-element functions of hoconv2d.h, the same ones the CUDA kernels use.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "benchctl_output.h"
#include "hoconv2d.h"
#include "hoconv2d_checks.h"

namespace hoconv2d {
namespace {

// Calls fn(w) for the columns where some tap reads outside the image in W: w < p or w >= W-p.
template <typename Fn>
void for_each_edge_column(const Shape& s, Fn&& fn) {
  const int64_t left = std::min(s.pad(), s.width);
  for (int64_t w = 0; w < left; ++w) fn(w);
  for (int64_t w = std::max(left, s.width - s.pad()); w < s.width; ++w) fn(w);
}

// Rows per task so a task is worth a thread hand-off (~32k multiply-adds).
int64_t grain(const Shape& s) {
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, s.width * s.channels * s.taps()));
}

template <int V>
using Width = std::integral_constant<int, V>;

// Calls fn(Width<V>{}, w) to cover columns [p, W-p) in chunks of V contiguous elements: one
// one-register chunk up to the first multiple of a register's width (so that, in rows that start
// on a cache line, the later chunks load and store whole cache lines), then wide chunks (four
// AVX-512 registers: enough independent sums to hide the FMA latency), then one-register chunks,
// then one that overlaps the previous chunk (recomputing a few values) instead of a scalar tail.
// Narrower than one register: one element at a time.
template <typename T, typename Fn>
void for_each_chunk(const Shape& s, Fn&& fn) {
  constexpr int wide = 256 / sizeof(T), narrow = 64 / sizeof(T);
  const int64_t begin = s.pad(), end = s.width - s.pad();
  if (end - begin < narrow) {
    for (int64_t w = begin; w < end; ++w) fn(Width<1>{}, w);
    return;
  }
  int64_t w = begin;
  if (w % narrow != 0) {
    fn(Width<narrow>{}, w);
    w = std::min(end, (w / narrow + 1) * narrow);
  }
  for (; w + wide <= end; w += wide) fn(Width<wide>{}, w);
  for (; w + narrow <= end; w += narrow) fn(Width<narrow>{}, w);
  if (w < end) fn(Width<narrow>{}, end - narrow);
}

// Where tap (i, j) reads its two factors, relative to the first tap: a + i*a_i + j*a_j and
// b + i*b_i + j*b_j. Plain strides rather than a table of offsets: with a table GCC vectorises the
// tap loop with gathers instead of the contiguous loop over W.
struct Steps {
  int64_t a_i, a_j, b_i, b_j;
};

// Forward: Wt[t, h, w] (one plane per tap) times X[h+i-p, w+j-p].
Steps forward_steps(const Shape& s) { return {s.k * s.plane(), s.plane(), s.width, 1}; }

// Grad x: Wt[t, y-i+p, x-j+p] times G[y-i+p, x-j+p].
Steps grad_x_steps(const Shape& s) { return {s.k * s.plane() - s.width, s.plane() - 1, -s.width, -1}; }

// out[c][v] = sum over kernel rows i < rows, columns j < k of a[i,j][v] * b[i,j][c*plane + v], for G
// channels c and V columns v. V and G are compile-time constants, so the G*V sums stay in vector
// registers across all taps, and each weight vector is loaded once for all G channels.
template <int V, int G, typename T>
inline void tap_sums(const T* a, const T* b, const Steps& st, int64_t rows, int64_t k, int64_t plane,
                     T* __restrict__ out) {
  T acc[G][V] = {};
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      const T* __restrict__ av = a + i * st.a_i + j * st.a_j;
      const T* __restrict__ bv = b + i * st.b_i + j * st.b_j;
      for (int c = 0; c < G; ++c) {
        for (int v = 0; v < V; ++v) acc[c][v] += av[v] * bv[c * plane + v];
      }
    }
  }
  for (int c = 0; c < G; ++c) {
    for (int v = 0; v < V; ++v) out[c * plane + v] = acc[c][v];
  }
}

// tap_sums over all channels, three at a time (12 sums + 4 weights of the 32 vector registers).
template <int V, typename T>
inline void tap_sums_all(const T* a, const T* b, const Steps& st, int64_t rows, const Shape& s, T* out) {
  const int64_t plane = s.plane();
  int64_t c = 0;
  for (; c + 3 <= s.channels; c += 3) {
    tap_sums<V, 3>(a, b + c * plane, st, rows, s.k, plane, out + c * plane);
  }
  if (s.channels - c == 2) tap_sums<V, 2>(a, b + c * plane, st, rows, s.k, plane, out + c * plane);
  if (s.channels - c == 1) tap_sums<V, 1>(a, b + c * plane, st, rows, s.k, plane, out + c * plane);
}

// For every tap t = (i, j) with kernel row i in `rows`: out[t*plane + v] (= or +=) the sum over G
// channels c of g[c*plane + v] * x[c*plane + (i-p)*W + (j-p) + v]. The G*V values of g stay in
// registers for all taps; `out` is grad_wt[0, h, w].
template <int V, int G, bool Add, typename T>
inline void weight_grads(const T* g, const T* x, const Shape& s, TapRange rows, T* out) {
  const int64_t plane = s.plane(), p = s.pad();
  T gv[G][V];
  for (int c = 0; c < G; ++c) {
    for (int v = 0; v < V; ++v) gv[c][v] = g[c * plane + v];
  }
  for (int64_t i = rows.begin; i < rows.end; ++i) {
    for (int64_t j = 0; j < s.k; ++j) {
      const T* __restrict__ xv = x + (i - p) * s.width + (j - p);
      T* __restrict__ ov = out + (i * s.k + j) * plane;
      T acc[V];
      for (int v = 0; v < V; ++v) acc[v] = Add ? ov[v] : T(0);
      for (int c = 0; c < G; ++c) {
        for (int v = 0; v < V; ++v) acc[v] += gv[c][v] * xv[c * plane + v];
      }
      if (Add) {
        for (int v = 0; v < V; ++v) ov[v] = acc[v];
      } else {
        benchctl::store_streaming(ov, acc, V);  // grad_wt: the largest output, not read again
      }
    }
  }
}

// weight_grads over all channels (at least one), three at a time; the first group writes, later
// ones add.
template <int V, typename T>
inline void weight_grads_all(const T* g, const T* x, const Shape& s, TapRange rows, T* out) {
  const int64_t plane = s.plane();
  const int64_t first = std::min<int64_t>(3, s.channels);
  if (first == 3) weight_grads<V, 3, false>(g, x, s, rows, out);
  if (first == 2) weight_grads<V, 2, false>(g, x, s, rows, out);
  if (first == 1) weight_grads<V, 1, false>(g, x, s, rows, out);
  int64_t c = first;
  for (; c + 3 <= s.channels; c += 3) {
    weight_grads<V, 3, true>(g + c * plane, x + c * plane, s, rows, out);
  }
  if (s.channels - c == 2) weight_grads<V, 2, true>(g + c * plane, x + c * plane, s, rows, out);
  if (s.channels - c == 1) weight_grads<V, 1, true>(g + c * plane, x + c * plane, s, rows, out);
}

// Asks for `count` rows, `stride` apart, of `width` elements each, ahead of their use: the k*k
// weight planes are k*k separate streams, more than the hardware prefetcher follows.
template <typename T>
inline void prefetch_rows(const T* first, int64_t count, int64_t stride, int64_t width) {
  constexpr int64_t line = 64 / sizeof(T);
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t w = 0; w < width; w += line) __builtin_prefetch(first + r * stride + w, 0, 2);
  }
}

// Pointers to one batch element; the forward pass uses x, wt and out (= gx).
template <typename T>
struct Batch {
  const T* g;   // grad_out[b]  (C planes)
  const T* x;   // x[b]         (C planes)
  const T* wt;  // weights[b]   (k*k planes)
  T* gx;        // out[b] or grad_x[b]  (C planes)
  T* gwt;       // grad_wt[b]   (k*k planes)
};

// Row h of every channel of out.
template <typename T>
void forward_row(const Batch<T>& a, const Shape& s, int64_t h) {
  const int64_t plane = s.plane(), p = s.pad(), row = h * s.width;
  for (int64_t c = 0; c < s.channels; ++c) {
    T* out = a.gx + c * plane + row;
    for_each_edge_column(s, [&](int64_t w) { out[w] = forward_at(a.x + c * plane, a.wt, s, h, w); });
  }
  if (h + 1 < s.height) prefetch_rows(a.wt + row + s.width, s.taps(), plane, s.width);
  const TapRange i = taps_reading_inside(s, h, s.height);
  const T* wt = a.wt + i.begin * s.k * plane + row;  // Wt[i0*k, h, 0]
  const int64_t x_row = (h + i.begin - p) * s.width;  // X[h+i0-p, 0]
  const Steps steps = forward_steps(s);
  for_each_chunk<T>(s, [&](auto width, int64_t w) {
    tap_sums_all<width()>(wt + w, a.x + x_row + (w - p), steps, i.end - i.begin, s, a.gx + row + w);
  });
}

// Row y+1 of grad_x reads row y+1-i+p of the weight planes i*k .. i*k+k-1.
template <typename T>
void prefetch_next_grad_x_row(const Batch<T>& a, const Shape& s, int64_t y) {
  if (y + 1 >= s.height) return;
  const TapRange next = taps_reaching(s, y + 1, s.height);
  for (int64_t i = next.begin; i < next.end; ++i) {
    prefetch_rows(a.wt + i * s.k * s.plane() + (y + 1 - i + s.pad()) * s.width, s.k, s.plane(), s.width);
  }
}

// Row y of grad_x, gathered: tap (i, j) of pixel (y-i+p, x-j+p) is the one that read x[y, x].
template <typename T>
void grad_x_row(const Batch<T>& a, const Shape& s, int64_t y) {
  const int64_t plane = s.plane(), p = s.pad(), row = y * s.width;
  for (int64_t c = 0; c < s.channels; ++c) {
    T* out = a.gx + c * plane + row;
    for_each_edge_column(s, [&](int64_t x) { out[x] = grad_x_at(a.g + c * plane, a.wt, s, y, x); });
  }
  const TapRange i = taps_reaching(s, y, s.height);
  prefetch_next_grad_x_row(a, s, y);
  const int64_t from = (y - i.begin + p) * s.width + p;  // pixel (y-i0+p, x+p) for x = 0
  const Steps steps = grad_x_steps(s);
  for_each_chunk<T>(s, [&](auto width, int64_t x) {
    tap_sums_all<width()>(a.wt + i.begin * s.k * plane + from + x, a.g + from + x, steps,
                          i.end - i.begin, s, a.gx + row + x);
  });
}

// Row h of every weight plane of grad_wt: the channel sum of grad_out times the shifted input,
// zero for kernel rows that would read above or below the image.
template <typename T>
void grad_wt_row(const Batch<T>& a, const Shape& s, int64_t h) {
  const int64_t plane = s.plane(), p = s.pad(), row = h * s.width;
  // Without channels every gradient is zero: no kernel row counts as inside.
  const TapRange inside = s.channels > 0 ? taps_reading_inside(s, h, s.height) : TapRange{0, 0};
  for (int64_t i = 0; i < s.k; ++i) {
    for (int64_t j = 0; j < s.k; ++j) {
      T* out = a.gwt + (i * s.k + j) * plane + row;
      for_each_edge_column(s, [&](int64_t w) { out[w] = grad_wt_at(a.g, a.x, s, i, j, h, w); });
      if (i < inside.begin || i >= inside.end) std::fill(out + p, out + std::max(p, s.width - p), T(0));
    }
  }
  for_each_chunk<T>(s, [&](auto width, int64_t w) {
    weight_grads_all<width()>(a.g + row + w, a.x + row + w, s, inside, a.gwt + row + w);
  });
}

// The same pointers moved to batch element b.
template <typename T>
Batch<T> at_batch(const Batch<T>& base, const Shape& s, int64_t b) {
  const int64_t xs = s.channels * s.plane(), ws = s.taps() * s.plane();
  return {base.g ? base.g + b * xs : nullptr, base.x + b * xs, base.wt + b * ws, base.gx + b * xs,
          base.gwt ? base.gwt + b * ws : nullptr};
}

template <typename T>
void forward_kernel(const at::Tensor& x, const at::Tensor& wt, at::Tensor& out, const Shape& s) {
  const Batch<T> base{nullptr, x.const_data_ptr<T>(), wt.const_data_ptr<T>(), out.mutable_data_ptr<T>(),
                      nullptr};
  at::parallel_for(0, s.batch * s.height, grain(s), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) forward_row(at_batch(base, s, r / s.height), s, r % s.height);
  });
}

// Rows of one batch element that one task handles together in the backward pass.
constexpr int64_t kBackwardRows = 8;

// One pass over (batch, row): a task takes a few rows at a time, writes their grad_x rows and then
// their grad_wt rows, reading the rows of grad_out and x around them while those are in cache.
// Alternating the two per row would interleave k*k weight-plane reads with k*k gradient-plane
// writes, twice the streams for the caches to keep apart.
template <typename T>
void backward_kernel(const at::Tensor& g, const at::Tensor& x, const at::Tensor& wt, at::Tensor& gx,
                     at::Tensor& gwt, const Shape& s) {
  const Batch<T> base{g.const_data_ptr<T>(), x.const_data_ptr<T>(), wt.const_data_ptr<T>(),
                      gx.mutable_data_ptr<T>(), gwt.mutable_data_ptr<T>()};
  at::parallel_for(0, s.batch * s.height, grain(s), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end;) {
      const int64_t b = r / s.height, h0 = r % s.height;
      const int64_t h1 = std::min({h0 + kBackwardRows, s.height, h0 + (end - r)});
      const Batch<T> a = at_batch(base, s, b);
      for (int64_t h = h0; h < h1; ++h) grad_x_row(a, s, h);
      for (int64_t h = h0; h < h1; ++h) grad_wt_row(a, s, h);
      r += h1 - h0;
    }
    benchctl::finish_streaming();
  });
}

}  // namespace

at::Tensor filter_cpu(const at::Tensor& x_in, const at::Tensor& weights_in) {
  const Shape s = check_inputs(x_in, weights_in);
  const at::Tensor x = x_in.contiguous(), wt = weights_in.contiguous();
  at::Tensor out = benchctl::empty_output(x);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "hoconv2d_filter_cpu",
                             [&] { forward_kernel<scalar_t>(x, wt, out, s); });
  return out;
}

std::tuple<at::Tensor, at::Tensor> filter_backward_cpu(const at::Tensor& grad_out, const at::Tensor& x_in,
                                                       const at::Tensor& weights_in) {
  const Shape s = check_backward_inputs(grad_out, x_in, weights_in);
  const at::Tensor g = grad_out.contiguous(), x = x_in.contiguous(), wt = weights_in.contiguous();
  at::Tensor gx = benchctl::empty_output(x);
  at::Tensor gwt = benchctl::empty_output(wt);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "hoconv2d_filter_backward_cpu",
                             [&] { backward_kernel<scalar_t>(g, x, wt, gx, gwt, s); });
  return {gx, gwt};
}

}  // namespace hoconv2d

// The schemas live in the CPU library, which is always loaded first; the CUDA library only adds kernels.
TORCH_LIBRARY_FRAGMENT(benchctl, m) {
  m.def("hoconv2d_filter(Tensor x, Tensor weights) -> Tensor");
  m.def("hoconv2d_filter_backward(Tensor grad_out, Tensor x, Tensor weights) -> (Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(benchctl, CPU, m) {
  m.impl("hoconv2d_filter", &hoconv2d::filter_cpu);
  m.impl("hoconv2d_filter_backward", &hoconv2d::filter_backward_cpu);
}
