#pragma once
// The structure behind daydream::Graph: its edges (EdgeStore: flat rows in insertion order),
// topological ranks and the simulator's edge table. Task records live beside it in Graph, so
// copies of a graph share this structure until one of them changes it.

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "daydream/graph.hpp"
#include "graph/edge_store.hpp"

namespace daydream {

/// The longest delay the simulator accepts (2^61 ns). The simulated clock stays within
/// +-kMaxTraceTimeNs (2^62 ns) and a duration is at most kMaxTaskDurationNs, so every time a
/// simulator computes (a clock reading plus a delay, plus at most one more) fits in 64 bits, and
/// an event past the clock's range stops the simulation with an Error instead of wrapping around.
inline constexpr TimeNs kMaxDelayNs = kMaxTraceTimeNs / 2;

/// An edge's type and inferred flag in one byte (EdgeTable::kind, InEdge::kind).
constexpr std::uint8_t pack_edge_kind(const Edge& edge) {
  return static_cast<std::uint8_t>(static_cast<std::uint8_t>(edge.type) | (edge.inferred ? 0x8 : 0));
}
/// The edge of a table entry: its packed kind, delay and timing.
constexpr Edge unpack_edge(std::uint8_t kind, TimeNs delay_ns, std::uint8_t start_to_start) {
  return Edge(static_cast<EdgeType>(kind & 0x7), start_to_start != 0 ? Timing::start_to_start : Timing::finish_to_start,
              delay_ns, (kind & 0x8) != 0);
}

/// An edge as its target sees it (EdgeTable's reverse rows). 16 bytes: the kind fills padding.
struct InEdge {
  TimeNs delay_ns;
  TaskId source;
  std::uint8_t start_to_start;
  std::uint8_t kind;  ///< pack_edge_kind: not read by the simulator, but what a graph at rest reads (FrozenEdges)
};
static_assert(sizeof(InEdge) == 16, "the kind lies in what was padding");

/// The edges in compressed sparse-row form, for the simulator, which sweeps them many times: the
/// successors of task t are entries [first[t], first[t + 1]), its predecessors in_edges
/// [in_first[t], in_first[t + 1]) (in source order). Computed once per edge structure and shared by
/// graph copies that have not changed it.
struct EdgeTable {
  std::vector<std::uint32_t> first;        ///< size num_tasks + 1
  std::vector<TaskId> target;
  std::vector<TimeNs> delay_ns;
  std::vector<std::uint8_t> start_to_start;
  std::vector<std::uint8_t> kind;          ///< pack_edge_kind of each edge (for FrozenEdges; the simulator skips it)
  std::vector<std::uint32_t> in_first;     ///< size num_tasks + 1: task t has in_first[t + 1] - in_first[t] predecessors
  std::vector<InEdge> in_edges;
  /// Every task in a topological order (Kahn's, ties by id); shorter than num_tasks when the
  /// edges close a cycle.
  std::vector<TaskId> topological;
  /// The first edge whose delay the simulator cannot use (negative, or past 2^61 ns), or size().
  std::size_t first_unusable_delay = 0;
  /// The units whose live tasks, in `topological` order, are not each joined by an edge to the
  /// one before (ascending). Tasks keep their unit, and removing one changes the structure, so
  /// this holds as long as the table.
  std::vector<UnitId> unchained_units;
  /// Per task: 1 where a launch edge leaves it. Per unit (up to the last one found): 1 where a task
  /// of the unit launches GPU work, which makes a CPU thread part of the run (run_span_ns).
  std::vector<std::uint8_t> launches;
  std::vector<std::uint8_t> launching_units;

