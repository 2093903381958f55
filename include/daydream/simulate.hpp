#pragma once
/// @file simulate.hpp
/// @brief The discrete-event simulator: replays a (possibly transformed) graph and predicts when
/// every task starts and ends.
///
/// Rules: each unit runs one task at a time; a task becomes ready when all its dependencies are
/// met (finish-to-start edges at source end + delay, start-to-start edges at source start +
/// delay, tasks without predecessors at their release time); a free unit starts the ready task
/// its SchedulePolicy ranks first, except that SM work waits while a kernel of another stream
/// of its GPU fills the GPU and still dispatches blocks (GPU occupancy, docs/simulator.md). Start times are derived, never copied from the trace. Ties are
/// broken by (time, event sequence, task id), so a run is deterministic.
///
/// @code
///   daydream::SimulationResult result = daydream::simulate(graph);
///   std::cout << result.makespan_ns << " ns\n";
/// @endcode

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "daydream/graph.hpp"

namespace daydream {

/// Decides which ready task a free unit runs next: the one with the lowest priority value
/// (ties go to the lower task id). Values are computed once per simulation.
class SchedulePolicy {
 public:
  virtual ~SchedulePolicy() = default;
  virtual std::string name() const = 0;
  virtual double priority(const Graph& graph, TaskId task) const = 0;
  /// When true, ready tasks are ordered first by the time they became ready, then by priority.
  virtual bool by_ready_time() const { return false; }
};

/// Default: trace order (a task's recorded start; tasks added later go by id).
class TraceOrderPolicy final : public SchedulePolicy {
 public:
  std::string name() const override { return "trace_order"; }
  double priority(const Graph& graph, TaskId task) const override;
};

/// Priority from a user function (lower runs first).
class PriorityPolicy final : public SchedulePolicy {
 public:
  using KeyFn = std::function<double(const Graph&, TaskId)>;
  explicit PriorityPolicy(KeyFn key, std::string name = "priority")
      : key_(std::move(key)), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  double priority(const Graph& graph, TaskId task) const override { return key_(graph, task); }

 private:
  KeyFn key_;
  std::string name_;
};

struct UnitUsage {
  TimeNs busy_ns = 0;       ///< sum of task durations
  std::int64_t tasks = 0;
  TimeNs first_start_ns = 0;
  TimeNs last_end_ns = 0;
};

/// Dispatches ready tasks in the order they became ready (ties by trace order).
class FifoPolicy final : public SchedulePolicy {
 public:
  std::string name() const override { return "fifo"; }
  double priority(const Graph& graph, TaskId task) const override;
  bool by_ready_time() const override { return true; }
};

/// Priorities given as a vector (one per task id); for bindings that compute keys up front.
class PrecomputedPolicy final : public SchedulePolicy {
 public:
  PrecomputedPolicy(std::vector<double> priorities, std::string name = "precomputed")
      : priorities_(std::move(priorities)), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  double priority(const Graph& graph, TaskId task) const override;

 private:
  std::vector<double> priorities_;
  std::string name_;
};

/// `priorities` for the tasks they list (lower runs first), trace order (TraceOrderPolicy) for every
/// other task of `graph`: the policy of Graph.simulate(schedule={task: priority}) in Python.
PrecomputedPolicy priorities_over_trace_order(const Graph& graph, const std::unordered_map<TaskId, double>& priorities,
                                              std::string name);

/// Why a task started when it did: the constraint that was met last.
enum class StartCause : std::uint8_t { release, dependency, unit_busy };

struct SimulationResult {
  std::vector<TimeNs> start_ns;  ///< per task, relative to the graph origin (-1: removed task, not run)
  std::vector<TimeNs> end_ns;
  std::vector<TaskId> binding;   ///< per task: the task whose end/start it waited for last, or kNoTask
  std::vector<StartCause> cause;
  std::vector<UnitUsage> units;  ///< per unit
  TimeNs makespan_ns = 0;        ///< end of the last task
  /// From a first task to the last-ending task of a unit that is not a background thread.
  std::vector<TaskId> critical_path;
  std::uint64_t events_processed = 0;
  /// GPU occupancy: tasks whose start waited for a kernel of another stream that filled the
  /// GPU (their binding is that kernel), and the total of those waits.
  std::int64_t occupancy_holds = 0;
  TimeNs occupancy_hold_ns = 0;
  /// The driver lock: calls that waited for another thread's call holding it (TaskHolds::lock_held_by;
  /// their binding is that call), and the total of those waits.
  std::int64_t lock_waits = 0;
  TimeNs lock_wait_ns = 0;
  /// Which simulator ran: true for the static-order pass (see SimulationMethod), whose result is
  /// the event engine's to the ns; events_processed then counts the events the engine would have.
  bool static_order = false;
};

/// Which simulator runs.
/// - `automatic`: a single pass over a topological order (O(tasks + edges), no event queue)
///   wherever it gives the event engine's result: every unit's live tasks are chained by direct
///   edges, so no policy ever chooses between two ready tasks (what a graph built from a trace
///   is, and stays under durations-only what-ifs), or, under a policy that orders by priority
///   alone, the units that are not (collective channels) run in priority order and a check after
///   the pass shows the engine would have done the same; and no task waits for GPU occupancy or
///   the driver lock. Elsewhere the event engine.
/// - `event_engine`: always the event engine (for comparisons and benchmarks).
enum class SimulationMethod : std::uint8_t { automatic, event_engine };

/// Simulates the whole graph. Throws Error naming the stuck tasks when some can never run
/// (a cycle), or when a duration or delay is negative.
SimulationResult simulate(const Graph& graph, const SchedulePolicy& policy = TraceOrderPolicy{},
                          SimulationMethod method = SimulationMethod::automatic);
/// simulate() into `result`, whose memory it reuses (a sweep's result per thread): every field
/// ends as simulate() would return it.
void simulate_into(SimulationResult& result, const Graph& graph, const SchedulePolicy& policy = TraceOrderPolicy{},
                   SimulationMethod method = SimulationMethod::automatic);

/// Walks back from `last` along binding constraints.
std::vector<TaskId> critical_path_to(const SimulationResult& result, TaskId last);

}  // namespace daydream
