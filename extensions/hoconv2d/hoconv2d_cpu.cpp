// hoconv2d on the CPU: op schemas and fused forward / backward loops.
//
// Work is split into tasks of (batch element, block of rows) with at::parallel_for: a whole image per
// task when there are enough images for every thread, otherwise blocks of rows. A task copies the rows
// it reads into small zero-padded scratch rows (a few KB, in L1/L2), so the vector loops over W run
// the same for every column and keep their sums in registers. The columns past the last whole vector
// (W mod 16 for float32) go through the per-element functions of hoconv2d.h, the same ones the CUDA
// kernels use.
//
// The weights are by far the largest tensor (k*k planes per image) and are read once, row by row:
// k*k rows at a time, far apart, more streams than the hardware prefetcher follows, so the loops ask
// for the weight rows two image rows ahead themselves.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <vector>

#include "benchctl_output.h"
#include "hoconv2d.h"
#include "hoconv2d_checks.h"

namespace hoconv2d {
namespace {

template <int V>
using Width = std::integral_constant<int, V>;

// Vector chunks over W: wide ones of four AVX-512 registers (enough independent sums to hide the FMA
// latency), then one-register ones.
template <typename T>
constexpr int kWide = 256 / sizeof(T);
template <typename T>
constexpr int kNarrow = 64 / sizeof(T);

// Where the vector loops stop: the first column they leave to the per-element functions.
template <typename T>
int64_t vector_end(const Shape& s) {
  return s.width - s.width % kNarrow<T>;
}

// Calls fn(Width<V>{}, w) over columns [0, vector_end) in chunks of V.
template <typename T, typename Fn>
void for_each_chunk(const Shape& s, Fn&& fn) {
  const int64_t end = vector_end<T>(s);
  int64_t w = 0;
  for (; w + kWide<T> <= end; w += kWide<T>) fn(Width<kWide<T>>{}, w);
  for (; w + kNarrow<T> <= end; w += kNarrow<T>) fn(Width<kNarrow<T>>{}, w);
}

// One 64-byte vector of T (a GCC/Clang vector type). The chunk loops keep their sums in these: sums
// in plain arrays end up on the stack as soon as a loop also prefetches, or passes the array on.
template <typename T>
struct VecOf {
  typedef T type __attribute__((vector_size(64), aligned(sizeof(T))));  // (an alias template drops it)
};
template <typename T>
using Vec = typename VecOf<T>::type;
static_assert(sizeof(Vec<float>) == 64 && sizeof(Vec<double>) == 64);

// The V / kNarrow<T> vectors of a chunk.
template <int V, typename T>
constexpr int kVectors = V / kNarrow<T>;

// Fully unrolls the loop over the G channels or N vectors that follows, early enough that the sums
// indexed by it become registers; left as loops they end up on the stack (one load and one store per
// multiply-add) as soon as the loop around them also prefetches.
#define HOCONV_UNROLL _Pragma("GCC unroll 16")

template <typename T>
inline Vec<T> load(const T* at) {
  return *reinterpret_cast<const Vec<T>*>(at);
}

template <typename T>
inline void store(T* at, Vec<T> value) {
  *reinterpret_cast<Vec<T>*>(at) = value;
}

// to[i] = from[i] for i < n: whole vectors, then the rest one by one. Inline, for the short rows the
// scratch copies take (a few hundred bytes): a call to memmove costs more than the copy itself there.
template <typename T>
inline void copy_row(const T* from, int64_t n, T* to) {
  int64_t i = 0;
  for (; i + kNarrow<T> <= n; i += kNarrow<T>) store(to + i, load(from + i));
  for (; i < n; ++i) to[i] = from[i];
}

// Stores N vectors as V = N * kNarrow<T> consecutive values with store_streaming.
template <int N, typename T>
inline void store_streaming(T* out, const Vec<T> (&sums)[N]) {
  T values[N * kNarrow<T>];
  HOCONV_UNROLL
  for (int n = 0; n < N; ++n) store(values + n * kNarrow<T>, sums[n]);
  benchctl::store_streaming(out, values, N * kNarrow<T>);
}

// How far ahead the loops ask for weight rows, in image rows.
constexpr int64_t kPrefetchRows = 2;

// Asks for the V elements at `at` ahead of their use, one request per cache line.
template <int V, typename T>
inline void prefetch(const T* at) {
  for (int q = 0; q < V; q += kNarrow<T>) __builtin_prefetch(at + q, 0, 2);
}

// Calls fn(c, G) for channel groups of three (G = 3, 2 or 1 channels starting at c): a group's sums
// and inputs fit the 32 vector registers together.
template <typename Fn>
void for_each_channel_group(int64_t channels, Fn&& fn) {
  int64_t c = 0;
  for (; c + 3 <= channels; c += 3) fn(c, Width<3>{});
  if (channels - c == 2) fn(c, Width<2>{});
  if (channels - c == 1) fn(c, Width<1>{});
}

// A task: image `batch`, output rows [begin, end).
struct Task {
  int64_t batch, begin, end;
};

// Rows per task: whole images when there are at least two per thread, else blocks of at least 16 rows.
int64_t rows_per_task(const Shape& s) {
  const int64_t threads = at::get_num_threads(), batch = std::max<int64_t>(1, s.batch);
  const int64_t blocks = std::clamp<int64_t>((2 * threads + batch - 1) / batch, 1,
                                             std::max<int64_t>(1, s.height / 16));
  return (s.height + blocks - 1) / blocks;
}

// Calls fn(task) for every task, in parallel.
template <typename Fn>
void parallel_tasks(const Shape& s, Fn&& fn) {
  const int64_t rows = std::max<int64_t>(1, rows_per_task(s)), blocks = (s.height + rows - 1) / rows;
  at::parallel_for(0, s.batch * blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      const int64_t h0 = (t % blocks) * rows;
      fn(Task{t / blocks, h0, std::min(s.height, h0 + rows)});
    }
    benchctl::finish_streaming();
  });
}

