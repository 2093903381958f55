// Iterations: named CPU ranges that mark training steps (docs/graph.md, "Roots and iterations").
//
// Which ranges: those whose name the user's pattern finds (GraphOptions::iterations), else the
// first default form with a match, in this order: `ProfilerStep#N` (torch.profiler's
// profiler.step()), `step N`, `iteration N`, `iter N` (NVTX or record_function ranges a training
// loop opens itself; the words in any case); where none marks steps, the optimizer's steps
// (`Optimizer.step#...`). Only the thread holding most of them (the marking thread) counts, and
// a range nested in another match is not a second iteration.
//
// How they are measured: `ProfilerStep#N` ranges nearly abut (the profiler's own bookkeeping,
// 30-70 us, lies between them), so each is its own window. A loop's own range usually opens after
// the next batch was fetched, so the wait for data lies between two ranges: the window of such a
// range runs to the next range's start (start to start), and the last range, which has no next
// start, is measured as its range. Optimizer steps end iterations: a window runs from one step's
// end to the next's (end to end).
//
// CPU tasks belong to the iteration whose window contains their start (on any thread); GPU tasks
// to the iteration of their launch call, or, when not launched in the trace, to the window
// containing their start.
#include <algorithm>
#include <cctype>
#include <map>

#include "common/pattern.hpp"
#include "common/text.hpp"
#include "daydream/error.hpp"
#include "graph/build_context.hpp"
#include "graph/graph_access.hpp"

