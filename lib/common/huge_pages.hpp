#pragma once
// Transparent huge pages for the few big arrays that are written densely (an inflated trace, its
// events, a graph's tasks and edges), and for the `daydream` program's whole heap.
#include <cstddef>
#include <vector>

namespace daydream {

/// Asks the kernel to back the whole 2 MiB pages inside [data, data + bytes) with transparent
/// huge pages (madvise MADV_HUGEPAGE), so that filling them costs one page fault per 2 MiB
/// instead of one per 4 KiB. On a VM a 4 KiB fault costs about 1.5 us and the faults of a
/// one-shot replay are a third of its time (docs/benchmarks.md). Only for memory about to be
/// written from start to end: a huge page is zeroed whole, so sparse arrays would pay more.
/// Regions without a whole 2 MiB page, systems without THP, and refusals are left as they are;
/// the advice never changes what the memory holds.
void advise_huge_pages(const void* data, std::size_t bytes) noexcept;

/// reserve(), then the advice over the new capacity.
template <typename Vector>
void reserve_dense(Vector& vector, std::size_t count) {
  vector.reserve(count);
  advise_huge_pages(vector.data(), vector.capacity() * sizeof(typename Vector::value_type));
}

/// Reserves the start of the heap in huge pages: for the `daydream` program alone, first thing
/// (never in a library user's process, such as Python's). A one-shot command writes tens to
/// hundreds of MB once (the inflated trace, the parser's indexes, the graph), and on a VM each
/// 4 KiB page fault costs about 1.5 us: a `daydream replay` of a 15 MB trace took 10,000 faults,
/// a fifth of its time. So the heap's first kReservedHeapBytes are reserved at once and advised
/// as transparent huge pages (MADV_HUGEPAGE: one fault per 2 MiB where the system's THP setting
/// is "madvise" or "always"); glibc serves blocks up to 32 MiB from the heap instead of mapping
/// each (larger ones, such as a multi-GB trace's buffer, are still mapped, and returned when
/// freed); freed heap memory is kept for reuse. Only address space is reserved: pages count once
/// written. The cost is memory that stays with the process once freed (peak RSS of that replay:
/// 42 -> 61 MB). Returns whether it did: not where the C library is not glibc, a sanitizer owns
/// the heap, or the reservation failed (the heap is then as it was). Changes nothing a command
/// computes.
bool reserve_huge_page_heap() noexcept;

/// The address space reserve_huge_page_heap() reserves: 256 MiB, a one-shot replay of a trace of
/// up to about 60 MB, or a sweep's graph copies, whole. Past it the heap grows in 4 KiB pages: a
/// job replicated to 1,024 ranks (1.4 GB, written sparsely) would pay more to zero 2 MiB pages
/// than it saves in faults (docs/benchmarks.md, "tenth session").
inline constexpr std::size_t kReservedHeapBytes = std::size_t{256} << 20;

}  // namespace daydream