// Slot of row y in a ring of k rows; y < 0 for the padding rows above the image.
inline int64_t ring_slot(int64_t y, int64_t k) { return (y % k + k) % k; }

// The k input rows around an output row, zero-padded: rows y of X[b] (all zeros outside the image), C
// channels each, p zeros either side. Row y lives in two slots, y mod k and y mod k + k, so the rows
// h-p .. h+p of any output row h are k consecutive slots.
template <typename T>
class InputWindow {
 public:
  InputWindow(const T* x_batch, const Shape& s)
      : x_(x_batch), s_(s), stride_(s.width + 2 * s.pad()), rows_(s.channels * 2 * s.k * stride_, T(0)) {}

  int64_t stride() const { return stride_; }                   // between rows
  int64_t channel_stride() const { return 2 * s_.k * stride_; }  // between channels

  // Rows h-p .. h+p, channel 0: element (i, w) is X[h+i-p, w-p]. Call with increasing h.
  const T* around(int64_t h) {
    if (next_ == kNone) next_ = h - s_.pad();
    for (; next_ <= h + s_.pad(); ++next_) load(next_);
    return rows_.data() + slot(h - s_.pad()) * stride_;
  }

 private:
  static constexpr int64_t kNone = INT64_MIN;

  int64_t slot(int64_t y) const { return ring_slot(y, s_.k); }

  void load(int64_t y) {
    for (int64_t copy : {slot(y), slot(y) + s_.k}) {
      T* to = rows_.data() + copy * stride_ + s_.pad();
      for (int64_t c = 0; c < s_.channels; ++c, to += channel_stride()) {
        if (y >= 0 && y < s_.height) {
          const T* from = x_ + c * s_.plane() + y * s_.width;
          copy_row(from, s_.width, to);
        } else {
          std::fill(to, to + s_.width, T(0));
        }
      }
    }
  }

  const T* x_;
  Shape s_;
  int64_t stride_, next_ = kNone;
  std::vector<T> rows_;
};

// ---- forward ----

