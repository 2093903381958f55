#pragma once
// Write access to a graph's tasks for the code that builds graphs (lib/graph, lib/job): the
// public API changes a task only through Graph's named mutators (set_duration, rename, ...) and
// removes one only with Graph::remove, which also takes its edges away.
#include <memory>
#include <utility>

#include "daydream/graph.hpp"

namespace daydream {

struct GraphAccess {
  /// Task `id`'s fields other than its columns (kind, unit, removed, times: set_times), for a
  /// change; what is derived from records is dropped.
  static detail::TaskRecord& record(Graph& graph, TaskId id) { return graph.mutable_record(id); }
  /// Sets a task's duration and release unchecked (a builder's times; the simulator refuses a
  /// graph with times it cannot use, usable_times).
  static void set_times(Graph& graph, TaskId id, TimeNs duration_ns, TimeNs release_ns) {
    graph.check_task(id);
    graph.set_times(id, duration_ns, release_ns);
  }
  static void set_duration(Graph& graph, TaskId id, TimeNs duration_ns) {
    set_times(graph, id, duration_ns, graph.release_ns(id));
  }
  /// Sets Task::bytes (kNone: none).
  static void set_bytes(Graph& graph, TaskId id, std::int64_t bytes) {
    graph.check_task(id);
    graph.forget_task_derived();
    graph.set_bytes(id, bytes);
  }
  /// Sets a task's iteration, keeping what does not read it (the recorded order): record() would
  /// drop it.
  static void set_iteration(Graph& graph, TaskId id, std::int32_t iteration) {
    graph.record_for_change(id).iteration = iteration;
    graph.report_columns_.slot().reset();
  }
  /// Sets task `id`'s holds (TaskHolds; all kNoTask: none).
  static void set_holds(Graph& graph, TaskId id, const TaskHolds& holds);
  /// graph.set_duration(ids[i], durations[i]) for every i, checked first (a TaskSet's bulk changes).
  static void set_durations(Graph& graph, const std::vector<TaskId>& ids, const std::vector<TimeNs>& durations) {
    graph.set_durations(ids, durations);
  }
  /// Room for a graph being built: growing its arrays by doubling page-faults in twice their size.
  /// `tasks` for the columns and the editable edges, which a build brings to their exact size (or
  /// frees), `records` for the task records, whose room stays with the graph.
  static void reserve(Graph& graph, std::size_t tasks, std::size_t records, std::size_t edges) {
    graph.reserve(tasks, records, edges);
  }
  /// The simulator's flat copy of the edges (graph/graph_storage.hpp).
  static std::shared_ptr<const EdgeTable> edge_table(const Graph& graph) { return graph.edge_table(); }
  /// What copies of a base graph would otherwise each compute on first use: its recorded order
  /// (tasks_by_unit) and the topological ranks that insert/connect check new edges against
  /// (throws Error at a cycle, after the other).
  static void prepare_for_copies(Graph& graph) {
    graph.recorded_order();
    graph.ensure_ranks();
  }
  /// Whether the topological ranks that insert and connect check new edges against are current
  /// (else the next check recomputes them: a topological sort of the whole graph).
  static bool ranks_valid(const Graph& graph);
  /// From now on, this graph and its copies keep the edge tables of structures they build more
  /// than once and reuse them (graph/edge_table_cache.hpp): a Predictor's base, whose what-ifs
  /// often repeat one structure with other numbers.
  static void share_edge_tables(Graph& graph);
  /// The simulator's table of the graph's edges built from every row, as edge_table() builds it
  /// for a graph with no table to patch or reuse (tests compare the two).
  static std::shared_ptr<const EdgeTable> edge_table_from_rows(const Graph& graph);
  /// Lets the graph keep its edges at rest in the simulator's table (FrozenEdges, about 5 bytes an
  /// edge) instead of the editable store, until the structure next changes: the end of a build.
  /// Where copies share the structure, nothing changes.
  static void freeze_edges(Graph& graph);
  static bool edges_frozen(const Graph& graph);
  /// The end of a build: the edges frozen (freeze_edges) and the task columns at their exact size
  /// (a builder's appends leave room to grow that a graph at rest never uses).
  static void settle(Graph& graph);
  /// How many edge tables were patched from a source's so far (process-wide, for tests).
  static std::uint64_t edge_table_patches();
  /// The tasks by unit and recorded start (Graph::recorded_order, for tasks_by_unit).
  static std::shared_ptr<const std::vector<TaskId>> recorded_order(const Graph& graph) { return graph.recorded_order(); }
  static std::shared_ptr<const std::vector<TaskId>> recorded_order_if_built(const Graph& graph) {
    return graph.recorded_order_if_built();
  }
  /// The task fields kept as columns (TaskColumns), which the simulator reads.
  static std::shared_ptr<const TaskColumns> task_columns(const Graph& graph) { return graph.task_columns(); }
  /// The per-task fields reports read (graph/graph_storage.hpp), built by `make` on first use.
  template <class Make>
  static std::shared_ptr<const ReportColumns> report_columns(const Graph& graph, Make&& make) {
    return graph.report_columns_.get_or_make(std::forward<Make>(make));
  }
  /// median_launch_call_ns's value for this graph (kNone: no launch call), computed by `make`
  /// once and shared by copies until a task changes.
  template <class Make>
  static TimeNs launch_call_median(const Graph& graph, Make&& make) {
    return *graph.launch_call_median_.get_or_make(std::forward<Make>(make));
  }
  static bool launch_call_median_built(const Graph& graph) { return graph.launch_call_median_.get() != nullptr; }
  static std::shared_ptr<const ReportColumns> report_columns_if_built(const Graph& graph) {
    return graph.report_columns_.get();
  }
  /// Drops the report columns (shared from the graph it was copied from, they do not cover the
  /// tasks added since), so that the next report_columns() builds them for every task.
  static void drop_report_columns(Graph& graph) { graph.report_columns_.slot().reset(); }
  /// The task records (fields other than the columns'): what a reader of one such field of many
  /// tasks reads instead of joining whole tasks (Graph::task).
  static const detail::TaskRecords& records(const Graph& graph) { return graph.records_; }
  /// Whether some page of the graph's task records is not its own: shared with the graph it was
  /// copied from (or with a copy of it), not copied for a change.
  static bool shares_records(const Graph& graph) { return graph.records_.own_pages() < graph.records_.pages(); }
  /// How many pages of task records the graph holds, and how many of them are its own (copied or
  /// made since it was copied; detail::TaskRecords).
  static std::size_t record_pages(const Graph& graph) { return graph.records_.pages(); }
  static std::size_t own_record_pages(const Graph& graph) { return graph.records_.own_pages(); }
};

}  // namespace daydream
