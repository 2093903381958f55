#pragma once
// Shortcuts for the scenario tests: apply a spec, read step times, count live tasks by name.
#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "daydream/report/replay.hpp"
#include "daydream/scenario.hpp"
#include "daydream/simulate.hpp"

namespace daydream::test {

inline ScenarioOutcome apply(Graph& graph, const std::string& spec) {
  return apply_scenario(graph, parse_scenario_spec(spec));
}

/// A scenario's notes, one per line, for Catch::Contains.
inline std::string all_notes(const std::vector<std::string>& notes) {
  std::string text;
  for (const auto& n : notes) text += n + "\n";
  return text;
}
inline std::string all_notes(const ScenarioOutcome& outcome) { return all_notes(outcome.notes); }

/// Simulated time of each iteration (trace order), as `daydream replay` reports it.
inline std::vector<TimeNs> step_times(const Graph& graph) {
  std::vector<TimeNs> out;
  for (const auto& it : make_replay_report(graph, simulate(graph)).iterations) out.push_back(it.simulated_ns);
  return out;
}

/// The one iteration's simulated time.
inline TimeNs step_time(const Graph& graph) {
  const auto steps = step_times(graph);
  REQUIRE(steps.size() == 1);
  return steps[0];
}

/// Live tasks with this name.
inline std::size_t live_named(const Graph& graph, std::string_view name) {
  std::size_t n = 0;
  for (TaskId t = 0; t < graph.num_tasks(); ++t) n += !graph.removed(t) && graph.name(t) == name;
  return n;
}

}  // namespace daydream::test
