#pragma once
// Lookups used by the graph and simulator tests.

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <optional>
#include <random>
#include <string_view>

#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/simulate.hpp"

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

/// Two results schedule every task alike: times, bindings, causes, unit usage, the critical path
/// and the waits counted (not which simulator ran).
inline void check_same_schedule(const SimulationResult& a, const SimulationResult& b) {
  REQUIRE(a.start_ns == b.start_ns);
  REQUIRE(a.end_ns == b.end_ns);
  REQUIRE(a.binding == b.binding);
  REQUIRE(a.cause == b.cause);
  REQUIRE(a.critical_path == b.critical_path);
  REQUIRE(a.makespan_ns == b.makespan_ns);
  REQUIRE(a.events_processed == b.events_processed);
  CHECK(a.occupancy_holds == b.occupancy_holds);
  CHECK(a.occupancy_hold_ns == b.occupancy_hold_ns);
  CHECK(a.lock_waits == b.lock_waits);
  CHECK(a.lock_wait_ns == b.lock_wait_ns);
  REQUIRE(a.units.size() == b.units.size());
  for (std::size_t u = 0; u < a.units.size(); ++u) {
    CHECK(a.units[u].busy_ns == b.units[u].busy_ns);
    CHECK(a.units[u].tasks == b.units[u].tasks);
    CHECK(a.units[u].first_start_ns == b.units[u].first_start_ns);
    CHECK(a.units[u].last_end_ns == b.units[u].last_end_ns);
  }
}

inline Graph graph_of(const std::string& json, const GraphOptions& options = {}) {
  return build_graph(parse_kineto_json(json, "test.json"), options);
}

/// Random DAG: `units` units whose tasks are chained in id order (as a trace's are), plus random
/// forward edges across units; recorded starts tie often.
inline Graph random_chained_graph(std::mt19937& rng, int units, int tasks) {
  Graph g;
  for (int u = 0; u < units; ++u)
    g.add_unit({u % 2 ? UnitKind::gpu_stream : UnitKind::cpu_thread, fmt::format("u{}", u), 1, u});
  auto pick = [&](int max) { return std::uniform_int_distribution<int>(0, max)(rng); };
  std::vector<TaskId> last(static_cast<std::size_t>(units), kNoTask);
  for (int i = 0; i < tasks; ++i) {
    Task t;
    t.unit = static_cast<UnitId>(pick(units - 1));
    t.kind = t.unit % 2 ? TaskKind::kernel : TaskKind::runtime;
    t.duration_ns = pick(9);
    t.recorded_start_ns = pick(30);
    t.name = g.intern(fmt::format("t{}", i % 7));
    const TaskId id = g.add_task(t);
    TaskId& ahead = last[t.unit];
    if (ahead != kNoTask) g.add_edge(ahead, id, {EdgeType::cpu_sequential, Timing::finish_to_start, pick(3), false});
    ahead = id;
    if (id > 0 && pick(2) == 0) {
      const auto from = static_cast<TaskId>(pick(static_cast<int>(id) - 1));
      if (g.task(from).unit != t.unit) g.add_edge(from, id, {EdgeType::launch, Timing::start_to_start, pick(3), false});
    }
  }
  return g;
}

}  // namespace daydream::test
