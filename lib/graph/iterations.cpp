// Iterations: each `ProfilerStep#N` range is one measured iteration. CPU tasks belong to the
// step whose range contains their start (on any thread); GPU tasks to the step of their launch
// call, or, when not launched in the trace, to the step containing their start.
#include <algorithm>

#include "common/text.hpp"
#include "graph/build_context.hpp"

namespace daydream {
namespace {

struct StepRange {
  TimeNs start, end;
  UnitId unit;
  std::string name;
};

std::vector<StepRange> find_steps(const BuildContext& ctx) {
  std::vector<StepRange> steps;
  for (const auto& e : ctx.trace.events) {
    if (!is_cpu_range(e.kind) || !text::starts_with(ctx.trace.name_of(e), "ProfilerStep#")) continue;
    steps.push_back({ctx.rel(e.start_ns), ctx.rel(e.end_ns()), ctx.lane_unit[e.lane], std::string(ctx.trace.name_of(e))});
  }
  std::sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  return steps;
}

std::int32_t step_containing(const std::vector<StepRange>& steps, TimeNs time) {
  auto it = std::upper_bound(steps.begin(), steps.end(), time, [](TimeNs t, const StepRange& s) { return t < s.start; });
  if (it == steps.begin()) return -1;
  --it;
  return time < it->end ? static_cast<std::int32_t>(it - steps.begin()) : -1;
}

// The thread's tasks are in time order, so the step's first and last task are two binary searches.
Iteration make_iteration(const BuildContext& ctx, const StepRange& step) {
  Iteration it{step.name, step.start, step.end - step.start, kNoTask, kNoTask};
  const auto& tasks = ctx.unit_tasks[step.unit];
  const auto starts_before = [&](TaskId t, TimeNs time) { return ctx.times[t].start < time; };
  const auto first = std::lower_bound(tasks.begin(), tasks.end(), step.start, starts_before);
  const auto last = std::lower_bound(first, tasks.end(), step.end, starts_before);
  if (first == last) return it;
  it.first_task = *first;
  it.last_task = *std::prev(last);
  return it;
}

}  // namespace

void assign_iterations(BuildContext& ctx) {
  const auto steps = find_steps(ctx);
  for (const auto& step : steps) ctx.graph.iterations().push_back(make_iteration(ctx, step));
  if (steps.empty()) return;
  Graph& g = ctx.graph;
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    if (g.units()[g.task(t).unit].kind == UnitKind::cpu_thread || ctx.launched_by[t] == kNoTask)
      g.task(t).iteration = step_containing(steps, ctx.times[t].start);
  }
  for (TaskId t = 0; t < g.num_tasks(); ++t)
    if (ctx.launched_by[t] != kNoTask) g.task(t).iteration = g.task(ctx.launched_by[t]).iteration;
}

}  // namespace daydream