// out[c][v] = sum over kernel rows i in `rows` and columns j < k of Wt[i*k+j][v] * X(i, j + v) for G
// channels c and V columns v, X(i, w) being element w of window row i. The G*V sums stay in registers
// across all taps and each weight vector is loaded once for all G channels.
template <int V, int G, typename T>
inline void forward_chunk(const T* wt, const T* window, int64_t window_stride, int64_t window_cs,
                          const Shape& s, TapRange rows, T* out) {
  constexpr int N = kVectors<V, T>, L = kNarrow<T>;
  const int64_t plane = s.plane(), ahead = kPrefetchRows * s.width;
  Vec<T> acc[G][N] = {};
  for (int64_t i = rows.begin; i < rows.end; ++i) {
    for (int64_t j = 0; j < s.k; ++j) {
      const T* wv = wt + (i * s.k + j) * plane;
      const T* xv = window + i * window_stride + j;
      prefetch<V>(wv + ahead);
      HOCONV_UNROLL
      for (int n = 0; n < N; ++n) {
        const Vec<T> w = load(wv + n * L);
        HOCONV_UNROLL
        for (int c = 0; c < G; ++c) acc[c][n] += w * load(xv + c * window_cs + n * L);
      }
    }
  }
  HOCONV_UNROLL
  for (int c = 0; c < G; ++c) store_streaming(out + c * plane, acc[c]);
}

// Output rows [task.begin, task.end) of image task.batch, every channel.
template <typename T>
void forward_task(const T* x, const T* wt, T* out, const Shape& s, const Task& task) {
  const int64_t plane = s.plane();
  x += task.batch * s.channels * plane;
  wt += task.batch * s.taps() * plane;
  out += task.batch * s.channels * plane;
  InputWindow<T> window(x, s);
  for (int64_t h = task.begin; h < task.end; ++h) {
    const T* around = window.around(h);
    const TapRange rows = taps_reading_inside(s, h, s.height);
    for_each_channel_group(s.channels, [&](int64_t c, auto group) {
      for_each_chunk<T>(s, [&](auto width, int64_t w) {
        forward_chunk<width(), group()>(wt + h * s.width + w, around + c * window.channel_stride() + w,
                                        window.stride(), window.channel_stride(), s, rows,
                                        out + c * plane + h * s.width + w);
      });
    });
    for (int64_t c = 0; c < s.channels; ++c) {
      for (int64_t w = vector_end<T>(s); w < s.width; ++w) {
        out[c * plane + h * s.width + w] = forward_at(x + c * plane, wt, s, h, w);
      }
    }
  }
}

// ---- backward ----
//
// One pass over the source rows h of grad_out and the weights. Row h gives row h of grad_wt, and adds
// its share to rows h-p .. h+p of grad_x: tap (i, j) of pixel (h, w) read x[h+i-p, w+j-p], so that
// pixel gets Wt[i*k+j, h, w] * G[h, w] from it. A task owns grad_x rows [begin, end), sums them in a
// ring of k rows and writes each out once no later source row reaches it. It also reads the p source
// rows on either side of its block, for their shares only, so no two tasks write the same row.

// Calls fn(Width<K>{}) where k is one of the kernel sizes the backward's grad_x unrolls (3, 5, 7);
// false for any other k.
template <typename Fn>
bool with_unrolled_k(int64_t k, Fn&& fn) {
  switch (k) {
    case 3: fn(Width<3>{}); return true;
    case 5: fn(Width<5>{}); return true;
    case 7: fn(Width<7>{}); return true;
    default: return false;
  }
}

inline bool unrolled(const Shape& s) { return with_unrolled_k(s.k, [](auto) {}); }

// The padded scratch rows of the unrolled kernel sizes are this many elements apart when a row fits:
// a stride known at compile time puts all k*k weight rows and the G grad rows at fixed offsets from
// two pointers. With a runtime stride GCC kept the 25 row pointers of k = 5 on the stack and reloaded
// one per vector load (grad_x 18% slower in cache, 2-core AMD EPYC).
constexpr int64_t kFixedStride = 240;
using FixedStride = std::integral_constant<int64_t, kFixedStride>;

inline bool fixed_stride(const Shape& s) { return unrolled(s) && s.width + 2 * s.pad() <= kFixedStride; }

