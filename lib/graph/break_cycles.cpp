// The safety net after every rule: a graph with a cycle cannot be simulated. The rules only add
// edges that go forward in the recorded time, but each tolerates contradiction_tolerance_ns of
// clock skew, and a few tolerated steps back can still add up to a cycle. Rather than refusing
// the trace, each cycle loses one edge, counted as an error (`cycle_edges_dropped`): an inferred
// one when the cycle has any, and among those the one the recorded times contradict most.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "graph/build_context.hpp"
#include "graph/graph_access.hpp"

namespace daydream {
namespace {

struct CycleEdge {
  TaskId from = kNoTask;
  TaskId to = kNoTask;
  Edge edge;
  TimeNs contradiction_ns = std::numeric_limits<TimeNs>::min();
};

// How far (ns) the edge would push its target's start past where the trace recorded it. A CPU
// task that waits (blocking call, wait inside a range) keeps only its time after the wait, so its
// recorded start is its end minus its duration.
TimeNs contradiction_ns(const BuildContext& ctx, TaskId from, TaskId to, const Edge& edge) {
  const TaskTimes& source = ctx.times[from];
  const TimeNs ready = (edge.timing == Timing::start_to_start ? source.start : source.end) + edge.delay_ns;
  return ready - (ctx.times[to].end - ctx.graph.task(to).duration_ns);
}

// Inferred edges before recorded ones; then the most contradicted; then the first on the cycle.
bool weaker(const CycleEdge& a, const CycleEdge& b) {
  if (a.edge.inferred != b.edge.inferred) return a.edge.inferred;
  return a.contradiction_ns > b.contradiction_ns;
}

// find_cycle() lists the cycle in edge order: cycle[i] -> cycle[i + 1], and back to the front.
CycleEdge weakest_edge(const BuildContext& ctx, const std::vector<TaskId>& cycle) {
  CycleEdge weakest;
  for (std::size_t i = 0; i < cycle.size(); ++i) {
    const TaskId from = cycle[i], to = cycle[(i + 1) % cycle.size()];
    for (const auto& next : ctx.graph.successors(from)) {
      if (next.task != to) continue;
      const CycleEdge candidate{from, to, next.edge, contradiction_ns(ctx, from, to, next.edge)};
      if (weakest.from == kNoTask || weaker(candidate, weakest)) weakest = candidate;
    }
  }
  return weakest;
}

// A woken task's cpu_sequential edge lost its recorded gap (the idle time was waiting): with no
// wait left to explain the gap, it is CPU time again.
void restore_sequential_gap(BuildContext& ctx, TaskId task) {
  for (const auto& pred : ctx.graph.predecessors(task))
    if (pred.edge.type == EdgeType::cpu_sequential)
      ctx.graph.edge(pred.task, task).delay_ns = std::max<TimeNs>(0, ctx.times[task].start - ctx.times[pred.task].end);
  ctx.woken[task] = 0;
}

// A CPU task shortened to its time after the dropped wait gets back what no remaining wait
// explains: its duration becomes the time after the latest remaining cross-unit predecessor.
void restore_waiting_time(BuildContext& ctx, TaskId task) {
  Graph& g = ctx.graph;
  if (g.units()[g.task(task).unit].kind != UnitKind::cpu_thread) return;
  const TaskTimes& recorded = ctx.times[task];
  TimeNs awaited_end = std::numeric_limits<TimeNs>::min();
  for (const auto& pred : g.predecessors(task))
    if (g.task(pred.task).unit != g.task(task).unit && pred.edge.timing == Timing::finish_to_start)
      awaited_end = std::max(awaited_end, ctx.times[pred.task].end);
  if (awaited_end == std::numeric_limits<TimeNs>::min()) restore_sequential_gap(ctx, task);
  GraphAccess::set_duration(g, task, recorded.end - std::clamp(awaited_end, recorded.start, recorded.end));
}

void drop_edge(BuildContext& ctx, const CycleEdge& dropped) {
  Graph& g = ctx.graph;
  g.disconnect(dropped.from, dropped.to);
  if (!is_sequential(dropped.edge.type))
    restore_waiting_time(ctx, dropped.to);
  const std::string edge = fmt::format("{}{} edge '{}' -> '{}', contradicted by {} ns",
                                       dropped.edge.inferred ? "inferred " : "", to_string(dropped.edge.type),
                                       g.name(dropped.from), g.name(dropped.to), dropped.contradiction_ns);
  ctx.count(stats::cycle_edges_dropped, stats::Detail{edge}, g.task(dropped.to).source_event);
}

}  // namespace

void break_cycles(BuildContext& ctx) {
  for (auto cycle = ctx.graph.find_cycle(); !cycle.empty(); cycle = ctx.graph.find_cycle())
    drop_edge(ctx, weakest_edge(ctx, cycle));
}

}  // namespace daydream
