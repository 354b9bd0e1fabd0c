// Can the CPU compute while it reads hoconv2d's weights from memory? A stand-alone model of the forward's
// memory traffic (16 images x 25 planes of 224x224 float32, 80 MB) with three multiply-adds per weight
// vector, in three read orders:
//   planes    the kernel's order: for each row and 16-column chunk, one vector of each of the 25 planes,
//             the same column two rows ahead prefetched (25 streams per thread);
//   sequential each image's 25 planes read front to back (one stream per thread): the hardware
//             prefetchers run ahead on their own;
//   kernel-row one kernel row (5 planes) at a time over blocks of 16 rows, the 5 taps' sums added into a
//             block of sums in cache (5 streams per thread, no software prefetch).
// Each is timed on the whole 80 MB (from memory) and on one image's worth 16 times (in cache).
//
//   g++ -O3 -march=native -fopenmp benchmarks/stream_overlap.cpp -o /tmp/stream_overlap
//   OMP_NUM_THREADS=2 /tmp/stream_overlap
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kTaps = 25, kHeight = 224, kWidth = 224, kImages = 16;
constexpr long kPlane = long{kHeight} * kWidth, kImage = kTaps * kPlane;

alignas(64) float g_x[3][kWidth + 64];  // stands in for the input rows, always in L1

// acc[c] += w * x[c][offset .. offset+15] for the three channels.
inline void multiply_add(__m512 w, int offset, __m512 (&acc)[3]) {
  for (int c = 0; c < 3; ++c) acc[c] = _mm512_fmadd_ps(w, _mm512_loadu_ps(g_x[c] + offset), acc[c]);
}

float sum(const __m512 (&acc)[3]) {
  return _mm512_reduce_add_ps(acc[0]) + _mm512_reduce_add_ps(acc[1]) + _mm512_reduce_add_ps(acc[2]);
}

float planes(const float* image) {
  __m512 acc[3] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int h = 0; h < kHeight; ++h) {
    for (int x = 0; x < kWidth; x += 16) {
      for (int t = 0; t < kTaps; ++t) {
        const float* at = image + t * kPlane + long{h} * kWidth + x;
        __builtin_prefetch(at + 2 * kWidth, 0, 2);
        multiply_add(_mm512_loadu_ps(at), x % 64 + t % 5, acc);
      }
    }
  }
  return sum(acc);
}

float sequential(const float* image) {
  __m512 acc[3] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  for (long i = 0; i < kImage; i += 16) multiply_add(_mm512_loadu_ps(image + i), (i / 16) % 64 + i % 5, acc);
  return sum(acc);
}

float kernel_row(const float* image) {
  constexpr int kRows = 16;
  alignas(64) static thread_local float block[3][kRows][kWidth];
  float total = 0;
  for (int h0 = 0; h0 < kHeight; h0 += kRows) {
    std::fill(&block[0][0][0], &block[0][0][0] + 3 * kRows * kWidth, 0.0f);
    for (int i = 0; i < 5; ++i) {
      for (int r = 0; r < kRows; ++r) {
        for (int x = 0; x < kWidth; x += 16) {
          __m512 acc[3] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
          for (int j = 0; j < 5; ++j) {
            multiply_add(_mm512_loadu_ps(image + (i * 5 + j) * kPlane + long{h0 + r} * kWidth + x), x % 64 + j, acc);
          }
          for (int c = 0; c < 3; ++c) {
            float* to = &block[c][r][x];
            _mm512_store_ps(to, _mm512_add_ps(_mm512_load_ps(to), acc[c]));
          }
        }
      }
    }
    total += block[0][0][0] + block[2][kRows - 1][kWidth - 1];
  }
  return total;
}

// All images, split over the threads; `images` below kImages reads image 0..images-1 again and again.
template <typename Fn>
float over_images(const float* weights, int images, Fn fn) {
  float total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (int b = 0; b < kImages; ++b) total += fn(weights + (b % images) * kImage);
  return total;
}

double median_ms(const std::vector<double>& seconds) {
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  return sorted[sorted.size() / 2] * 1e3;
}

template <typename Fn>
void report(const char* name, const float* weights, Fn fn) {
  std::vector<double> memory, cache;
  volatile float sink = 0;
  for (int rep = 0; rep < 11; ++rep) {
    for (auto [images, out] : {std::pair{kImages, &memory}, std::pair{2, &cache}}) {
      const auto start = std::chrono::steady_clock::now();
      sink = sink + over_images(weights, images, fn);
      out->push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  std::printf("%-11s from memory %5.2f ms   in cache %5.2f ms\n", name, median_ms(memory), median_ms(cache));
}

}  // namespace

int main() {
  float* weights = static_cast<float*>(std::aligned_alloc(64, kImages * kImage * sizeof(float)));
  std::fill(weights, weights + kImages * kImage, 1.0f);
  std::fill(&g_x[0][0], &g_x[0][0] + 3 * (kWidth + 64), 1.0f);
  std::printf("%d threads, %d images x %d planes of %dx%d float32 (%.0f MB)\n", omp_get_max_threads(), kImages,
              kTaps, kHeight, kWidth, kImages * kImage * 4 / 1e6);
  for (int round = 0; round < 2; ++round) {
    report("planes", weights, planes);
    report("sequential", weights, sequential);
    report("kernel-row", weights, kernel_row);
  }
  std::free(weights);
}
