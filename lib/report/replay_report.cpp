// Measured vs simulated: iterations (ProfilerStep ranges), the GPU span, units and the
// critical path.
#include <algorithm>
#include <cmath>
#include <limits>

#include "daydream/report/replay.hpp"
#include "graph/graph_access.hpp"
#include "graph/graph_storage.hpp"
#include "predict/report_columns.hpp"
#include "report/iteration_rule_json.hpp"
#include "report/json_writer.hpp"

namespace daydream {

double IterationTime::error() const {
  if (measured_ns == 0) return simulated_ns == 0 ? 0.0 : NAN;
  return static_cast<double>(simulated_ns - measured_ns) / static_cast<double>(measured_ns);
}

namespace {

IterationTime gpu_span(const Graph& graph, const SimulationResult& result) {
  TimeNs measured_first = 0, measured_last = 0, simulated_first = 0, simulated_last = 0;
  bool any = false;
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (task.removed || graph.units()[task.unit].kind != UnitKind::gpu_stream) continue;
    const TimeNs recorded_end = task.recorded_start_ns + task.duration_ns;
    if (!any) {
      measured_first = task.recorded_start_ns, measured_last = recorded_end;
      simulated_first = result.start_ns[t], simulated_last = result.end_ns[t];
      any = true;
      continue;
    }
    measured_first = std::min(measured_first, task.recorded_start_ns);
    measured_last = std::max(measured_last, recorded_end);
    simulated_first = std::min(simulated_first, result.start_ns[t]);
    simulated_last = std::max(simulated_last, result.end_ns[t]);
  }
  return {"span", measured_last - measured_first, simulated_last - simulated_first};
}

/// The measured time between the end of iteration `before`'s window and the start of the next
/// one's (0 for windows that run to the next start; for ranges, the profiler's bookkeeping).
TimeNs measured_gap(const Iteration& before, const Iteration& next) {
  return next.measured_start_ns - (before.measured_start_ns + before.measured_ns);
}

/// Ties each window to its neighbour on the same thread: a window measured to the next start ends
/// where the next one starts; a window after a range starts no later than that range's simulated
/// end plus the measured gap, so a wait a scenario adds before the next range's first task
/// counts in the next iteration, never in none.
void link_neighbours(const Graph& graph, const TaskColumns& columns, std::vector<IterationSpan>& spans) {
  const auto& iterations = graph.iterations();
  for (std::size_t k = 0; k + 1 < spans.size(); ++k) {
    const Iteration& it = iterations[spans[k].index];
    const Iteration& next = iterations[spans[k + 1].index];
    if (spans[k + 1].index != spans[k].index + 1) continue;
    if (columns.unit[it.first_task] != columns.unit[next.first_task]) continue;
    if (it.to_next_start)
      spans[k].end_ns = spans[k + 1].start_ns;
    else
      spans[k + 1].start_ns = std::min(spans[k + 1].start_ns, spans[k].end_ns + measured_gap(it, next));
  }
  for (auto& span : spans) span.end_ns = std::max(span.end_ns, span.start_ns);
}

/// Calls visit(t) for every task that may lie on a unit in `units` (others perhaps too): where the
/// graph's recorded order is built (a Predictor's base and its copies), only the tasks of those
/// units, one stretch of that order each, and the tasks added since; else every task.
template <class Visit>
void each_task_on(const Graph& graph, const std::vector<char>& units, Visit&& visit) {
  const auto order = GraphAccess::recorded_order_if_built(graph);
  if (!order) {
    for (TaskId t = 0; t < graph.num_tasks(); ++t) visit(t);
    return;
  }
  const auto columns = GraphAccess::task_columns(graph);
  for (UnitId u = 0; u < units.size(); ++u) {
    if (!units[u]) continue;
    auto at = std::partition_point(order->begin(), order->end(), [&](TaskId t) { return columns->unit[t] < u; });
    for (; at != order->end() && columns->unit[*at] == u; ++at) visit(*at);
  }
  for (auto t = static_cast<TaskId>(order->size()); t < graph.num_tasks(); ++t)
    if (units[columns->unit[t]]) visit(t);
}

}  // namespace

