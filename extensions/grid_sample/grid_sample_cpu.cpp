// CPU kernels for bilinear grid sampling with a grid-only backward, and the op schemas.
//
// Points go in blocks: first the taps of the whole block (simple element-wise loops the compiler
// vectorises), then the gathers, whose reads are independent across the block so many cache
// misses are in flight at once — random points in a large image are bound by memory latency.
//
// ATen's SIMD types at the CPU's width (AVX2/AVX-512): see benchctl_vec.h.
#define BENCHCTL_VEC_NAME benchctl_grid_sample
#include "benchctl_vec.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/cpu/vec/vec.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <algorithm>
#include <type_traits>

#include "grid_sample.h"
#include "grid_sample_host.h"
#include "grid_sample_rows.h"

namespace benchctl {
namespace grid_sample {
namespace {

constexpr int64_t kGrain = 256;  // points per task: tiny grids stay on one thread
constexpr int64_t kBlock = 64;
constexpr int64_t kCachedBytes = int64_t{8} << 20;  // images up to this size stay in L2/L3

// The taps of up to kBlock consecutive points of one image, one array per field (vectorisable).
template <typename T, typename Index>
struct TapBlock {
  Index off[4][kBlock];
  T valid[4][kBlock];
  T tx[kBlock], ty[kBlock];
  int64_t size = 0;

  void fill(const T* img, const ImageView& v, const T* grid, int64_t count, bool prefetch) {
    size = count;
    for (int64_t j = 0; j < count; ++j) {
      const Taps<T, Index> t = taps<T, Index>(v, grid[2 * j], grid[2 * j + 1]);
      for (int k = 0; k < 4; ++k) {
        off[k][j] = t.off[k];
        valid[k][j] = t.valid[k];
      }
      tx[j] = t.tx;
      ty[j] = t.ty;
    }
    if (!prefetch) return;
    for (int64_t j = 0; j < count; ++j) prefetch_taps(img, v, at(j));  // a separate loop: the one above vectorises
  }

