#pragma once
// The edges of a Graph: a pool of edge records plus, per task, its out- and in-edges as rows of
// edge ids in one flat arena each. Flat so that copying a graph's structure (every what-if that
// inserts or removes a task does) is a handful of memcpy's, not an allocation per task and edge;
// removal leaves a tombstone, so that removing a task whose neighbour has thousands of edges
// (the launch calls of a whole step, bridged one after another onto one task) costs the removed
// task's edges, not the neighbour's.
//
// Order is what Boost's bidirectional vecS adjacency list gave, which every result depends on:
// a task's out-edges (and in-edges) in the order they were added; removing edges keeps the order
// of the others.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "daydream/graph.hpp"

namespace daydream {

using EdgeId = std::uint32_t;
inline constexpr EdgeId kNoEdge = 0xffffffffu;

struct EdgeTable;  // graph/graph_storage.hpp

class EdgeStore {
 public:
  EdgeStore() = default;
  /// A copy starts with nothing changed since (changed_since_copy).
  EdgeStore(const EdgeStore& other);
  EdgeStore& operator=(const EdgeStore& other);
  EdgeStore(EdgeStore&&) noexcept = default;
  EdgeStore& operator=(EdgeStore&&) noexcept = default;

  TaskId add_vertex();
  /// Room for this many vertices and edges in all (address space: untouched, it is not resident).
  void reserve(std::size_t vertices, std::size_t edges);
  std::size_t num_vertices() const { return out_.rows.size(); }
  std::size_t num_edges() const { return records_.size() - dead_; }

  /// Appends an edge to `from`'s out-edges and `to`'s in-edges. Throws Error past 2^32 edges.
  EdgeId add(TaskId from, TaskId to, const Edge& edge);
  /// Removes one edge (live).
  void remove(EdgeId id);
  /// Removes every edge from -> to.
  void remove_all(TaskId from, TaskId to);
  /// Removes every edge of `v`.
  void clear_vertex(TaskId v);
  /// Removes every edge of `v` and joins each of its predecessors p to each of its successors s
  /// (p != s) by an edge bridge(p -> v, v -> s), in the order of v's in-edges, then out-edges.
  void bypass_vertex(TaskId v, Edge (*bridge)(const Edge& in, const Edge& out));
  /// bypass_vertex on each vertex of `order` in turn, leaving the same edges in the same order in
  /// every row, in one pass: the bridges between two vertices of `order`, which a later bypass
  /// would remove again, are followed aside and never enter the store (on a chain of n calls
  /// launching n kernels, n bridged launches instead of 3n edge changes). With `zero_inner`, the
  /// edges between two vertices of `order` count with delay 0 (Graph::remove_all). Returns false,
  /// changing nothing, when `order` names a vertex twice.
  bool bypass_vertices(const std::vector<TaskId>& order, Edge (*bridge)(const Edge& in, const Edge& out),
                       bool zero_inner);
  /// The first of `from`'s out-edges that ends at `to`, or kNoEdge.
  EdgeId find(TaskId from, TaskId to) const;

  TaskId source(EdgeId id) const { return records_[id].from; }
  TaskId target(EdgeId id) const { return records_[id].to; }
  const Edge& edge(EdgeId id) const { return records_[id].edge; }
  /// The edge, for a change (which marks its ends changed).
  Edge& edge(EdgeId id) {
    mark_changed(records_[id].from);
    mark_changed(records_[id].to);
    return records_[id].edge;
  }

  std::size_t out_degree(TaskId v) const { return out_.rows[v].live; }
  std::size_t in_degree(TaskId v) const { return in_.rows[v].live; }

  /// Whether a row of vertex `v` (one of the store it was copied from) changed since this store
  /// was copied: an edge added, removed or handed out for a change marks both its ends. Vertices
  /// added since are not marked. The simulator's table of a copy is its source's table with the
  /// rows of these vertices read again (Graph::edge_table).
  bool changed_since_copy(TaskId v) const { return v < changed_.size() && changed_[v] != 0; }
  /// How many vertices changed_since_copy names.
  std::size_t changed_count() const { return changed_count_; }

