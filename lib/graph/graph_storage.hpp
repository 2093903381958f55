#pragma once
// The Boost.Graph structure behind daydream::Graph: a bidirectional adjacency list whose edge
// bundle is the public Edge record. Task records live beside it in Graph (a plain vector), so
// copies of a graph can share this structure until one of them changes it. vecS keeps vertex ids
// dense and edge order deterministic (insertion order).

#include <boost/graph/adjacency_list.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "daydream/graph.hpp"

namespace daydream {

/// The edges in compressed sparse-row form, for the simulator, which sweeps them many times: the
/// successors of task t are entries [first[t], first[t + 1]). Computed once per edge structure
/// and shared by graph copies that have not changed it.
struct EdgeTable {
  std::vector<std::uint32_t> first;        ///< size num_tasks + 1
  std::vector<TaskId> target;
  std::vector<TimeNs> delay_ns;
  std::vector<std::uint8_t> start_to_start;
  std::vector<std::uint32_t> in_degree;    ///< per task
};

/// A topological rank per task, while valid, so that insert/connect can tell without a search
/// that a new edge closes no cycle (lib/transform/edit.cpp). A function of the structure: copies
/// that share the structure share it, and it is copied with it.
struct TopologicalRanks {
  std::vector<double> rank;
  double next = 0;  ///< above every rank: where a task added at the end goes
  bool valid = false;
};

struct GraphStorage {
  using Adjacency = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property, Edge>;
  Adjacency adjacency;
  TopologicalRanks ranks;
  /// Cache of Graph::edge_table(); dropped whenever the structure is handed out for changes.
  std::mutex table_mutex;
  std::shared_ptr<const EdgeTable> table;

  GraphStorage() = default;
  GraphStorage(const GraphStorage& other) : adjacency(other.adjacency), ranks(other.ranks) {}
};

}  // namespace daydream