// Scratch rows of one backward task.
template <typename T>
struct BackwardRows {
  BackwardRows(const Shape& s, int64_t vector_width)
      : stride(fixed_stride(s) ? kFixedStride : s.width + 2 * s.pad()), sums_stride(vector_width),
        weights(s.taps() * stride, T(0)), grad(s.channels * stride, T(0)),
        sums(s.k * s.channels * sums_stride, T(0)) {}

  int64_t stride;       // between padded rows
  int64_t sums_stride;  // between the channels of a ring row
  std::vector<T> weights;  // Wt[t, h, :] for every tap t, p zeros either side
  std::vector<T> grad;     // G[c, h, :] for every channel c, padded
  std::vector<T> sums;     // the ring: grad_x rows y (slot y mod k), channels, vector columns

  T* sums_row(const Shape& s, int64_t y) { return sums.data() + ring_slot(y, s.k) * s.channels * sums_stride; }
};

// ring[c][v] += sum over j < k of Wt[i*k+j, h, w+v-j+p] * G[c, h, w+v-j+p] for one kernel row i:
// `weights` and `grad` point at padded column w+2p (that is, image column w+p) of tap i*k and of G.
template <int V, int G, typename T>
inline void grad_x_chunk(const T* weights, const T* grad, int64_t stride, int64_t k, T* ring, int64_t ring_cs) {
  constexpr int N = kVectors<V, T>, L = kNarrow<T>;
  Vec<T> acc[G][N] = {};
  for (int64_t j = 0; j < k; ++j) {
    const T* wv = weights + j * (stride - 1);
    const T* gv = grad - j;
    HOCONV_UNROLL
    for (int n = 0; n < N; ++n) {
      const Vec<T> w = load(wv + n * L);
      HOCONV_UNROLL
      for (int c = 0; c < G; ++c) acc[c][n] += w * load(gv + c * stride + n * L);
    }
  }
  HOCONV_UNROLL
  for (int c = 0; c < G; ++c) {
    HOCONV_UNROLL
    for (int n = 0; n < N; ++n) {
      T* at = ring + c * ring_cs + n * L;
      store(at, load(at) + acc[c][n]);
    }
  }
}

// For every tap t = (i, j): out[t*plane + v] (= or +=) the sum over G channels c of
// g[c*g_cs + v] * window[c*window_cs + i*window_stride + j + v]. The G*V values of g stay in registers
// for all taps; `out` is grad_wt[0, h, w]. The first channel group also asks for the same columns of
// every weight plane at `ahead` (a later source row): see write_grad_wt_chunk.
template <int V, int G, bool Add, typename T>
inline void grad_wt_chunk(const T* g, int64_t g_cs, const T* window, int64_t window_stride,
                          int64_t window_cs, const Shape& s, T* out, const T* ahead) {
  constexpr int N = kVectors<V, T>, L = kNarrow<T>;
  Vec<T> gv[G][N];
  HOCONV_UNROLL
  for (int c = 0; c < G; ++c) {
    HOCONV_UNROLL
    for (int n = 0; n < N; ++n) gv[c][n] = load(g + c * g_cs + n * L);
  }
  for (int64_t i = 0; i < s.k; ++i) {
    for (int64_t j = 0; j < s.k; ++j) {
      const T* xv = window + i * window_stride + j;
      T* ov = out + (i * s.k + j) * s.plane();
      if (!Add) prefetch<V>(ahead + (i * s.k + j) * s.plane());
      Vec<T> acc[N];
      HOCONV_UNROLL
      for (int n = 0; n < N; ++n) {
        acc[n] = Add ? load(ov + n * L) : Vec<T>{};
        HOCONV_UNROLL
        for (int c = 0; c < G; ++c) acc[n] += gv[c][n] * load(xv + c * window_cs + n * L);
      }
      if (Add) {
        HOCONV_UNROLL
        for (int n = 0; n < N; ++n) store(ov + n * L, acc[n]);
      } else {
        store_streaming(ov, acc);  // grad_wt: the largest output, not read again
      }
    }
  }
}

// Pointers to one image: grad_out, x, weights, grad_x, grad_wt.
template <typename T>
struct Image {
  const T *g, *x, *wt;
  T *gx, *gwt;
};

