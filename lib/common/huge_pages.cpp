#include "common/huge_pages.hpp"

#include <cstdint>
#include <cstdlib>
#include <limits>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#include <unistd.h>
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || __has_feature(thread_sanitizer)
#define DAYDREAM_SANITIZED_HEAP 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DAYDREAM_SANITIZED_HEAP 1
#endif

namespace daydream {

void advise_huge_pages(const void* data, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
  const std::uintptr_t last = (begin + bytes) & ~(kHugePage - 1);
  if (data == nullptr || last <= first) return;
  // The range lies inside one allocation, so advising it cannot touch anyone else's memory.
  (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)data, (void)bytes;
#endif
}

bool reserve_huge_page_heap() noexcept {
#if defined(__GLIBC__) && defined(MADV_HUGEPAGE) && !defined(DAYDREAM_SANITIZED_HEAP)
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);                         // blocks up to 32 MiB from the heap
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());  // freed memory stays for reuse
  mallopt(M_TOP_PAD, static_cast<int>(kReservedHeapBytes));    // the next growth reserves this much
  void* probe = std::malloc(kHugePage);                        // that growth: the reservation
  mallopt(M_TOP_PAD, 128 << 10);                               // later growths: glibc's default pad
  if (probe == nullptr) return false;  // no room for the reservation: the heap as it was
  // Where the reservation failed, glibc mapped the probe elsewhere: then end < begin, no advice.
  const auto begin = (reinterpret_cast<std::uintptr_t>(probe) + kHugePage - 1) & ~(kHugePage - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(sbrk(0)) & ~(kHugePage - 1);
  const bool advised = end > begin && madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE) == 0;
  std::free(probe);
  return advised;
#else
  return false;
#endif
}

}  // namespace daydream
