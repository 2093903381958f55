#pragma once
// The Boost.Graph structure behind daydream::Graph: a bidirectional adjacency list whose edge
// bundle is the public Edge record. Task records live beside it in Graph (a plain vector), so
// copies of a graph can share this structure until one of them changes it. vecS keeps vertex ids
// dense and edge order deterministic (insertion order).

#include <boost/graph/adjacency_list.hpp>

#include <memory>
#include <mutex>

#include "daydream/graph.hpp"

namespace daydream {

struct GraphStorage {
  using Adjacency = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property, Edge>;
  Adjacency adjacency;
  /// Cache of Graph::edge_table(); dropped whenever the structure is handed out for changes.
  std::mutex table_mutex;
  std::shared_ptr<const EdgeTable> table;

  GraphStorage() = default;
  GraphStorage(const GraphStorage& other) : adjacency(other.adjacency) {}
};

}  // namespace daydream
