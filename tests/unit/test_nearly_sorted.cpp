// sort_nearly_sorted (lib/common/nearly_sorted.hpp): the order std::sort gives, whatever the input;
// and the graph build's index of events by correlation id (graph/build_context.hpp), built on it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "common/nearly_sorted.hpp"
#include "graph/build_context.hpp"

namespace {

using Pair = std::pair<std::int64_t, std::uint32_t>;  // (correlation, event), as a build sorts them

void check_sorts_as_std_sort(std::vector<Pair> values) {
  std::vector<Pair> expected = values;
  std::sort(expected.begin(), expected.end());
  daydream::sort_nearly_sorted(values);
  CHECK(values == expected);
}

/// 0..n-1 ascending, then `moved` elements taken from random places and appended (events a trace
/// writes late).
std::vector<Pair> ascending_with_late(std::size_t n, std::size_t moved, std::mt19937& random) {
  std::vector<Pair> values;
  for (std::size_t i = 0; i < n; ++i) values.emplace_back(static_cast<std::int64_t>(i), static_cast<std::uint32_t>(i));
  for (std::size_t k = 0; k < moved && !values.empty(); ++k) {
    const auto at = values.begin() + static_cast<std::ptrdiff_t>(random() % values.size());
    const Pair late = *at;
    values.erase(at);
    values.push_back(late);
  }
  return values;
}

}  // namespace

TEST_CASE("sort_nearly_sorted gives std::sort's order for every input shape", "[sort]") {
  std::mt19937 random(7);
  check_sorts_as_std_sort({});
  check_sorts_as_std_sort({{3, 0}});
  check_sorts_as_std_sort({{3, 1}, {3, 0}});
  for (std::size_t moved : {0, 1, 12, 200, 5000}) check_sorts_as_std_sort(ascending_with_late(20'000, moved, random));

  // Two interleaved ascending streams written one after the other (a thread's operators, then its
  // runtime calls): two runs.
  std::vector<Pair> two_runs;
  for (std::uint32_t i = 0; i < 10'000; i += 2) two_runs.emplace_back(i, i);
  for (std::uint32_t i = 1; i < 10'000; i += 2) two_runs.emplace_back(i, i);
  check_sorts_as_std_sort(two_runs);

  // Descending: one run per element, past the runs merged, so std::sort itself.
  std::vector<Pair> descending;
  for (std::uint32_t i = 0; i < 3'000; ++i) descending.emplace_back(3'000 - i, i);
  check_sorts_as_std_sort(descending);

  // No order at all, with repeated keys told apart by the second member.
  std::vector<Pair> shuffled;
  for (std::uint32_t i = 0; i < 5'000; ++i) shuffled.emplace_back(static_cast<std::int64_t>(random() % 100), i);
  check_sorts_as_std_sort(shuffled);

  // Exactly the most runs that are merged (256), and one more.
  for (std::uint32_t runs : {256u, 257u}) {
    std::vector<Pair> blocks;
    for (std::uint32_t r = 0; r < runs; ++r)
      for (std::uint32_t i = 0; i < 10; ++i) blocks.emplace_back(static_cast<std::int64_t>(runs - r) * 100 + i, r * 10 + i);
    check_sorts_as_std_sort(blocks);
  }
}

TEST_CASE("sort_nearly_sorted takes a comparator", "[sort]") {
  std::vector<int> values{1, 2, 3, 9, 8, 7, 4, 5, 6};
  daydream::sort_nearly_sorted(values, [](int a, int b) { return a > b; });
  CHECK(values == std::vector<int>{9, 8, 7, 6, 5, 4, 3, 2, 1});
}

TEST_CASE("correlation index: a lookup finds every pair of an id, dense ids or sparse", "[sort][build]") {
  daydream::Trace trace;
  daydream::GraphOptions options;
  daydream::Graph graph;
  const daydream::BuildContext ctx(trace, options, graph);
  std::mt19937 random(7);
  // Dense ids (a trace's: 5-13 ids per pair, repeats, gaps, a few out of order) take the direct
  // index; ids 10^6 apart the binary search. Both must give every pair of an id, in position order.
  for (const std::int64_t stride : {std::int64_t{1}, std::int64_t{1'000'000}}) {
    daydream::CorrelationIndex index;
    std::vector<Pair> all;
    for (std::uint32_t position = 0; position < 3'000; ++position) {
      const std::int64_t id = 500 + static_cast<std::int64_t>(random() % 4'000) * stride;
      index.add(id, position);
      all.emplace_back(id, position);
    }
    index.seal();
    CHECK(index.starts.empty() == (stride != 1));
    std::sort(all.begin(), all.end());
    for (std::int64_t k = -2; k < 4'010; ++k) {
      const std::int64_t id = 500 + k * stride;
      std::vector<std::uint32_t> expected, found;
      for (const auto& [pair_id, position] : all)
        if (pair_id == id) expected.push_back(position);
      for (const std::uint32_t position : ctx.lookup(index, id)) found.push_back(position);
      CAPTURE(stride, id);
      CHECK(found == expected);
    }
    // Just outside the ids (below the first one wraps around to the last slot but one), and far.
    const std::int64_t first = all.front().first, last = all.back().first;
    for (const std::int64_t outside : {first - 1, first - 2, last + 1, daydream::kNone, std::int64_t{-1},
                                       std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()})
      CHECK(ctx.lookup(index, outside).empty());
    CHECK_FALSE(ctx.lookup(index, first).empty());
    CHECK_FALSE(ctx.lookup(index, last).empty());
  }
}
