#pragma once
// Transparent huge pages for the few big arrays that are written densely (an inflated trace, its
// events, a graph's tasks and edges).
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

}  // namespace daydream
