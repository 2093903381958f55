#pragma once
// The Boost.Graph structure behind daydream::Graph: a bidirectional adjacency list whose vertex
// and edge bundles are the public Task and Edge records. vecS keeps ids dense and edge order
// deterministic (insertion order).

#include <boost/graph/adjacency_list.hpp>

#include <string>
#include <string_view>
#include <unordered_map>

#include "daydream/graph.hpp"

namespace daydream {

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct GraphStorage {
  using Adjacency = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Task, Edge>;
  Adjacency adjacency;
  std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> string_index;  // into Graph::strings_
  /// A topological rank per task, kept while it stays valid, so transformations can tell in
  /// O(1) that a new edge cannot close a cycle (edges always go to a higher rank).
  std::vector<double> rank;
  double next_rank = 0;  // above every rank given so far
  bool rank_valid = false;
};

}  // namespace daydream