// Transformations may remove or insert tasks in an iteration, so this is a scan. Each window is
// anchored on its thread's tasks by the offsets measured at build (Iteration::open_offset_ns,
// close_offset_ns): the unmodified graph's replay gives the measured times to the ns.
std::vector<IterationSpan> simulated_iteration_spans(const Graph& graph, const SimulationResult& result) {
  const auto& iterations = graph.iterations();
  std::vector<std::pair<TimeNs, TimeNs>> span(iterations.size(), {std::numeric_limits<TimeNs>::max(), -1});
  // Columns where a Predictor's base built them (a sweep reads a few bytes a task), else records.
  const auto columns = GraphAccess::task_columns(graph);
  // Per iteration, the unit of the task that opens it (its marking thread; kNoUnit: none): a task
  // counts toward its iteration on that unit alone. The report columns' list holds for the same
  // units (compared below), so both mark "none" alike.
  std::vector<UnitId> marking_unit(iterations.size(), ReportColumns::kNoUnit);
  std::vector<char> marking(graph.units().size(), 0);  // the units whose tasks open and close iterations
  for (std::size_t i = 0; i < iterations.size(); ++i)
    if (const TaskId first = iterations[i].first_task; first != kNoTask) marking[marking_unit[i] = columns->unit[first]] = 1;
  const auto report = report_columns_if_built(graph);
  auto widen = [&](TaskId t, std::size_t iteration) {
    auto& s = span[iteration];
    s = {std::min(s.first, result.start_ns[t]), std::max(s.second, result.end_ns[t])};
  };
  auto visit = [&](TaskId t) {  // a min and a max: the order of the visits does not matter
    if (columns->removed[t]) return;
    const std::int32_t iteration = report && report->covers(t) ? report->iteration[t] : graph.task(t).iteration;
    if (iteration < 0 || static_cast<std::size_t>(iteration) >= iterations.size()) return;
    if (columns->unit[t] != marking_unit[static_cast<std::size_t>(iteration)]) return;
    widen(t, static_cast<std::size_t>(iteration));
  };
  if (report && report->marking_unit == marking_unit) {  // the tasks that count, listed: those added since
    for (const ReportColumns::MarkedTask& m : report->marked)
      if (!columns->removed[m.task]) widen(m.task, m.iteration);
    for (auto t = static_cast<TaskId>(report->category.size()); t < graph.num_tasks(); ++t) visit(t);
  } else {
    each_task_on(graph, marking, visit);
  }
  std::vector<IterationSpan> out;
  for (std::size_t i = 0; i < span.size(); ++i)
    if (span[i].second >= 0)
      out.push_back({i, span[i].first - iterations[i].open_offset_ns, span[i].second + iterations[i].close_offset_ns});
  link_neighbours(graph, *columns, out);
  return out;
}

std::vector<TimeNs> iteration_durations(const Graph& graph, const std::vector<IterationSpan>& spans) {
  std::vector<TimeNs> times(graph.iterations().size(), -1);
  for (const IterationSpan& span : spans) times[span.index] = span.end_ns - span.start_ns;
  return times;
}

CriticalPathSummary summarize_critical_path(const Graph& graph, const SimulationResult& result) {
  CriticalPathSummary s;
  if (result.critical_path.empty()) return s;
  const TaskId first = result.critical_path.front(), last = result.critical_path.back();
  s.length_ns = result.end_ns[last] - result.start_ns[first];
  s.tasks = static_cast<std::int64_t>(result.critical_path.size());
  TimeNs covered = 0;
  for (TaskId t : result.critical_path) {
    const TimeNs d = result.end_ns[t] - result.start_ns[t];
    s.time_by_kind_ns[static_cast<std::size_t>(graph.task(t).kind)] += d;
    covered += d;
  }
  s.waiting_ns = std::max<TimeNs>(0, s.length_ns - covered);
  return s;
}

