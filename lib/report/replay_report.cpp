// Measured vs simulated: iterations (ProfilerStep ranges), the GPU span, units and the
// critical path.
#include <algorithm>
#include <cmath>
#include <limits>

#include "daydream/report/replay.hpp"
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

/// Iterations measured start to start end where the next iteration on their thread starts (when
/// it still has tasks): the wait before a range belongs to the iteration before it.
void end_at_next_starts(const Graph& graph, std::vector<IterationSpan>& spans) {
  const auto& iterations = graph.iterations();
  for (std::size_t k = 0; k + 1 < spans.size(); ++k) {
    const Iteration& it = iterations[spans[k].index];
    const Iteration& next = iterations[spans[k + 1].index];
    if (!it.to_next_start || spans[k + 1].index != spans[k].index + 1) continue;
    if (graph.task(it.first_task).unit != graph.task(next.first_task).unit) continue;
    spans[k].end_ns = std::max(spans[k].end_ns, spans[k + 1].start_ns);
  }
}

}  // namespace

// Transformations may remove or insert tasks in an iteration, so this is a scan.
std::vector<IterationSpan> simulated_iteration_spans(const Graph& graph, const SimulationResult& result) {
  const auto& iterations = graph.iterations();
  std::vector<std::pair<TimeNs, TimeNs>> span(iterations.size(), {std::numeric_limits<TimeNs>::max(), -1});
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (task.removed || task.iteration < 0 || static_cast<std::size_t>(task.iteration) >= iterations.size()) continue;
    const Iteration& it = iterations[static_cast<std::size_t>(task.iteration)];
    if (it.first_task == kNoTask || task.unit != graph.task(it.first_task).unit) continue;
    auto& s = span[static_cast<std::size_t>(task.iteration)];
    s = {std::min(s.first, result.start_ns[t]), std::max(s.second, result.end_ns[t])};
  }
  std::vector<IterationSpan> out;
  for (std::size_t i = 0; i < span.size(); ++i)
    if (span[i].second >= 0) out.push_back({i, span[i].first, span[i].second});
  end_at_next_starts(graph, out);
  return out;
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
  if (rule.form.empty()) return "no iterations: no CPU range is named ProfilerStep#N, step N, iteration N or iter N "
                                "(choose others with --iterations REGEX)";
  const std::string what = rule.pattern.empty() ? "`" + rule.form + "` ranges" : "ranges matching /" + rule.pattern + "/";
  if (rule.measure == IterationMeasure::range) return what + " on " + rule.thread + ", each measured as its range";
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
