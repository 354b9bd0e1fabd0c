// Output memory shared by the CPU extensions: huge-page hints for large results, streaming stores.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace benchctl {

// An empty contiguous tensor like `like`, with transparent huge pages asked for on its 2 MiB-aligned
// part. A block of many MiB comes straight from mmap, and first writing it faults in each 4 KiB page
// (about 1.7 us each on a VM): for an 80 MB gradient that is 20k faults, more time than computing it.
// Huge pages make it about 40 (torch does the same for every allocation when THP_MEM_ALLOC_ENABLE=1).
// Only a hint: where THP is off the kernel ignores it.
inline at::Tensor empty_output(const at::Tensor& like) {
  at::Tensor out = at::empty_like(like, at::MemoryFormat::Contiguous);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(out.data_ptr());
  const std::uintptr_t first = (begin + huge - 1) / huge * huge, last = (begin + out.nbytes()) / huge * huge;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#endif
  return out;
}

#if defined(__AVX512F__)
inline void stream_line(float* out, const float* in) { _mm512_stream_ps(out, _mm512_loadu_ps(in)); }
inline void stream_line(double* out, const double* in) { _mm512_stream_pd(out, _mm512_loadu_pd(in)); }
#endif

// out[i] = in[i] for i < n. For an output far larger than the caches that nothing reads again soon:
// whole aligned cache lines go out as streaming stores where the CPU has them, because an ordinary
// store first reads the line from memory (a third more traffic for a read-one-write-one pass).
// Call finish_streaming() before the written data is used.
template <typename T>
inline void store_streaming(T* __restrict__ out, const T* __restrict__ in, int64_t n) {
#if defined(__AVX512F__)
  constexpr int64_t line = 64 / sizeof(T);
  if (n % line == 0 && reinterpret_cast<std::uintptr_t>(out) % 64 == 0) {
    for (int64_t q = 0; q < n; q += line) stream_line(out + q, in + q);
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) out[i] = in[i];
}

// Orders this thread's streaming stores before whatever the caller does next.
inline void finish_streaming() {
#if defined(__AVX512F__)
  _mm_sfence();
#endif
}

}  // namespace benchctl