  /// For a graph at rest (FrozenEdges): per predecessor slot of `table`, a table of this store's
  /// live edges (each task's successors in row order, its predecessors by source), the index into
  /// table.in_edges of each task's k-th in-edge in row order. False, with `in_order` unspecified,
  /// where the table does not hold exactly these edges.
  bool predecessor_order(const EdgeTable& table, std::vector<std::uint32_t>& in_order) const;
  /// Makes this store hold the edges of `table` (its successors' rows, kinds included) with each
  /// task's in-edges in `in_order` (predecessor_order's): the store they were frozen from, up to
  /// edge ids and room, as a copy of it (changes from here on are marked). Into this store's memory.
  void thaw(const EdgeTable& table, const std::vector<std::uint32_t>& in_order);

  /// A hash of the sizes and of every edge record (ends, delay, timing): equal for stores that
  /// took the same edits; it only picks candidates for an exact comparison.
  std::uint64_t layout_key() const;

  /// Calls f(EdgeId) for each live out-edge (in-edge) of v in order until f returns false;
  /// false when f stopped the walk.
  template <class F>
  bool each_out(TaskId v, F&& f) const {
    return each_live(out_, v, f);
  }
  template <class F>
  bool each_in(TaskId v, F&& f) const {
    return each_live(in_, v, f);
  }

 private:
  struct Record {
    TaskId from;  // kNoTask: removed (a tombstone until the pool is compacted)
    TaskId to;
    Edge edge;
  };
  /// Per task, a row of edge ids in `slots`; a row that outgrows its room moves to the end.
  struct Rows {
    struct Row {
      std::uint32_t begin = 0, size = 0, capacity = 0;
      std::uint32_t live = 0;  ///< ids in the row whose edge is live
    };
    RoomyVector<Row> rows;
    RoomyVector<EdgeId> slots;
    std::size_t unused = 0;  ///< slots no row holds any more (left behind by moves)

    void push(TaskId v, EdgeId id);
    /// `count` slots at the end, for a row (one at a time: most rows take 2, where resize()
    /// costs a call to fill them).
    void append_free_slots(std::uint32_t count) {
      for (std::uint32_t i = 0; i < count; ++i) slots.push_back(kNoEdge);
    }
  };
  /// Rows::push, first compacting a full row that holds dead ids (often the edge a removal just
  /// took away from the task its bridge now reaches) rather than moving it.
  void push(Rows& rows, TaskId v, EdgeId id);

  template <class F>
  bool each_live(const Rows& rows, TaskId v, F& f) const {
    const auto& row = rows.rows[v];
    const EdgeId* ids = rows.slots.data() + row.begin;
    for (std::uint32_t i = 0; i < row.size; ++i)
      if (!dead(ids[i]) && !f(ids[i])) return false;
    return true;
  }
  bool dead(EdgeId id) const { return records_[id].from == kNoTask; }
  void mark_changed(TaskId v) {
    if (!copied_) return;  // a store being built: no table to patch
    if (v >= changed_.size()) changed_.resize(std::max<std::size_t>(num_vertices(), std::size_t{v} + 1), 0);
    changed_count_ += changed_[v] == 0;
    changed_[v] = 1;
  }
  void drop_from_row(Rows& rows, TaskId v);
  void compact_row(Rows& rows, TaskId v);
  void compact_arena(Rows& rows);
  void compact_pool();

  RoomyVector<Record> records_;
  std::size_t dead_ = 0;
  Rows out_, in_;
  std::vector<EdgeId> scratch_ids_;          // clear_vertex's, kept to save an allocation per call
  std::vector<Record> scratch_in_, scratch_out_;  // bypass_vertex's
  std::vector<std::uint8_t> changed_;            // per vertex: changed since the copy (grown on demand)
  std::size_t changed_count_ = 0;
  bool copied_ = false;                          // a copy: changes are marked
};

}  // namespace daydream
