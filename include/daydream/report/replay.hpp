#pragma once
/// @file replay.hpp
/// @brief Measured vs simulated time of each iteration and of the GPU span.

#include <array>
#include <string>
#include <vector>

#include "daydream/graph.hpp"
#include "daydream/simulate.hpp"

namespace daydream {

struct IterationTime {
  std::string name;
  TimeNs measured_ns = 0;
  TimeNs simulated_ns = 0;
  double error() const;  ///< (simulated - measured) / measured
};

struct UnitReport {
  std::string name;
  UnitKind kind = UnitKind::cpu_thread;
  TimeNs busy_ns = 0;
  std::int64_t tasks = 0;
  double utilization = 0;  ///< busy / simulated makespan
};

struct CriticalPathSummary {
  TimeNs length_ns = 0;
  std::int64_t tasks = 0;
  std::array<TimeNs, kTaskKindCount> time_by_kind_ns{};  ///< task time on the path per TaskKind
  TimeNs waiting_ns = 0;  ///< path length not covered by task durations (delays, gaps)
};

struct ReplayReport {
  std::string trace;
  IterationRule iteration_rule;  ///< which ranges are the iterations, and how they are measured
  std::vector<IterationTime> iterations;
  IterationTime span;  ///< first GPU start to last GPU end ("span")
  TimeNs simulated_makespan_ns = 0;
  std::vector<UnitReport> units;
  CriticalPathSummary critical_path;
  /// GPU occupancy: tasks the model held back for another stream's GPU-filling kernel, and the
  /// total time they waited (SimulationResult::occupancy_holds).
  std::int64_t occupancy_holds = 0;
  TimeNs occupancy_hold_ns = 0;
};

/// Where an iteration ran in a simulation: its window (IterationRule::measure) on the marking
/// thread, anchored on that thread's live tasks of the iteration: it opens Iteration::open_offset_ns
/// before the first starts and closes at the next window's start (measured to the next start) or
/// close_offset_ns after the last ends. This is daydream's one definition of a simulated
/// iteration time, used by replay, predict, sweep, validate, bottleneck and the Python Result.
struct IterationSpan {
  std::size_t index;  ///< into Graph::iterations()
  TimeNs start_ns, end_ns;
};
/// The spans of the iterations that still have tasks, in index order.
std::vector<IterationSpan> simulated_iteration_spans(const Graph& graph, const SimulationResult& result);
/// Per iteration of the graph (in order): its span's simulated time, -1 for one without a span.
std::vector<TimeNs> iteration_durations(const Graph& graph, const std::vector<IterationSpan>& spans);

/// Compares a simulation of `graph` with what the trace measured.
ReplayReport make_replay_report(const Graph& graph, const SimulationResult& result);

/// Summarises a critical path by task kind.
CriticalPathSummary summarize_critical_path(const Graph& graph, const SimulationResult& result);

/// One line saying which ranges are the iterations and how they are measured.
std::string describe(const IterationRule& rule);

/// The `--json` forms printed by the CLI (stable field names, fixed number formatting).
std::string to_json(const ReplayReport& report);

}  // namespace daydream
