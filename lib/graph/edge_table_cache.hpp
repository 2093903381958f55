#pragma once
// Edge tables of structures met before, shared by the copies of one base graph (a Predictor's
// what-ifs). A scenario whose parameters change only numbers (amp's factors, cuda_graphs' launch
// time) makes the same structural edits for every value, so its copies end with the same edges;
// each would rebuild the simulator's table (forward and reverse rows, Kahn's order, the unit
// chains: about 2.4 ms on ResNet-50) where checking that the edges are those of a table built
// before costs one walk over the rows. A reused table is the one a build would give: the check is
// exact (every live edge's target, delay and timing in row order, and each task's unit and
// removed flag), a hash of the edge records only picks the candidates.
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "graph/graph_storage.hpp"

namespace daydream {

class EdgeTableCache {
 public:
  /// What find() and offer() look entries up by: a hash of the edge records and the task count.
  static std::uint64_t key(const EdgeStore& edges, const TaskColumns& columns);
  /// The table built before for exactly these edges and task columns, or null.
  std::shared_ptr<const EdgeTable> find(std::uint64_t key, const EdgeStore& edges, const TaskColumns& columns);
  /// Offers a table just built for `edges` and `columns`. It is kept only when a structure of the
  /// same key was built before (a structure met once, such as each value of a parameter that
  /// changes the structure, would only evict the others), and only while the kept tables stay
  /// under kMaxBytes. Returns the table it evicted to make room when nothing else holds it, so
  /// that its memory serves the next build (a graph's spare table) instead of being freed.
  std::shared_ptr<EdgeTable> offer(std::uint64_t key, const TaskColumns& columns, std::shared_ptr<EdgeTable> table);

  static constexpr std::size_t kMaxEntries = 4;
  static constexpr std::size_t kMaxBytes = std::size_t{256} << 20;

 private:
  struct Entry {
    std::uint64_t key;
    std::shared_ptr<EdgeTable> table;  // never changed while kept; handed back only when evicted
    std::vector<UnitId> unit;  // the columns the table's unit chains were read from
    std::vector<std::uint8_t> removed;
    std::size_t bytes;
  };
  struct Slot {
    std::shared_ptr<const Entry> entry;
    std::uint64_t used;  // for least-recently-used eviction
  };
  static bool matches(const Entry& entry, const EdgeStore& edges, const TaskColumns& columns);

  std::mutex mutex_;
  std::vector<Slot> slots_;
  std::vector<std::uint64_t> built_keys_;  // keys of recent builds (admission), newest last
  std::uint64_t clock_ = 0;
};

}  // namespace daydream
