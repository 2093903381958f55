#pragma once
// What both simulators read: a graph compiled into flat per-task arrays plus its shared CSR edge
// table, and the parts of a result they fill the same way (unit usage, makespan, critical path).
// The event engine (engine.cpp) runs any policy; the static-order pass (static_order.cpp) runs
// graphs whose units leave no choice to a policy and gives the engine's result to the ns.
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daydream/simulate.hpp"
#include "graph/graph_storage.hpp"  // EdgeTable

namespace daydream::sim {

inline constexpr TimeNs kUnset = std::numeric_limits<TimeNs>::min();

struct CompiledGraph {
  /// The graph's own columns (shared, not copied): a simulation of a graph copies no task field.
  std::shared_ptr<const TaskColumns> tasks;
  std::span<const TimeNs> duration, release;
  std::span<const UnitId> unit;
  std::span<const std::uint8_t> removed;
  std::vector<double> priority;  // filled by add_priorities: the engine's queues, and virtual chains' order
  std::shared_ptr<const EdgeTable> edges;  // shared by graph copies with the same structure
  bool by_ready_time = false;
  // GPU occupancy, filled only when some task has a recorded holder (the common path skips it)
  bool occupancy = false;
  std::vector<TaskId> held_by;  // per task: TaskHolds::sm_held_by while that task is live, else kNoTask
  std::vector<double> let_in;   // per task: TaskHolds::sm_let_in
  // The driver lock, filled only when some task has a recorded holder
  bool locks = false;
  std::vector<TaskId> lock_holder;  // per task: TaskHolds::lock_held_by while that call is live, else kNoTask
  /// Per task: the task before it on its thread and the delay between them (kNoTask: none), so a
  /// holder's arrival at its call is known even while the call itself waits for GPU work.
  std::vector<TaskId> thread_previous;
  std::vector<TimeNs> thread_gap;
};

/// Flat arrays of `graph`; throws Error on a duration, release or delay the simulator cannot use.
CompiledGraph compile(const Graph& graph);
/// The policy's priority of every task (what the event engine's ready queues order by).
void add_priorities(const Graph& graph, const SchedulePolicy& policy, CompiledGraph& compiled);

/// Error for a time past the simulator's range (the message every out-of-range time shares).
[[noreturn]] void throw_out_of_range(const std::string& what, TimeNs value, std::string_view limit);

/// Fills removed tasks' times (-1), unit usage, the makespan and the critical path of a result
/// whose start, end and binding are set for every live task.
void complete_result(const Graph& graph, const CompiledGraph& compiled, SimulationResult& result);
/// The makespan (the end of `last`, the task ending last; ties: lowest id) and the critical path,
/// which ends at `last_work`, the last task on a unit that is not background (else at `last`).
void finish_result(TaskId last, TaskId last_work, SimulationResult& result);
/// critical_path_to into `path`, whose memory it reuses (a sweep's result keeps its path's).
void critical_path_into(const SimulationResult& result, TaskId last, std::vector<TaskId>& path);

/// The discrete-event engine: any policy, GPU occupancy and the driver lock.
SimulationResult run_event_engine(const Graph& graph, CompiledGraph compiled);

/// One pass over a topological order, when every unit's live tasks form a chain of direct edges
/// (so no policy has a choice to make) and neither GPU occupancy nor the driver lock applies.
/// Returns false, leaving `result` unspecified, where that does not hold or where the engine
/// would report an error (a cycle, the clock past its range): the caller then runs the engine.
bool run_static_order(const Graph& graph, const CompiledGraph& compiled, SimulationResult& result);
/// The same pass where some units are not chained by edges, for a policy that orders by priority
/// alone (compiled.priority set): each such unit runs its tasks in priority order, and the pass
/// checks afterwards that the engine would have too. False where it would not, or as above.
bool run_static_order_with_chains(const Graph& graph, const CompiledGraph& compiled, SimulationResult& result);

}  // namespace daydream::sim