  std::size_t num_tasks() const { return in_first.empty() ? 0 : in_first.size() - 1; }
  /// Each task's count of predecessors (what Kahn's order and the event engine count down).
  std::vector<std::uint32_t> in_degrees() const {
    std::vector<std::uint32_t> degrees(num_tasks());
    for (std::size_t t = 0; t < degrees.size(); ++t) degrees[t] = in_first[t + 1] - in_first[t];
    return degrees;
  }
};

/// Sets `unit`'s entry of a EdgeTable::launching_units column, growing it to hold the unit.
inline void mark_launching(std::vector<std::uint8_t>& launching_units, UnitId unit) {
  if (unit >= launching_units.size()) launching_units.resize(std::size_t{unit} + 1, 0);
  launching_units[unit] = 1;
}

/// Kahn's order over the table, the lowest ready id first (the order nearest to id order, where
/// per-task arrays lie, so one pass in it reads memory mostly forward); with `next_in_chain`, each
/// task t also precedes next_in_chain[t] (kNoTask: none). Shorter than the tasks at a cycle.
std::vector<TaskId> kahn_order(const EdgeTable& table, const std::vector<TaskId>* next_in_chain = nullptr);

/// Per task, what the reports of a simulation read besides TaskColumns: the category of its time
/// on a critical path (a PathCategory, lib/predict), its layer and its iteration. It covers the
/// tasks the graph held when it was built (Graph::report_columns_); a task added since is read
/// from its record.
struct ReportColumns {
  /// Whether a task's name can decide its category: lib/predict's category_of reads the name only
  /// for a task that is no communication, GPU work, data loading, CPU work or blocking call (a
  /// runtime call, which waits for the GPU by its name). Renaming any other task keeps the columns.
  static bool category_reads_name(const Task& task) {
    return task.kind != TaskKind::communication && !is_gpu(task.kind) && task.phase != Phase::data_loading &&
           task.kind != TaskKind::cpu && !task.blocking;
  }
  std::vector<std::uint8_t> category;
  std::vector<std::uint32_t> layer;
  std::vector<std::int32_t> iteration;
  /// What simulated_iteration_spans reads of the tasks covered, in id order: those of an iteration
  /// that lie on its marking unit (the unit of its first task), with that iteration; and those
  /// units, per iteration (kNoUnit where it has no first task). Moving a task to another unit, or
  /// changing its iteration, drops the columns (Graph::mutable_record).
  struct MarkedTask {
    TaskId task;
    std::uint32_t iteration;
  };
  std::vector<MarkedTask> marked;
  std::vector<UnitId> marking_unit;
  static constexpr UnitId kNoUnit = ~UnitId{0};
  bool covers(TaskId id) const { return id < category.size(); }
};

/// A topological rank per task, while valid, so that insert/connect can tell without a search
/// that a new edge closes no cycle (lib/transform/edit.cpp). A function of the structure: copies
/// that share the structure share it, and it is copied with it.
struct TopologicalRanks {
  /// Between consecutive recomputed ranks (and after the last): room for a run of inserted tasks
  /// one above another (Graph::insert ranks a task kInsertStep above what it follows) before the
  /// ranks must be recomputed, a topological sort of the whole graph. With ranks 1 apart, a run
  /// of inserts between two tasks halved the room each time and ran out after about 50.
  static constexpr double kSpacing = 65536;
  RoomyVector<double> rank;
  double next = 0;  ///< above every rank: where a task added at the end goes
  bool valid = false;
};

/// Each task's predecessors in an edge store's order, where it is not the order of an EdgeTable's
/// reverse rows (by source): only for the tasks whose rows differ, as most tasks have one
/// predecessor or gained theirs by source (a bit a task, and 4 bytes a predecessor of the others).
class PredecessorOrder {
 public:
  PredecessorOrder() = default;
  /// From `in_order` (EdgeStore::predecessor_order: per slot of table.in_first, the index into
  /// table.in_edges of the task's k-th in-edge in the store's order).
  PredecessorOrder(const EdgeTable& table, const std::vector<std::uint32_t>& in_order);
  /// `in_order` again, whole.
  std::vector<std::uint32_t> expand(const EdgeTable& table) const;
  /// Whether task v's predecessors in the store's order are not in the table's order.
  bool reordered(TaskId v) const { return v < num_tasks_ && ((reordered_[v >> 6] >> (v & 63)) & 1) != 0; }
  /// Task v's row (reordered(v)): its in-edges' indices into table.in_edges, in the store's order.
  const std::uint32_t* row(TaskId v) const;

 private:
  std::size_t num_tasks_ = 0;
  std::vector<std::uint64_t> reordered_;  // a bit per task
  std::vector<TaskId> tasks_;             // the reordered tasks, ascending
  std::vector<std::uint32_t> first_;      // per reordered task (and one past): its row in rows_
  std::vector<std::uint32_t> rows_;
};

/// A graph's edges at rest (Graph::freeze_edges, the end of build_graph): its simulator table,
/// which holds every edge (successor rows in the store's order, with their kinds), and the
/// predecessors of the tasks whose store order is not the table's (by source): little on top of
/// the table every simulation needs, where the editable store took 60-90 bytes a task. The first
/// change of the structure thaws it into an EdgeStore again.
struct FrozenEdges {
  std::shared_ptr<const EdgeTable> table;
  PredecessorOrder order;

