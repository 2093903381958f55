// Compiling a graph into the flat arrays both simulators read, and the result bookkeeping they
// share (compiled_graph.hpp).
#include "simulate/compiled_graph.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "daydream/error.hpp"
#include "graph/graph_access.hpp"

namespace daydream::sim {

namespace {

/// "edge 3 'a' -> 5 'b'": the edge at `index` of the table, for messages.
std::string edge_text(const Graph& graph, const EdgeTable& edges, std::size_t index) {
  const auto from = static_cast<TaskId>(std::upper_bound(edges.first.begin(), edges.first.end(), index) - edges.first.begin() - 1);
  return fmt::format("edge {} '{}' -> {} '{}'", from, graph.name(from), edges.target[index], graph.name(edges.target[index]));
}

/// A delay the simulator cannot use: negative, or beyond kMaxDelayNs.
void check_delay(const Graph& graph, const EdgeTable& edges, std::size_t index) {
  const TimeNs delay = edges.delay_ns[index];
  if (delay < 0) throw Error(fmt::format("{}: negative delay {} ns", edge_text(graph, edges, index), delay));
  if (delay > kMaxDelayNs) throw_out_of_range(edge_text(graph, edges, index) + ": delay", delay, "2^61 ns");
}

TaskId thread_predecessor(const Graph& graph, const std::vector<UnitId>& unit, TaskId t, TimeNs& gap) {
  for (const auto& pred : graph.predecessors(t)) {
    if (pred.edge.type != EdgeType::cpu_sequential || unit[pred.task] != unit[t]) continue;
    gap = pred.edge.delay_ns;
    return pred.task;
  }
  return kNoTask;
}

// Each reads the graph's holds (Graph::held_tasks) and, for locks, the tasks' units.
void compile_locks(const Graph& graph, CompiledGraph& c) {
  c.lock_holder.assign(c.duration.size(), kNoTask);
  c.thread_previous.assign(c.duration.size(), kNoTask);
  c.thread_gap.assign(c.duration.size(), 0);
  for (const auto& [t, holds] : graph.held_tasks()) {
    const TaskId holder = holds.lock_held_by;
    if (c.removed[t] || holder >= c.duration.size() || c.removed[holder]) continue;
    c.lock_holder[t] = holder;
    c.thread_previous[holder] = thread_predecessor(graph, c.tasks->unit, holder, c.thread_gap[holder]);
  }
}

void compile_occupancy(const Graph& graph, CompiledGraph& c) {
  c.held_by.assign(c.duration.size(), kNoTask);
  c.let_in.assign(c.duration.size(), 0.0);
  for (const auto& [t, holds] : graph.held_tasks()) {
    if (holds.sm_held_by >= c.duration.size() || c.removed[holds.sm_held_by]) continue;
    c.held_by[t] = holds.sm_held_by;
    c.let_in[t] = holds.sm_let_in;
  }
}

/// Whether a live task of the graph is held by occupancy (by the driver lock).
bool any_live_hold(const Graph& graph, const CompiledGraph& c, TaskId TaskHolds::*holder) {
  for (const auto& [t, holds] : graph.held_tasks())
    if (!c.removed[t] && holds.*holder != kNoTask) return true;
  return false;
}

/// The Error for a task that is not usable_times(), naming it and the field (a usable duration leaves
/// the release).
[[noreturn]] void refuse_task(const Graph& graph, TaskId t) {
  const Task& task = graph.task(t);
  if (task.duration_ns < 0)
    throw Error(fmt::format("task {} '{}': negative duration {} ns", t, graph.name(t), task.duration_ns));
  if (task.duration_ns > kMaxTaskDurationNs)
    throw_out_of_range(fmt::format("task {} '{}': duration", t, graph.name(t)), task.duration_ns, "one day");
  throw_out_of_range(fmt::format("task {} '{}': release", t, graph.name(t)), task.release_ns, "|t| < 2^62 ns");
}

}  // namespace

void throw_out_of_range(const std::string& what, TimeNs value, std::string_view limit) {
  throw Error(fmt::format("{}: {} ns is beyond what the simulator accepts ({}); no real run has it, so the graph "
                          "or a what-if made it",
                          what, value, limit));
}

CompiledGraph compile(const Graph& graph) {
  CompiledGraph c;
  c.tasks = GraphAccess::task_columns(graph);
  c.duration = c.tasks->duration_ns;
  c.release = c.tasks->release_ns;
  c.unit = c.tasks->unit;
  c.removed = c.tasks->removed;
  if (c.tasks->unusable > 0)  // the columns keep count; the search for the culprit only on failure
    for (TaskId t = 0; t < c.duration.size(); ++t)
      if (!usable_times(c.duration[t], c.release[t])) refuse_task(graph, t);
  c.occupancy = any_live_hold(graph, c, &TaskHolds::sm_held_by);
  c.locks = any_live_hold(graph, c, &TaskHolds::lock_held_by);
  if (c.occupancy) compile_occupancy(graph, c);
  if (c.locks) compile_locks(graph, c);
  c.edges = GraphAccess::edge_table(graph);
  if (c.edges->first_unusable_delay < c.edges->delay_ns.size()) check_delay(graph, *c.edges, c.edges->first_unusable_delay);
  return c;
}

void add_priorities(const Graph& graph, const SchedulePolicy& policy, CompiledGraph& compiled) {
  compiled.by_ready_time = policy.by_ready_time();
  compiled.priority.resize(graph.num_tasks());
  if (dynamic_cast<const TraceOrderPolicy*>(&policy)) {  // its priority(), without joining whole tasks
    const detail::TaskRecords& records = GraphAccess::records(graph);
    for (TaskId t = 0; t < graph.num_tasks(); ++t) compiled.priority[t] = static_cast<double>(records.at(t).recorded_start_ns);
    return;
  }
  for (TaskId t = 0; t < graph.num_tasks(); ++t) compiled.priority[t] = policy.priority(graph, t);
}

void complete_result(const Graph& graph, const CompiledGraph& c, SimulationResult& r) {
  std::vector<std::uint8_t> background(graph.units().size());
  for (std::size_t u = 0; u < background.size(); ++u) background[u] = graph.units()[u].background ? 1 : 0;
  TaskId last = kNoTask, last_work = kNoTask;
  TimeNs last_end = 0, last_work_end = 0;
  for (TaskId t = 0; t < c.duration.size(); ++t) {
    if (c.removed[t]) {
      r.start_ns[t] = r.end_ns[t] = -1;
      continue;
    }
    const TimeNs start = r.start_ns[t], end = r.end_ns[t];
    UnitUsage& u = r.units[c.unit[t]];
    if (u.tasks++ == 0) u.first_start_ns = start;
    u.busy_ns += c.duration[t];
    u.first_start_ns = std::min(u.first_start_ns, start);
    u.last_end_ns = std::max(u.last_end_ns, end);
    if (last == kNoTask || end > last_end) last = t, last_end = end;
    if (!background[c.unit[t]] && (last_work == kNoTask || end > last_work_end)) last_work = t, last_work_end = end;
  }
  finish_result(last, last_work, r);
}

void finish_result(TaskId last, TaskId last_work, SimulationResult& r) {
  r.makespan_ns = last == kNoTask ? 0 : r.end_ns[last];
  const TaskId path_end = last_work != kNoTask ? last_work : last;
  if (path_end != kNoTask) critical_path_into(r, path_end, r.critical_path);
}

}  // namespace daydream::sim
