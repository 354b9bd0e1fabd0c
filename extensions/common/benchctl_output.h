// Output memory shared by the CPU extensions: blocks kept for large results, streaming stores.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/from_blob.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace benchctl {

// Large outputs live in blocks that a freed result hands back for the next call of the same size.
//
// A result of many MiB comes straight from mmap, and glibc's malloc unmaps it again on free, so each
// call's result is fresh memory that the OS faults in and zero-fills page by page as the kernel first
// writes it: 5.6 to 8.5 ms of system time for hoconv2d's 80 MB weight gradient on 2 MiB pages, 20 ms
// on 4 KiB ones, against 7.4 ms for the whole backward in reused memory. jemalloc and tcmalloc keep
// freed memory; these blocks keep it for the extension's own results whatever the allocator, as a
// GPU caching allocator does: a training loop that drops last step's gradient gets the same pages,
// already faulted in, the next step.
//
// A block is mapped from the OS, 2 MiB-aligned, a whole number of 2 MiB, and asks for transparent huge
// pages (40 faults instead of 20k when it is first written; only a hint: where THP is off the kernel
// ignores it). Freed blocks wait in a list, newest last, at most kHeldMiB in all (the oldest go back
// to the OS first); a result takes one of its exact size. BENCHCTL_OUTPUT_BLOCKS_MIB sets that limit;
// 0 keeps nothing, so each result is fresh memory again. Elsewhere than Linux, results come from torch.
#if defined(__linux__)
class OutputBlocks {
 public:
  static constexpr std::size_t kAlign = std::size_t{2} << 20;  // smaller results come from malloc's heap
  static constexpr std::size_t kHeldMiB = 1024;

  static OutputBlocks& instance() {
    static OutputBlocks* blocks = new OutputBlocks();  // never destroyed: tensors may outlive statics
    return *blocks;
  }

  // A block of at least `bytes`, and its size: a kept one of that size, else a new one, after the kept
  // ones go back to the OS (a new size means the shapes changed, as from one batch size to the next,
  // and blocks of the old sizes would only hold memory). Throws torch's out-of-memory error.
  std::pair<void*, std::size_t> take(std::size_t bytes) {
    const std::size_t size = (bytes + kAlign - 1) / kAlign * kAlign;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = free_.rbegin(); it != free_.rend(); ++it) {
        if (it->second != size) continue;
        void* data = it->first;
        held_ -= size;
        free_.erase(std::next(it).base());
        return {data, size};
      }
      trim(0);
    }
    void* data = map(size);
    TORCH_CHECK_WITH(OutOfMemoryError, data != nullptr, "benchctl: cannot allocate ", size, " bytes");
    return {data, size};
  }

  void give_back(void* data, std::size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.emplace_back(data, size);
    held_ += size;
    trim(limit_);
  }

  // Every kept block back to the OS (results still alive keep theirs).
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    trim(0);
  }

 private:
  OutputBlocks() : limit_(limit_from_env()) {}

  static std::size_t limit_from_env() {
    const char* text = std::getenv("BENCHCTL_OUTPUT_BLOCKS_MIB");
    const std::size_t mib = text != nullptr && *text != '\0' ? std::strtoull(text, nullptr, 10) : kHeldMiB;
    return mib << 20;
  }

  // `size` bytes of fresh memory at a 2 MiB boundary, straight from the OS (malloc might keep freed
  // memory and hand it out again), with huge pages asked for; nullptr if there is none.
  static void* map(std::size_t size) {
    const std::size_t span = size + kAlign;
    void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const auto begin = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t start = (begin + kAlign - 1) / kAlign * kAlign, end = begin + span;
    if (start > begin) munmap(raw, start - begin);
    if (end > start + size) munmap(reinterpret_cast<void*>(start + size), end - start - size);
    madvise(reinterpret_cast<void*>(start), size, MADV_HUGEPAGE);
    return reinterpret_cast<void*>(start);
  }

  // Returns blocks to the OS, oldest first, until at most `limit` bytes are held. Caller holds mutex_.
  void trim(std::size_t limit) {
    while (held_ > limit) {
      munmap(free_.front().first, free_.front().second);
      held_ -= free_.front().second;
      free_.pop_front();
    }
  }

  std::mutex mutex_;
  std::deque<std::pair<void*, std::size_t>> free_;  // (block, size), newest last
  std::size_t held_ = 0;
  const std::size_t limit_;
};

#endif

// The kept blocks back to the OS. Each extension that keeps blocks registers it as its op
// `benchctl_release_outputs() -> ()` (BENCHCTL_RELEASE_OUTPUTS_SCHEMA): benchctl's CPU peak memory calls it
// before it reads the resident size, so a pass's results count as the new pages they are in a fresh
// process, not as memory already resident (naflex_posembed's cpp forward at B=32 read a 0.0 MiB peak).
inline void release_outputs() {
#if defined(__linux__)
  OutputBlocks::instance().release();
#endif
}
constexpr const char* BENCHCTL_RELEASE_OUTPUTS_SCHEMA = "benchctl_release_outputs() -> ()";

// An empty contiguous tensor like `like`, for a kernel to fill. Large ones come from OutputBlocks on Linux.
inline at::Tensor empty_output(const at::Tensor& like) {
#if defined(__linux__)
  const std::size_t bytes = like.numel() * like.element_size();
  if (bytes >= OutputBlocks::kAlign) {
    const auto [data, size] = OutputBlocks::instance().take(bytes);
    return at::from_blob(
        data, like.sizes(), [size = size](void* block) { OutputBlocks::instance().give_back(block, size); },
        like.options());
  }
#endif
  return at::empty_like(like, at::MemoryFormat::Contiguous);
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