namespace daydream {

std::string_view to_string(IterationMeasure measure) {
  switch (measure) {
    case IterationMeasure::range: return "range";
    case IterationMeasure::start_to_start: return "start_to_start";
    case IterationMeasure::end_to_end: return "end_to_end";
  }
  return "?";
}

namespace {

struct StepRange {
  TimeNs start, end;  ///< the window (see the file comment)
  UnitId unit;
  std::string name;
  bool to_next_start = false;
};

/// A default form: a word, one separator, a decimal number, nothing else.
struct DefaultForm {
  std::string_view word;     ///< "ProfilerStep#", "step ", ...
  std::string_view label;    ///< "ProfilerStep#N", "step N", ...
  bool ignore_case;
  IterationMeasure measure;
};
constexpr DefaultForm kDefaultForms[] = {
    {"ProfilerStep#", "ProfilerStep#N", false, IterationMeasure::range},
    {"step ", "step N", true, IterationMeasure::start_to_start},
    {"iteration ", "iteration N", true, IterationMeasure::start_to_start},
    {"iter ", "iter N", true, IterationMeasure::start_to_start},
};

bool matches_form(std::string_view name, const DefaultForm& form) {
  if (name.size() <= form.word.size()) return false;
  for (std::size_t i = 0; i < form.word.size(); ++i) {
    const auto a = static_cast<unsigned char>(name[i]), b = static_cast<unsigned char>(form.word[i]);
    if (a != b && !(form.ignore_case && std::tolower(a) == std::tolower(b))) return false;
  }
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(form.word.size()), name.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

/// The CPU ranges (events) of the trace on threads with tasks that `accept` accepts.
template <class Accept>
std::vector<std::uint32_t> matching_ranges(const BuildContext& ctx, Accept accept) {
  std::vector<std::uint32_t> found;
  const auto& events = ctx.trace.events;
  for (std::uint32_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if (!is_cpu_range(e.kind) || ctx.lane_unit[e.lane] == BuildContext::kNoUnit) continue;
    if (accept(e)) found.push_back(i);
  }
  return found;
}

Pattern compile_iteration_pattern(const BuildContext& ctx) {
  try {
    return Pattern(ctx.options.iterations, "iterations");
  } catch (const Error& e) {
    throw Error(ctx.trace.path, Error::kNoEvent, "iterations", e.what());
  }
}

/// torch.optim's record_function name for an optimizer step: `Optimizer.step#SGD.step`, ...
constexpr std::string_view kOptimizerStep = "Optimizer.step#";
constexpr std::string_view kOptimizerStepForm = "Optimizer.step#...";

/// The matching ranges and the rule that found them (pattern, form, measure).
std::vector<std::uint32_t> choose_ranges(const BuildContext& ctx, IterationRule& rule) {
  if (!ctx.options.iterations.empty()) {
    const Pattern re = compile_iteration_pattern(ctx);
    rule = {ctx.options.iterations, ctx.options.iterations, IterationMeasure::start_to_start, ""};
    std::vector<std::int8_t> matched(ctx.trace.strings.size(), -1);  // per interned name: one search each
    return matching_ranges(ctx, [&](const TraceEvent& e) {
      if (matched[e.name] < 0) matched[e.name] = re.search(ctx.trace.name_of(e));
      return matched[e.name] == 1;
    });
  }
  for (const DefaultForm& form : kDefaultForms) {
    auto found = matching_ranges(ctx, [&](const TraceEvent& e) { return matches_form(ctx.trace.name_of(e), form); });
    if (found.empty()) continue;
    rule = {"", std::string(form.label), form.measure, ""};
    return found;
  }
  auto steps = matching_ranges(ctx, [&](const TraceEvent& e) { return text::starts_with(ctx.trace.name_of(e), kOptimizerStep); });
  if (!steps.empty()) rule = {"", std::string(kOptimizerStepForm), IterationMeasure::end_to_end, ""};
  return steps;
}

/// Optimizer steps close iterations: the window of the k-th runs from the end of step k to the
/// end of step k + 1 (named after the step that closes it), so each holds one whole training
/// step and the windows tile the run from the first step's end.
std::vector<StepRange> between_step_ends(const std::vector<StepRange>& marks) {
  std::vector<StepRange> windows;
  for (std::size_t k = 0; k + 1 < marks.size(); ++k)
    windows.push_back({marks[k].end, marks[k + 1].end, marks[k].unit, "optimizer step " + std::to_string(k + 2),
                       k + 2 < marks.size()});
  return windows;
}

/// The thread holding most of the ranges (ties: the lower unit id, for determinism).
UnitId marking_thread(const BuildContext& ctx, const std::vector<std::uint32_t>& ranges) {
  std::map<UnitId, std::size_t> count;
  for (auto i : ranges) ++count[ctx.lane_unit[ctx.trace.events[i].lane]];
  return std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

/// The marking thread's outermost matching ranges, by start, with their windows.
std::vector<StepRange> find_steps(const BuildContext& ctx, IterationRule& rule) {
  const auto ranges = choose_ranges(ctx, rule);
  if (ranges.empty()) return {};
  const UnitId unit = marking_thread(ctx, ranges);
  rule.thread = ctx.graph.units()[unit].name;
  std::vector<StepRange> steps;
  for (auto i : ranges) {
    const auto& e = ctx.trace.events[i];
    if (ctx.lane_unit[e.lane] == unit)
      steps.push_back({ctx.rel(e.start_ns), ctx.rel(e.end_ns()), unit, std::string(ctx.trace.name_of(e))});
  }
  std::stable_sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  std::vector<StepRange> outer;
  for (auto& s : steps)
    if (outer.empty() || s.start >= outer.back().end) outer.push_back(std::move(s));
  if (rule.measure == IterationMeasure::end_to_end) return between_step_ends(outer);
  if (rule.measure == IterationMeasure::start_to_start)
    for (std::size_t i = 0; i + 1 < outer.size(); ++i) outer[i].end = outer[i + 1].start, outer[i].to_next_start = true;
  return outer;
}

std::int32_t step_containing(const std::vector<StepRange>& steps, TimeNs time) {
  auto it = std::upper_bound(steps.begin(), steps.end(), time, [](TimeNs t, const StepRange& s) { return t < s.start; });
  if (it == steps.begin()) return -1;
  --it;
  return time < it->end ? static_cast<std::int32_t>(it - steps.begin()) : -1;
}

// The thread's tasks are in time order, so the step's first and last task are two binary searches.
// The offsets place the window's edges from its tasks as simulated_iteration_spans reads them:
// from the first task's start and from the latest end among the window's tasks.
Iteration make_iteration(const BuildContext& ctx, const StepRange& step) {
  Iteration it{step.name, step.start, step.end - step.start, kNoTask, kNoTask, step.to_next_start};
  const auto& tasks = ctx.unit_tasks[step.unit];
  const auto starts_before = [&](TaskId t, TimeNs time) { return ctx.times[t].start < time; };
  const auto first = std::lower_bound(tasks.begin(), tasks.end(), step.start, starts_before);
  const auto last = std::lower_bound(first, tasks.end(), step.end, starts_before);
  if (first == last) return it;
  it.first_task = *first;
  it.last_task = *std::prev(last);
  TimeNs latest_end = ctx.times[*first].end;
  for (auto t = first; t != last; ++t) latest_end = std::max(latest_end, ctx.times[*t].end);
  it.open_offset_ns = ctx.times[*first].start - step.start;
  it.close_offset_ns = step.end - latest_end;
  return it;
}

}  // namespace

void assign_iterations(BuildContext& ctx) {
  Graph& g = ctx.graph;
  const auto steps = find_steps(ctx, g.iteration_rule);
  for (const auto& step : steps) g.iterations().push_back(make_iteration(ctx, step));
  if (steps.empty() && !ctx.options.iterations.empty()) ctx.count(stats::iteration_pattern_unmatched);
  if (steps.empty()) return;
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    if (g.units()[g.task(t).unit].kind == UnitKind::cpu_thread || ctx.launched_by[t] == kNoTask)
      GraphAccess::set_iteration(g, t, step_containing(steps, ctx.times[t].start));
  }
  for (TaskId t = 0; t < g.num_tasks(); ++t)
    if (ctx.launched_by[t] != kNoTask) GraphAccess::set_iteration(g, t, g.task(ctx.launched_by[t]).iteration);
}

std::vector<std::vector<std::size_t>> job_iteration_groups(const Graph& graph) {
  const auto& iterations = graph.iterations();
  if (!graph.job()) {
    std::vector<std::vector<std::size_t>> groups;
    for (std::size_t i = 0; i < iterations.size(); ++i) groups.push_back({i});
    return groups;
  }
  // The k-th iteration of each rank (iterations are stored rank after rank, in order).
  std::map<std::int64_t, std::size_t> seen;  // rank -> iterations so far
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    const TaskId first = iterations[i].first_task;
    const std::int64_t rank = first == kNoTask ? kNone : graph.units()[graph.task(first).unit].rank;
    const std::size_t k = seen[rank]++;
    if (groups.size() <= k) groups.resize(k + 1);
    groups[k].push_back(i);
  }
  return groups;
}

}  // namespace daydream