  std::size_t num_edges() const { return table->target.size(); }
  std::size_t out_degree(TaskId v) const { return table->first[v + 1] - table->first[v]; }
  std::size_t in_degree(TaskId v) const { return table->in_first[v + 1] - table->in_first[v]; }
  /// EdgeStore::each_out and each_in, calling f(neighbor, edge).
  template <class F>
  bool each_out(TaskId v, F& f) const {
    const EdgeTable& t = *table;
    for (auto i = t.first[v]; i < t.first[v + 1]; ++i)
      if (!f(t.target[i], unpack_edge(t.kind[i], t.delay_ns[i], t.start_to_start[i]))) return false;
    return true;
  }
  template <class F>
  bool each_in(TaskId v, F& f) const {
    const EdgeTable& t = *table;
    const auto visit = [&](std::uint32_t i) {
      const InEdge& in = t.in_edges[i];
      return f(in.source, unpack_edge(in.kind, in.delay_ns, in.start_to_start));
    };
    if (order.reordered(v)) {
      const std::uint32_t* row = order.row(v);
      for (std::uint32_t k = 0, n = t.in_first[v + 1] - t.in_first[v]; k < n; ++k)
        if (!visit(row[k])) return false;
      return true;
    }
    for (auto i = t.in_first[v]; i < t.in_first[v + 1]; ++i)
      if (!visit(i)) return false;
    return true;
  }
};

struct GraphStorage {
  /// The editable edges; empty while `frozen` holds them.
  EdgeStore edges;
  /// The edges at rest, or null: then `edges` holds them.
  std::shared_ptr<const FrozenEdges> frozen;
  TopologicalRanks ranks;
  /// Cache of Graph::edge_table(); dropped whenever the structure is handed out for changes.
  mutable std::mutex table_mutex;
  std::shared_ptr<const EdgeTable> table;
  /// A dropped table nothing else held, whose memory the next edge_table() refills.
  std::shared_ptr<EdgeTable> spare_table;
  /// The table of the structure this one was copied from, where it had one when copied: the next
  /// edge_table() reads again only the rows that changed since (EdgeStore::changed_since_copy).
  std::shared_ptr<const EdgeTable> copied_table;

  GraphStorage() = default;
  GraphStorage(const GraphStorage& other)
      : edges(other.edges), frozen(other.frozen), ranks(other.ranks), copied_table(other.current_table()) {
    if (frozen) table = frozen->table;
  }
  /// Copies the structure into this one's memory (CowPtr::unshared); its table goes.
  GraphStorage& operator=(const GraphStorage& other) {
    if (this == &other) return *this;
    edges = other.edges;
    frozen = other.frozen;
    ranks = other.ranks;
    drop_table();
    copied_table = other.current_table();
    if (frozen) table = frozen->table;
    return *this;
  }

  /// The edges, read where they are (frozen or in the store): f(neighbor, edge) for each
  /// successor (predecessor) of v in order until f returns false; false when f stopped the walk.
  template <class F>
  bool each_out(TaskId v, F&& f) const {
    if (frozen) return frozen->each_out(v, f);
    return edges.each_out(v, [&](EdgeId e) { return f(edges.target(e), edges.edge(e)); });
  }
  template <class F>
  bool each_in(TaskId v, F&& f) const {
    if (frozen) return frozen->each_in(v, f);
    return edges.each_in(v, [&](EdgeId e) { return f(edges.source(e), edges.edge(e)); });
  }
  std::size_t num_edges() const { return frozen ? frozen->num_edges() : edges.num_edges(); }
  std::size_t out_degree(TaskId v) const { return frozen ? frozen->out_degree(v) : edges.out_degree(v); }
  std::size_t in_degree(TaskId v) const { return frozen ? frozen->in_degree(v) : edges.in_degree(v); }
  /// Brings frozen edges back into the store, for a change. Where another graph holds them too (a
  /// copy's first change), their table is the one the next edge_table() patches; a graph thawing
  /// edges of its own lets the table go as its spare instead (drop_table), so as not to hold two.
  void thaw() {
    if (!frozen) return;
    edges.thaw(*frozen->table, frozen->order.expand(*frozen->table));
    const bool shared = frozen.use_count() > 1 || table.use_count() > 2;  // here: `table` and frozen->table
    if (shared) copied_table = frozen->table;
    frozen.reset();
  }
  /// The table, or null (another thread may be building it).
  std::shared_ptr<const EdgeTable> current_table() const {
    std::lock_guard lock(table_mutex);
    return table;
  }
  /// Drops the table (the structure changes), keeping it as the spare when unshared. Called
  /// only by the graph that has this structure to itself.
  void drop_table() { detail::keep_if_sole(table, spare_table); }
};

}  // namespace daydream
