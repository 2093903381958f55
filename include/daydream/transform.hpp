#pragma once
/// @file transform.hpp
/// @brief The transformation primitives: Select tasks, Scale/Shrink their durations, Insert a
/// task between others, Remove a task (its dependencies bridged), and Schedule policies (see
/// simulate.hpp). Every optimization is a short script over these.
///
/// @code
///   // Automatic mixed precision, as the Daydream paper models it.
///   daydream::Graph amp = graph;  // what-ifs work on copies
///   amp.select(daydream::TaskFilter().kind(daydream::TaskKind::kernel).name("(?i)gemm|wgrad|conv")).scale(1.0 / 3);
///   amp.select(daydream::TaskFilter().kind(daydream::TaskKind::kernel).name_not("(?i)gemm|wgrad|conv")).scale(0.5);
///   auto result = daydream::simulate(amp);
/// @endcode
///
/// Complexity: select is O(tasks) plus one regex match per distinct task name; scale and
/// set_duration are O(selected); remove is O(in-degree x out-degree); insert is O(edges added)
/// when the new task fits the graph's current topological order, otherwise a search bounded by
/// that order. Task ids never change: a removed task keeps its id and is skipped.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "daydream/graph.hpp"

namespace daydream {

/// Which tasks to select. Each criterion narrows the selection (AND); repeating a criterion
/// widens it (`kind(kernel).kind(memcpy)` = kernels or copies). No criterion selects every task.
/// Name patterns are ECMAScript regular expressions searched anywhere in the name; a leading
/// "(?i)" makes one case-insensitive.
class TaskFilter {
 public:
  TaskFilter& kind(TaskKind kind);
  TaskFilter& unit(UnitId unit);
  TaskFilter& unit_kind(UnitKind kind);
  TaskFilter& name(std::string pattern);      ///< task name matches
  TaskFilter& name_not(std::string pattern);  ///< task name does not match
  TaskFilter& op(std::string pattern);        ///< name of the operator around the task (or its launch) matches
  TaskFilter& layer(std::string pattern);     ///< layer name matches (tasks without a layer never match)
  /// Inside a CPU range (Graph::ranges) whose name matches, at any depth: a CPU task whose
  /// recorded start lies in such a range of its thread, a GPU task whose launch call does.
  /// Inserted tasks (no recorded time) never match.
  TaskFilter& within(std::string pattern);
  TaskFilter& phase(Phase phase);
  TaskFilter& iteration(std::int32_t index);
  /// Any further condition; called once per task that passed the other criteria.
  TaskFilter& where(std::function<bool(const Graph&, TaskId)> predicate);

  bool matches(const Graph& graph, TaskId task) const;  ///< slow path; select() caches name matches

 private:
  friend class TaskSelector;
  std::vector<TaskKind> kinds_;
  std::vector<UnitId> units_;
  std::vector<UnitKind> unit_kinds_;
  std::vector<std::string> names_, names_not_, ops_, layers_, within_;
  std::vector<Phase> phases_;
  std::vector<std::int32_t> iterations_;
  std::vector<std::function<bool(const Graph&, TaskId)>> predicates_;
};

/// Throws Error when `pattern` is not a valid TaskFilter pattern (ECMAScript regex, optionally
/// prefixed by "(?i)"); `what` names it in the message ("name", "layer", ...).
void check_pattern(const std::string& pattern, std::string_view what = "name");

/// A set of tasks of one graph (ids in increasing order), changed in bulk.
class TaskSet {
 public:
  TaskSet(Graph& graph, std::vector<TaskId> ids) : graph_(&graph), ids_(std::move(ids)) {}

  std::size_t size() const { return ids_.size(); }
  bool empty() const { return ids_.empty(); }
  const std::vector<TaskId>& ids() const { return ids_; }
  auto begin() const { return ids_.begin(); }
  auto end() const { return ids_.end(); }
  Graph& graph() const { return *graph_; }

  /// Multiplies every duration by `factor` (finite, >= 0), rounding to the nearest ns.
  TaskSet& scale(double factor);
  /// Sets every duration to `duration_ns` (>= 0).
  TaskSet& set_duration(TimeNs duration_ns);
  /// Shortens every duration by `by_ns` (>= 0), not below zero.
  TaskSet& shrink(TimeNs by_ns);
  /// The tasks of this set that also pass `filter`.
  TaskSet filter(const TaskFilter& filter) const;
  /// Removes every task of the set from the graph (see Graph::remove).
  void remove();
  TimeNs total_duration_ns() const;

 private:
  Graph* graph_;
  std::vector<TaskId> ids_;
};

/// A task to insert: where it runs, what it costs, what it depends on and what waits for it.
struct NewTask {
  std::string name;
  TaskKind kind = TaskKind::communication;
  UnitId unit = 0;
  TimeNs duration_ns = 0;
  std::vector<TaskId> after;   ///< predecessors: the new task starts after each of them ends
  std::vector<TaskId> before;  ///< successors: each starts after the new task ends
  /// Edge types; when unset, derived from the two ends (see infer_edge_type).
  std::optional<EdgeType> after_type, before_type;
  TimeNs after_delay_ns = 0, before_delay_ns = 0;
  std::int32_t iteration = -1;  ///< -1: taken from the first predecessor
  Phase phase = Phase::unknown;
};

/// The dependency type an edge between these two tasks naturally has: sequential on one unit,
/// communication when a communication task is at either end, launch for CPU -> GPU, sync for
/// GPU -> CPU, cross_thread between threads, cross_stream between streams.
EdgeType infer_edge_type(const Graph& graph, TaskId from, TaskId to);

}  // namespace daydream