// Whether add_grad_x_shares_of's vector at column w reads image columns [w-p, w+p+L) all inside the
// row, and so, in a row too wide for the fixed stride, straight from the weights: all but the first
// and the last vector.
template <typename T>
inline bool reads_inside(const Shape& s, int64_t w) {
  return w >= s.pad() && w + kNarrow<T> + s.pad() <= s.width;
}

// Loads source row h of the weights and grad_out into the padded scratch rows. Where the unrolled kernel
// sizes read a row too wide for the fixed stride, only the columns that the vectors at either end read
// are copied (the others read the weights where they are: see reads_inside).
template <typename T>
void load_source_row(const Image<T>& a, const Shape& s, int64_t h, BackwardRows<T>& rows) {
  const int64_t plane = s.plane(), p = s.pad(), width = s.width;
  const bool ends = unrolled(s) && !fixed_stride(s);
  const int64_t head = ends ? std::min(width, kNarrow<T> + p) : width;
  const int64_t tail = ends ? std::max(head, width - kNarrow<T> - 2 * p) : width;
  for (int64_t t = 0; t < s.taps(); ++t) {
    const T* from = a.wt + t * plane + h * width;
    T* to = rows.weights.data() + t * rows.stride + p;
    copy_row(from, head, to);
    copy_row(from + tail, width - tail, to + tail);
  }
  for (int64_t c = 0; c < s.channels; ++c) {
    const T* from = a.g + c * plane + h * s.width;
    copy_row(from, s.width, rows.grad.data() + c * rows.stride + p);
  }
}

// The same shares for a kernel size K known at compile time, one vector of columns at a time: for
// each column tap j, the G shifted grad vectors are loaded once and serve all K kernel rows, whose
// K*G sums stay in registers (at k = 5: 8 loads per 15 multiply-adds instead of 20). `weights` points
// at image column w+p of tap 0's row (taps `weights_stride` apart), `grad` at padded column w+2p of
// G's first channel of the group (channels `stride` apart). Either stride may be a FixedStride.
template <int K, int G, typename T, typename WeightsStride, typename Stride>
inline void grad_x_rows(const T* weights, WeightsStride weights_stride, const T* grad, Stride stride,
                        Vec<T> (&acc)[K][G]) {
  HOCONV_UNROLL
  for (int j = 0; j < K; ++j) {
    Vec<T> g[G];
    HOCONV_UNROLL
    for (int c = 0; c < G; ++c) g[c] = load(grad + c * stride - j);
    HOCONV_UNROLL
    for (int i = 0; i < K; ++i) {
      const Vec<T> w = load(weights + (i * K + j) * weights_stride - j);
      HOCONV_UNROLL
      for (int c = 0; c < G; ++c) acc[i][c] += w * g[c];
    }
  }
}

// Adds source row h's shares to the ring rows y = h+i-p in [task.begin, task.end), for k = K, in the
// vector columns [begin, end). `wt_row` is row h of the image's first weight plane.
template <int K, typename T>
void add_grad_x_shares_of(const Shape& s, const Task& task, int64_t h, BackwardRows<T>& rows, const T* wt_row,
                          int64_t begin, int64_t end) {
  constexpr int L = kNarrow<T>;
  const int64_t p = s.pad();
  const bool fixed = fixed_stride(s);
  for_each_channel_group(s.channels, [&](int64_t c, auto group) {
    constexpr int G = group();
    for (int64_t w = begin; w < end; w += L) {
      Vec<T> acc[K][G] = {};
      const T* grad = rows.grad.data() + c * rows.stride + w + 2 * p;
      if (fixed) {
        grad_x_rows<K, G>(rows.weights.data() + w + 2 * p, FixedStride{}, grad, FixedStride{}, acc);
      } else if (reads_inside<T>(s, w)) {
        grad_x_rows<K, G>(wt_row + w + p, s.plane(), grad, rows.stride, acc);
      } else {
        grad_x_rows<K, G>(rows.weights.data() + w + 2 * p, rows.stride, grad, rows.stride, acc);
      }
      HOCONV_UNROLL
      for (int i = 0; i < K; ++i) {
        const int64_t y = h + i - p;
        if (y < task.begin || y >= task.end) continue;
        T* ring = rows.sums_row(s, y) + c * rows.sums_stride + w;
        HOCONV_UNROLL
        for (int g = 0; g < G; ++g) {
          T* at = ring + g * rows.sums_stride;
          store(at, load(at) + acc[i][g]);
        }
      }
    }
  });
}

