#pragma once
// Write access to a graph's tasks for the code that builds graphs (lib/graph, lib/job): the
// public API changes a task only through Graph's named mutators (set_duration, rename, ...) and
// removes one only with Graph::remove, which also takes its edges away.
#include <memory>

#include "daydream/graph.hpp"

namespace daydream {

struct GraphAccess {
  static Task& task(Graph& graph, TaskId id) { return graph.mutable_task(id); }
  /// Room for a graph being built: growing its arrays by doubling page-faults in twice their size.
  static void reserve(Graph& graph, std::size_t tasks, std::size_t edges) { graph.reserve(tasks, edges); }
  /// The simulator's flat copy of the edges (graph/graph_storage.hpp).
  static std::shared_ptr<const EdgeTable> edge_table(const Graph& graph) { return graph.edge_table(); }
  /// Computes the topological ranks that insert/connect check new edges against, so that copies
  /// made afterwards inherit them instead of each sorting the graph on its first insert.
  static void prepare_ranks(Graph& graph) { graph.ensure_ranks(); }
  /// The simulator's columns of task fields (graph/graph_storage.hpp).
  static std::shared_ptr<const TaskColumns> task_columns(const Graph& graph) { return graph.task_columns(); }
};

}  // namespace daydream
