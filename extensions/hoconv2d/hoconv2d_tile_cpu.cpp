// hoconv2d_filter_backward_tiled on the CPU: the CUDA backward's tile math (hoconv2d_tile.h) run block
// by block, as the kernel's blocks run it, so that the tests hold the code the GPU runs against the
// float64 reference on a machine without one. Only for the tiled kernel's sizes (k = 3, 5, 7 and 1 to 4
// channels); it is a check, not a fast path.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

#include <memory>
#include <tuple>

#include "hoconv2d.h"
#include "hoconv2d_checks.h"
#include "hoconv2d_tile.h"

namespace hoconv2d {
namespace {

// Every block of one batch item: its tiles filled (kElements of them, as the block's threads share them
// out), then every pixel of the block inside the image.
template <typename T, int K, int CH>
void backward_tiled(const T* g, const T* x, const T* wt, T* gx, T* gwt, const Shape& s) {
  const int H = static_cast<int>(s.height), W = static_cast<int>(s.width);
  const int64_t plane = s.plane();
  auto tiles = std::make_unique<Tiles<T, K, CH>>();
  for (int64_t b = 0; b < s.batch; ++b) {
    const T *gb = g + b * CH * plane, *xb = x + b * CH * plane, *wb = wt + b * (K * K) * plane;
    for (int row0 = 0; row0 < H; row0 += kTileH) {
      for (int col0 = 0; col0 < W; col0 += kTileW) {
        for (int n = 0; n < Tiles<T, K, CH>::kElements; ++n) {
          fill_tile_element(*tiles, gb, xb, H, W, plane, row0, col0, n);
        }
        for (int ty = 0; ty < kTileH && row0 + ty < H; ++ty) {
          for (int tx = 0; tx < kTileW && col0 + tx < W; ++tx) {
            const int h = row0 + ty, w = col0 + tx, pos = h * W + w;
            T* gwb = gwt + b * (K * K) * plane + pos;
            grad_wt_tile(*tiles, ty, tx, [&](int tap, T v) { gwb[tap * plane] = v; });
            T out[CH];
            grad_x_tile(*tiles, ty, tx, h, w, H, W,
                        [&](int tap, int hh, int ww) { return wb[tap * plane + hh * W + ww]; }, out);
            for (int c = 0; c < CH; ++c) gx[(b * CH + c) * plane + pos] = out[c];
          }
        }
      }
    }
  }
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> filter_backward_tiled_cpu(const at::Tensor& grad_out, const at::Tensor& x_in,
                                                             const at::Tensor& weights_in) {
  const Shape s = check_backward_inputs(grad_out, x_in, weights_in);
  const at::Tensor g = grad_out.contiguous(), x = x_in.contiguous(), wt = weights_in.contiguous();
  at::Tensor gx = at::empty_like(x, at::MemoryFormat::Contiguous);
  at::Tensor gwt = at::empty_like(wt, at::MemoryFormat::Contiguous);
  bool tiled = false;
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "hoconv2d_filter_backward_tiled_cpu", [&] {
    tiled = with_fixed_k_c(s, [&](auto k, auto c) {
      backward_tiled<scalar_t, decltype(k)::value, decltype(c)::value>(
          g.const_data_ptr<scalar_t>(), x.const_data_ptr<scalar_t>(), wt.const_data_ptr<scalar_t>(),
          gx.mutable_data_ptr<scalar_t>(), gwt.mutable_data_ptr<scalar_t>(), s);
    });
  });
  TORCH_CHECK(tiled, "hoconv2d: the tiled backward takes k = 3, 5 or 7 and 1 to 4 channels, got k = ", s.k,
              " and ", s.channels, " channels");
  return {gx, gwt};
}

}  // namespace hoconv2d

TORCH_LIBRARY_IMPL(hoconv2d, CPU, m) {
  m.impl("hoconv2d_filter_backward_tiled", &hoconv2d::filter_backward_tiled_cpu);
}