// Adds source row h's shares to the ring rows y = h+i-p in [task.begin, task.end) for a kernel size
// that add_grad_x_shares_of does not unroll: one kernel row at a time, the whole row.
template <typename T>
void add_grad_x_shares_any_k(const Shape& s, const Task& task, int64_t h, BackwardRows<T>& rows) {
  const int64_t p = s.pad();
  for (int64_t i = 0; i < s.k; ++i) {
    const int64_t y = h + i - p;
    if (y < task.begin || y >= task.end) continue;
    T* ring = rows.sums_row(s, y);
    for_each_channel_group(s.channels, [&](int64_t c, auto group) {
      for_each_chunk<T>(s, [&](auto width, int64_t w) {
        grad_x_chunk<width(), group()>(rows.weights.data() + i * s.k * rows.stride + w + 2 * p,
                                       rows.grad.data() + c * rows.stride + w + 2 * p, rows.stride, s.k,
                                       ring + c * rows.sums_stride + w, rows.sums_stride);
      });
    });
  }
}

// Writes the finished grad_x row y from the ring (then clears its slot) and the per-element columns.
template <typename T>
void write_grad_x_row(const Image<T>& a, const Shape& s, int64_t y, BackwardRows<T>& rows) {
  T* ring = rows.sums_row(s, y);
  const int64_t end = vector_end<T>(s);
  for (int64_t c = 0; c < s.channels; ++c) {
    T* out = a.gx + c * s.plane() + y * s.width;
    benchctl::store_streaming(out, ring + c * rows.sums_stride, end);
    for (int64_t x = end; x < s.width; ++x) out[x] = grad_x_at(a.g + c * s.plane(), a.wt, s, y, x);
  }
  std::fill(ring, ring + s.channels * rows.sums_stride, T(0));
}

// Columns [w, w+V) of row h of every grad_wt plane: the channel sum of grad_out times the shifted input
// (zero where the tap reads padding: the window's rows and columns there are zeros).
// The weight rows kPrefetchRows ahead are asked for here, a chunk of each plane beside each chunk of
// streaming stores, so the backward's reads overlap its writes. Asked for in one burst at the start of
// a row, as the forward does, the reads and the writes took turns: B=16 on a 2-core AMD EPYC VM, 8.1
// -> 7.0 ms, in two steps (spread over the row: 7.7 ms; beside the stores: 7.0 ms).
template <int V, typename T>
void write_grad_wt_chunk(const Image<T>& a, const Shape& s, int64_t h, const T* around,
                         const InputWindow<T>& window, const BackwardRows<T>& rows, int64_t w) {
  const int64_t p = s.pad(), row = h * s.width;
  const T* ahead = a.wt + std::min(h + kPrefetchRows, s.height - 1) * s.width + w;
  for_each_channel_group(s.channels, [&](int64_t c, auto group) {
    const T* g = rows.grad.data() + c * rows.stride + p + w;
    const T* x = around + c * window.channel_stride() + w;
    T* out = a.gwt + row + w;
    if (c == 0) {
      grad_wt_chunk<V, group(), false>(g, rows.stride, x, window.stride(), window.channel_stride(), s, out, ahead);
    } else {
      grad_wt_chunk<V, group(), true>(g, rows.stride, x, window.stride(), window.channel_stride(), s, out, ahead);
    }
  });
}

// Row h of every grad_wt plane past the last whole vector, element by element.
template <typename T>
void write_grad_wt_tail(const Image<T>& a, const Shape& s, int64_t h) {
  for (int64_t i = 0; i < s.k; ++i) {
    for (int64_t j = 0; j < s.k; ++j) {
      T* out = a.gwt + (i * s.k + j) * s.plane() + h * s.width;
      for (int64_t w = vector_end<T>(s); w < s.width; ++w) out[w] = grad_wt_at(a.g, a.x, s, i, j, h, w);
    }
  }
}