ReplayReport make_replay_report(const Graph& graph, const SimulationResult& result) {
  ReplayReport report;
  report.trace = graph.source_path;
  report.iteration_rule = graph.iteration_rule;
  for (const auto& span : simulated_iteration_spans(graph, result)) {
    const Iteration& it = graph.iterations()[span.index];
    report.iterations.push_back({it.name, it.measured_ns, span.end_ns - span.start_ns});
  }
  report.span = gpu_span(graph, result);
  report.simulated_makespan_ns = result.makespan_ns;
  for (UnitId u = 0; u < graph.units().size(); ++u) {
    const UnitUsage& usage = result.units[u];
    const double utilization = result.makespan_ns > 0 ? double(usage.busy_ns) / double(result.makespan_ns) : 0.0;
    report.units.push_back({graph.units()[u].name, graph.units()[u].kind, usage.busy_ns, usage.tasks, utilization});
  }
  report.critical_path = summarize_critical_path(graph, result);
  report.occupancy_holds = result.occupancy_holds;
  report.occupancy_hold_ns = result.occupancy_hold_ns;
  return report;
}

namespace {

void write_iteration(JsonWriter& w, const IterationTime& it) {
  w.begin_object().key("name").value(it.name);
  w.key("measured_ms").milliseconds(it.measured_ns).key("simulated_ms").milliseconds(it.simulated_ns);
  w.key("error").ratio(it.error()).end_object();
}

void write_critical_path(JsonWriter& w, const CriticalPathSummary& cp) {
  w.key("critical_path").begin_object();
  w.key("length_ms").milliseconds(cp.length_ns).key("tasks").value(cp.tasks);
  w.key("time_by_kind_ms").begin_object();
  for (std::size_t k = 0; k < kTaskKindCount; ++k)
    w.key(to_string(static_cast<TaskKind>(k))).milliseconds(cp.time_by_kind_ns[k]);
  w.end_object().key("waiting_ms").milliseconds(cp.waiting_ns).end_object();
}

}  // namespace

void write_iteration_rule(JsonWriter& w, std::string_view key, const IterationRule& rule) {
  w.key(key).begin_object().key("form").value(rule.form).key("measure").value(to_string(rule.measure));
  w.key("thread").value(rule.thread).key("description").value(describe(rule)).end_object();
}

std::string describe(const IterationRule& rule) {
  if (rule.form.empty()) return "no iterations: no CPU range is named ProfilerStep#N, step N, iteration N, iter N or "
                                "Optimizer.step#... (choose others with --iterations REGEX)";
  const std::string what = rule.pattern.empty() ? "`" + rule.form + "` ranges" : "ranges matching /" + rule.pattern + "/";
  if (rule.measure == IterationMeasure::range) return what + " on " + rule.thread + ", each measured as its range";
  if (rule.measure == IterationMeasure::end_to_end)
    return "no step marks: iterations between the ends of `" + rule.form + "` ranges on " + rule.thread +
           ", each from one optimizer step's end to the next's (named by the step that ends it)";
  return what + " on " + rule.thread + ", measured start to start (the last one: its range)";
}

std::string to_json(const ReplayReport& report) {
  JsonWriter w;
  w.begin_object().key("trace").value(report.trace);
  write_iteration_rule(w, "iteration_rule", report.iteration_rule);
  w.key("iterations").begin_array();
  for (const auto& it : report.iterations) write_iteration(w, it);
  w.end_array();
  w.key("span").begin_object().key("measured_ms").milliseconds(report.span.measured_ns);
  w.key("simulated_ms").milliseconds(report.span.simulated_ns).key("error").ratio(report.span.error()).end_object();
  w.key("simulated_makespan_ms").milliseconds(report.simulated_makespan_ns);
  w.key("units").begin_array();
  for (const auto& u : report.units) {
    w.begin_object().key("name").value(u.name).key("kind").value(to_string(u.kind));
    w.key("busy_ms").milliseconds(u.busy_ns).key("tasks").value(u.tasks).key("utilization").ratio(u.utilization);
    w.end_object();
  }
  w.end_array();
  write_critical_path(w, report.critical_path);
  w.key("occupancy").begin_object().key("held_tasks").value(report.occupancy_holds);
  w.key("held_ms").milliseconds(report.occupancy_hold_ns).end_object();
  return w.end_object().str();
}

}  // namespace daydream