  Taps<T, Index> at(int64_t j) const {
    Taps<T, Index> t;
    for (int k = 0; k < 4; ++k) {
      t.off[k] = off[k][j];
      t.valid[k] = valid[k][j];
    }
    t.tx = tx[j];
    t.ty = ty[j];
    return t;
  }
};

// Calls visit(n, p, count, grid of those points) for runs of at most kBlock points of one image
// covering the flat point range [begin, end) (point i = n * hw + p).
template <typename Visit>
void for_blocks(int64_t hw, int64_t begin, int64_t end, const Visit& visit) {
  for (int64_t i = begin; i < end;) {
    const int64_t n = i / hw, p = i - n * hw;
    const int64_t count = std::min({kBlock, end - i, hw - p});
    visit(n, p, count);
    i += count;
  }
}

// One channel of a block; restrict parameters tell the compiler the gathers and the store do not
// overlap, so the loop vectorises (with gathers).
template <typename T, typename Index>
void sample_channel(const T* __restrict p, const TapBlock<T, Index>& __restrict b, T* __restrict o) {
  for (int64_t j = 0; j < b.size; ++j) {
    const T nw = p[b.off[0][j]] * b.valid[0][j], ne = p[b.off[1][j]] * b.valid[1][j];
    const T sw = p[b.off[2][j]] * b.valid[2][j], se = p[b.off[3][j]] * b.valid[3][j];
    o[j] = bilinear(b.tx[j], b.ty[j], nw, ne, sw, se);
  }
}

template <typename T, typename Index>
void forward_block(const T* img, const ImageView& v, const TapBlock<T, Index>& b, T* out, int64_t hw) {
  for (int64_t c = 0; c < v.C; ++c) sample_channel(img + c * v.sC, b, out + c * hw);
}

// The block's pixel-space gradients, SIMD vectors of points with the channels summed in registers
// (in cache, the gathers and the per-channel sums dominate: a pass per channel over dx, dy cost the
// backward 10% more time than ATen's own kernel at a 256x256 image). Needs Index as wide as T (the
// gather's lanes); the points past the last whole vector go through the scalar loop.
template <typename T, typename Index>
int64_t grad_vectors(const T* img, const ImageView& v, const TapBlock<T, Index>& b, const T* gout, int64_t hw,
                     T* dx, T* dy) {
  using Vec = at::vec::Vectorized<T>;
  using IVec = at::vec::Vectorized<Index>;
  int64_t j = 0;
  for (; j + Vec::size() <= b.size; j += Vec::size()) {
    IVec off[4];
    Vec valid[4];
    for (int k = 0; k < 4; ++k) {
      off[k] = IVec::loadu(b.off[k] + j);
      valid[k] = Vec::loadu(b.valid[k] + j);
    }
    const Vec tx = Vec::loadu(b.tx + j), ty = Vec::loadu(b.ty + j);
    Vec gx(T(0)), gy(T(0));
    for (int64_t c = 0; c < v.C; ++c) {
      const T* p = img + c * v.sC;
      Vec corner[4];
      for (int k = 0; k < 4; ++k) corner[k] = at::vec::gather<sizeof(T)>(p, off[k]) * valid[k];
      Vec d_tx, d_ty;
      bilinear_grad(tx, ty, corner[0], corner[1], corner[2], corner[3], &d_tx, &d_ty);
      const Vec g = Vec::loadu(gout + c * hw + j);
      gx = at::vec::fmadd(g, d_tx, gx);
      gy = at::vec::fmadd(g, d_ty, gy);
    }
    gx.store(dx + j);
    gy.store(dy + j);
  }
  return j;
}

template <typename T, typename Index>
void grid_backward_block(const T* img, const ImageView& v, const TapBlock<T, Index>& b, const T* gout, int64_t hw,
                         T* gg) {
  T dx[kBlock] = {}, dy[kBlock] = {};
  int64_t done = 0;
  if constexpr (std::is_same_v<T, float> && std::is_same_v<Index, int32_t>) {
    if (row_loads_apply(v)) done = grad_rows(img, v, b, gout, hw, dx, dy);
  }
  if constexpr (std::is_same_v<Index, at::vec::int_same_size_t<T>>) {
    if (done == 0) done = grad_vectors(img, v, b, gout, hw, dx, dy);
  }
  for (int64_t j = done; j < b.size; ++j) {  // past the last whole vector (all, for offsets narrower than T)
    const Taps<T, Index> t = b.at(j);
    for (int64_t c = 0; c < v.C; ++c) {
      const T* p = img + c * v.sC;
      T d_tx, d_ty;
      bilinear_grad(t.tx, t.ty, corner(p, t, 0), corner(p, t, 1), corner(p, t, 2), corner(p, t, 3), &d_tx, &d_ty);
      dx[j] += gout[c * hw + j] * d_tx;
      dy[j] += gout[c * hw + j] * d_ty;
    }
  }
  const T sx = pixels_per_unit<T>(v.W), sy = pixels_per_unit<T>(v.H);
  for (int64_t j = 0; j < b.size; ++j) {
    gg[2 * j] = dx[j] * sx;
    gg[2 * j + 1] = dy[j] * sy;
  }
}

// Pointers and sizes of one call, shared by the forward and backward drivers.
template <typename T>
struct Problem {
  const T* img;
  int64_t s_n;  // image batch stride
  ImageView v;
  const T* grid;  // (N, hw, 2) contiguous
  int64_t n_batch, hw;
  bool prefetch;  // only for images beyond the caches: in cache, prefetches are pure overhead
};

template <typename T>
Problem<T> problem_of(const at::Tensor& image, const at::Tensor& grid) {
  return Problem<T>{image.const_data_ptr<T>(), image.stride(0), view_of(image), grid.const_data_ptr<T>(),
                    image.size(0), grid.size(1) * grid.size(2), image.nbytes() > kCachedBytes};
}

// int32 offsets (16 gather lanes instead of 8) when every offset inside one image fits.
bool offsets_fit_int32(const at::Tensor& image) {
  int64_t span = 1;
  for (int d = 1; d < 4; ++d) span += (image.size(d) + 2) * image.stride(d);  // +2: padding taps
  return span < (int64_t{1} << 31);
}

template <typename T, typename Index>
void forward_points(const Problem<T>& pr, T* out) {
  at::parallel_for(0, pr.n_batch * pr.hw, kGrain, [&](int64_t begin, int64_t end) {
    TapBlock<T, Index> b;
    for_blocks(pr.hw, begin, end, [&](int64_t n, int64_t p, int64_t count) {
      const T* im = pr.img + n * pr.s_n;
      b.fill(im, pr.v, pr.grid + 2 * (n * pr.hw + p), count, pr.prefetch);
      forward_block(im, pr.v, b, out + n * pr.v.C * pr.hw + p, pr.hw);
    });
  });
}

template <typename T, typename Index>
void grid_backward_points(const Problem<T>& pr, const T* gout, T* grad_grid) {
  at::parallel_for(0, pr.n_batch * pr.hw, kGrain, [&](int64_t begin, int64_t end) {
    TapBlock<T, Index> b;
    for_blocks(pr.hw, begin, end, [&](int64_t n, int64_t p, int64_t count) {
      const T* im = pr.img + n * pr.s_n;
      const int64_t i = n * pr.hw + p;
      b.fill(im, pr.v, pr.grid + 2 * i, count, pr.prefetch);
      grid_backward_block(im, pr.v, b, gout + n * pr.v.C * pr.hw + p, pr.hw, grad_grid + 2 * i);
    });
  });
}

at::Tensor forward_cpu(const at::Tensor& image, const at::Tensor& grid_in) {
  check_args(image, grid_in);
  TORCH_CHECK(image.is_cpu(), "grid_sample_forward (CPU): tensors must be on the CPU");
  // The image keeps its layout (its strides are used directly); the grid is small.
  const at::Tensor grid = grid_in.contiguous();
  at::Tensor out = at::empty({image.size(0), image.size(1), grid.size(1), grid.size(2)}, image.options());
  const bool narrow = offsets_fit_int32(image);
  AT_DISPATCH_FLOATING_TYPES(image.scalar_type(), "grid_sample_forward_cpu", [&] {
    const Problem<scalar_t> pr = problem_of<scalar_t>(image, grid);
    if (narrow) {
      forward_points<scalar_t, int32_t>(pr, out.mutable_data_ptr<scalar_t>());
    } else {
      forward_points<scalar_t, int64_t>(pr, out.mutable_data_ptr<scalar_t>());
    }
  });
  return out;
}

at::Tensor grid_backward_cpu(const at::Tensor& grad_out_in, const at::Tensor& image, const at::Tensor& grid_in) {
  check_args(image, grid_in);
  TORCH_CHECK(image.is_cpu(), "grid_sample_grid_backward (CPU): tensors must be on the CPU");
  const at::Tensor grid = grid_in.contiguous();
  const at::Tensor grad_out = grad_out_in.contiguous();
  TORCH_CHECK(grad_out.numel() == image.size(0) * image.size(1) * grid.size(1) * grid.size(2),
              "grid_sample_grid_backward: grad_out has the wrong size");
  at::Tensor grad_grid = at::empty(grid.sizes(), grid.options());
  const bool narrow = offsets_fit_int32(image);
  AT_DISPATCH_FLOATING_TYPES(image.scalar_type(), "grid_sample_grid_backward_cpu", [&] {
    const Problem<scalar_t> pr = problem_of<scalar_t>(image, grid);
    const scalar_t* go = grad_out.const_data_ptr<scalar_t>();
    // int32 offsets only where the gather's lanes are 32-bit (float): double gathers take int64 ones.
    if (narrow && sizeof(scalar_t) == sizeof(int32_t)) {
      grid_backward_points<scalar_t, int32_t>(pr, go, grad_grid.mutable_data_ptr<scalar_t>());
    } else {
      grid_backward_points<scalar_t, int64_t>(pr, go, grad_grid.mutable_data_ptr<scalar_t>());
    }
  });
  return grad_grid;
}

}  // namespace
}  // namespace grid_sample
}  // namespace benchctl

TORCH_LIBRARY(grid_sample, m) {
  m.def("grid_sample_forward(Tensor image, Tensor grid) -> Tensor");
  m.def("grid_sample_grid_backward(Tensor grad_out, Tensor image, Tensor grid) -> Tensor");
}

TORCH_LIBRARY_IMPL(grid_sample, CPU, m) {
  m.impl("grid_sample_forward", &benchctl::grid_sample::forward_cpu);
  m.impl("grid_sample_grid_backward", &benchctl::grid_sample::grid_backward_cpu);
}