// Everything source row h gives: its shares of grad_x and, when the task owns the row, row h of
// grad_wt. The two go chunk by chunk of columns, side by side: the shares are multiply-adds within the
// caches and the grad_wt row is streaming stores, and interleaved the core overlaps them. One whole
// row after the other, each waited on its own unit: B=16 on a 2-core AMD EPYC VM, 1.13x slower in one
// process, paired round by round (and 1.12x more with the scratch rows copied by memmove: see copy_row).
template <typename T>
void backward_row(const Image<T>& a, const Shape& s, const Task& task, int64_t h, InputWindow<T>& window,
                  BackwardRows<T>& rows) {
  const bool owned = h >= task.begin && h < task.end;
  const T* around = owned ? window.around(h) : nullptr;
  const T* wt_row = a.wt + h * s.width;
  if (!unrolled(s)) add_grad_x_shares_any_k(s, task, h, rows);
  for_each_chunk<T>(s, [&](auto width, int64_t w) {
    with_unrolled_k(s.k, [&](auto k) { add_grad_x_shares_of<k()>(s, task, h, rows, wt_row, w, w + width()); });
    if (owned) write_grad_wt_chunk<width()>(a, s, h, around, window, rows, w);
  });
  if (owned) write_grad_wt_tail(a, s, h);
}

template <typename T>
void backward_task(const Image<T>& base, const Shape& s, const Task& task) {
  const int64_t xs = s.channels * s.plane(), ws = s.taps() * s.plane(), p = s.pad();
  const int64_t b = task.batch;
  const Image<T> a{base.g + b * xs, base.x + b * xs, base.wt + b * ws, base.gx + b * xs, base.gwt + b * ws};
  BackwardRows<T> rows(s, vector_end<T>(s));
  InputWindow<T> window(a.x, s);
  const int64_t first = std::max<int64_t>(0, task.begin - p), last = std::min(s.height, task.end + p);
  for (int64_t h = first; h < last; ++h) {
    load_source_row(a, s, h, rows);
    backward_row(a, s, task, h, window, rows);
    if (h - p >= task.begin && h - p < task.end) write_grad_x_row(a, s, h - p, rows);
  }
  for (int64_t y = std::max(task.begin, last - p); y < task.end; ++y) write_grad_x_row(a, s, y, rows);
}

template <typename T>
void forward_kernel(const at::Tensor& x, const at::Tensor& wt, at::Tensor& out, const Shape& s) {
  const T *xp = x.const_data_ptr<T>(), *wp = wt.const_data_ptr<T>();
  T* op = out.mutable_data_ptr<T>();
  parallel_tasks(s, [&](const Task& task) { forward_task(xp, wp, op, s, task); });
}

template <typename T>
void backward_kernel(const at::Tensor& g, const at::Tensor& x, const at::Tensor& wt, at::Tensor& gx,
                     at::Tensor& gwt, const Shape& s) {
  if (s.channels == 0) {  // no channel reads any tap: every weight gradient is zero
    gwt.zero_();
    return;
  }
  const Image<T> base{g.const_data_ptr<T>(), x.const_data_ptr<T>(), wt.const_data_ptr<T>(),
                      gx.mutable_data_ptr<T>(), gwt.mutable_data_ptr<T>()};
  parallel_tasks(s, [&](const Task& task) { backward_task(base, s, task); });
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
TORCH_LIBRARY(hoconv2d, m) {
  m.def(benchctl::BENCHCTL_RELEASE_OUTPUTS_SCHEMA, &benchctl::release_outputs);  // its kept result blocks
  m.def("hoconv2d_filter(Tensor x, Tensor weights) -> Tensor");
  m.def("hoconv2d_filter_backward(Tensor grad_out, Tensor x, Tensor weights) -> (Tensor, Tensor)");
  // The CUDA backward's tile math on the CPU, for the tests (hoconv2d_tile_cpu.cpp).
  m.def("hoconv2d_filter_backward_tiled(Tensor grad_out, Tensor x, Tensor weights) -> (Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(hoconv2d, CPU, m) {
  m.impl("hoconv2d_filter", &hoconv2d::filter_cpu);
  m.impl("hoconv2d_filter_backward", &hoconv2d::filter_backward_cpu);
}
