#pragma once
// Lookups used by the graph and simulator tests.

#include <catch2/catch.hpp>

#include <optional>
#include <string_view>

#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"

namespace daydream::test {

inline constexpr TimeNs us = 1000;  // the test traces are written in microseconds

/// The `occurrence`-th task (in id order) with this name.
inline TaskId task_named(const Graph& g, std::string_view name, int occurrence = 0) {
  for (TaskId t = 0; t < g.num_tasks(); ++t)
    if (g.name(t) == name && occurrence-- == 0) return t;
  FAIL("no task named " << name);
  return kNoTask;
}

inline std::optional<Edge> edge_between(const Graph& g, TaskId from, TaskId to) {
  for (const auto& s : g.successors(from))
    if (s.task == to) return s.edge;
  return std::nullopt;
}

inline std::int64_t count_of(const Graph& g, EdgeType type) { return g.edge_counts()[static_cast<std::size_t>(type)]; }

inline Graph graph_of(const std::string& json, const GraphOptions& options = {}) {
  return build_graph(parse_kineto_json(json, "test.json"), options);
}

}  // namespace daydream::test
