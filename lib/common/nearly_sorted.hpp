#pragma once
// Sorting arrays that a trace writes almost in order: Kineto writes each thread's events by start
// time, and correlation ids grow with time, so a build's sorts see runs of thousands of elements
// with a few out of place (ddp-resnet's busiest thread: 12 descents in 18,815 events).
#include <algorithm>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace daydream {

/// Sorts the vector by `less`, which must order every two distinct elements (a total order: the
/// result is then the one std::sort gives too). The vector is cut into its ascending runs, which
/// are merged pairwise until one is left: n log2(runs) steps, a handful of passes for a trace's
/// arrays. With more than kMaxRuns runs, std::sort.
template <class T, class Less>
void sort_nearly_sorted(std::vector<T>& values, Less less) {
  constexpr std::size_t kMaxRuns = 256;
  std::vector<std::size_t> bounds{0};  // run r is [bounds[r], bounds[r + 1])
  for (std::size_t i = 1; i < values.size(); ++i) {
    if (!less(values[i], values[i - 1])) continue;
    if (bounds.size() == kMaxRuns) {
      std::sort(values.begin(), values.end(), less);
      return;
    }
    bounds.push_back(i);
  }
  bounds.push_back(values.size());
  const auto at = [&](std::size_t offset) { return values.begin() + static_cast<std::ptrdiff_t>(offset); };
  while (bounds.size() > 2) {
    std::size_t merged = 0;  // bounds kept, rewritten in place
    for (std::size_t r = 0; r + 1 < bounds.size(); r += 2) {
      bounds[merged++] = bounds[r];
      if (r + 2 < bounds.size()) std::inplace_merge(at(bounds[r]), at(bounds[r + 1]), at(bounds[r + 2]), less);
    }
    bounds[merged++] = values.size();
    bounds.resize(merged);
  }
}

template <class T>
void sort_nearly_sorted(std::vector<T>& values) {
  sort_nearly_sorted(values, std::less<>{});
}

}  // namespace daydream
