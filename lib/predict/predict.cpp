// Predictor: a base graph, its baseline simulation, and predictions of scenarios against it.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "common/text.hpp"
#include "daydream/error.hpp"
#include "daydream/predict.hpp"
#include "daydream/report/replay.hpp"
#include "graph/graph_access.hpp"
#include "graph/graph_storage.hpp"
#include "predict/restructured_graphs.hpp"
#include "report/iteration_rule_json.hpp"
#include "report/json_writer.hpp"

namespace daydream {
namespace {

/// Per job iteration (job_iteration_groups): its slowest rank's time, -1 when no rank has it.
/// For the graph of one trace, the iteration times themselves.
std::vector<TimeNs> job_times(const Graph& graph, const std::vector<TimeNs>& times) {
  std::vector<TimeNs> slowest;
  for (const auto& group : job_iteration_groups(graph)) {
    TimeNs worst = -1;
    for (std::size_t i : group) worst = std::max(worst, times[i]);
    slowest.push_back(worst);
  }
  return slowest;
}

TimeNs median_or(std::vector<TimeNs> values, TimeNs fallback) {
  values.erase(std::remove(values.begin(), values.end(), TimeNs{-1}), values.end());
  return values.empty() ? fallback : text::median(values);
}

/// The earliest start to the latest end of the spans; the whole time axis without spans.
std::pair<TimeNs, TimeNs> window_of(const std::vector<IterationSpan>& spans) {
  TimeNs from = std::numeric_limits<TimeNs>::max(), to = std::numeric_limits<TimeNs>::min();
  for (const IterationSpan& span : spans) {
    from = std::min(from, span.start_ns);
    to = std::max(to, span.end_ns);
  }
  if (from > to) return {std::numeric_limits<TimeNs>::min(), std::numeric_limits<TimeNs>::max()};
  return {from, to};
}

/// The units whose work is the run: GPU streams, channels, the threads that launch GPU work (as
/// the simulator's edge table found them) and the threads marking iterations.
std::vector<bool> run_units(const Graph& graph) {
  std::vector<bool> in_run(graph.units().size(), false);
  const auto table = GraphAccess::edge_table(graph);
  const auto& launching = table->launching_units;
  for (UnitId u = 0; u < graph.units().size(); ++u)
    in_run[u] = graph.units()[u].kind != UnitKind::cpu_thread || (u < launching.size() && launching[u]);
  const auto columns = GraphAccess::task_columns(graph);  // 5 bytes a task, not an 80-byte record
  for (const Iteration& it : graph.iterations())
    if (it.first_task != kNoTask) in_run[columns->unit[it.first_task]] = true;
  return in_run;
}

}  // namespace

std::pair<TimeNs, TimeNs> iteration_window(const Graph& graph, const SimulationResult& result) {
  return window_of(simulated_iteration_spans(graph, result));
}

TimeNs run_span_ns(const Graph& graph, const SimulationResult& result) {
  const std::vector<bool> in_run = run_units(graph);
  if (result.units.size() != in_run.size())
    throw Error(fmt::format("run span: the simulation result has {} units, the graph {} (a result of another graph?)",
                            result.units.size(), in_run.size()));
  // Each unit's first start and last end over its live tasks (UnitUsage), not a scan of every task.
  TimeNs first = std::numeric_limits<TimeNs>::max(), last = std::numeric_limits<TimeNs>::min();
  for (UnitId u = 0; u < in_run.size(); ++u) {
    const UnitUsage& usage = result.units[u];
    if (!in_run[u] || usage.tasks == 0) continue;
    first = std::min(first, usage.first_start_ns);
    last = std::max(last, usage.last_end_ns);
  }
  return first > last ? result.makespan_ns : last - first;
}

double Prediction::speedup() const {
  return predicted_median_ns > 0 ? static_cast<double>(baseline_median_ns) / static_cast<double>(predicted_median_ns) : 0.0;
}

namespace {

/// The base graph of many predictions: what its copies would each compute on first use is
/// computed once here (prepare_copy_source). A graph with a cycle has no ranks; its baseline
/// simulation reports the cycle.
Graph ready_for_edits(Graph base) {
  GraphAccess::share_edge_tables(base);  // what-ifs that repeat one structure build its table once
  prepare_copy_source(base);
  return base;
}

}  // namespace

Predictor::Predictor(Graph base, ScenarioRegistry registry)
    : base_(ready_for_edits(std::move(base))),
      registry_(std::move(registry)),
      restructured_(std::make_shared<RestructuredGraphs>()),
      baseline_(simulate(base_)) {
  baseline_iterations_ = job_times(base_, iteration_durations(base_, simulated_iteration_spans(base_, baseline_)));
  baseline_run_ns_ = run_span_ns(base_, baseline_);
  for (const auto& group : job_iteration_groups(base_)) {
    IterationPrediction measured{base_.iterations()[group.front()].name, 0, 0, 0};
    for (std::size_t i : group) measured.measured_ns = std::max(measured.measured_ns, base_.iterations()[i].measured_ns);
    measured_.push_back(std::move(measured));
  }
}

TimeNs Predictor::baseline_median_ns() const { return median_or(baseline_iterations_, baseline_run_ns_); }

Prediction Predictor::predict(const ScenarioSpec& spec) const {
  Graph changed;
  SimulationResult result;
  return predict(spec, changed, result);
}

ScenarioOutcome Predictor::apply(const ScenarioSpec& spec, Graph& changed) const {
  return registry_.apply_with(spec, [&](const Scenario& scenario, const ScenarioParams& params) {
    if (scenario.split) return restructured_->apply(base_, scenario, params, changed);
    changed = base_;
    return scenario.apply(changed, params);
  });
}

Prediction Predictor::predict(const ScenarioSpec& spec, Graph& changed, SimulationResult& result) const {
  ScenarioOutcome outcome = apply(spec, changed);
  if (outcome.policy) simulate_into(result, changed, *outcome.policy);
  else simulate_into(result, changed);
  Prediction p = compare(spec.text(), changed, result);
  p.notes = std::move(outcome.notes);
  return p;
}

Prediction Predictor::compare(std::string label, const Graph& changed, const SimulationResult& result) const {
  Prediction p;
  p.scenario = std::move(label);
  p.iteration_rule = base_.iteration_rule;
  const std::vector<IterationSpan> spans = simulated_iteration_spans(changed, result);  // once per prediction
  const std::vector<TimeNs> predicted = job_times(changed, iteration_durations(changed, spans));
  for (std::size_t i = 0; i < measured_.size(); ++i) {
    if (baseline_iterations_[i] < 0 || i >= predicted.size() || predicted[i] < 0) continue;
    p.iterations.push_back({measured_[i].name, measured_[i].measured_ns, baseline_iterations_[i], predicted[i]});
  }
  p.baseline_total_ns = baseline_run_ns_;
  p.predicted_total_ns = run_span_ns(changed, result);
  p.baseline_median_ns = baseline_median_ns();
  p.predicted_median_ns = median_or(predicted, p.predicted_total_ns);
  const auto [from, to] = window_of(spans);
  p.critical_path = break_down_critical_path(changed, result, from, to);
  if (!changed.gpus().empty()) p.gpu = changed.gpus().front().name, p.gpu_memory_bytes = changed.gpus().front().memory_bytes;
  p.gpus = changed.world_size > 0 ? changed.world_size : 1;
  return p;
}

std::string to_json(const Prediction& p, const std::string& trace_path) {
  JsonWriter w;
  w.begin_object().key("trace").value(trace_path).key("scenario").value(p.scenario);
  write_iteration_rule(w, "iteration_rule", p.iteration_rule);
  w.key("iterations").begin_array();
  for (const auto& it : p.iterations) {
    w.begin_object().key("name").value(it.name);
    w.key("baseline_ms").milliseconds(it.baseline_ns).key("predicted_ms").milliseconds(it.predicted_ns);
    w.key("measured_ms").milliseconds(it.measured_ns).end_object();
  }
  w.end_array();
  w.key("total").begin_object().key("baseline_ms").milliseconds(p.baseline_total_ns);
  w.key("predicted_ms").milliseconds(p.predicted_total_ns).end_object();
  w.key("median").begin_object().key("baseline_ms").milliseconds(p.baseline_median_ns);
  w.key("predicted_ms").milliseconds(p.predicted_median_ns).end_object();
  w.key("speedup").ratio(p.speedup());
  w.key("critical_path").begin_object().key("length_ms").milliseconds(p.critical_path.length_ns);
  w.key("dominant").value(to_string(p.critical_path.dominant()));
  w.key("by_category_ms").begin_object();
  for (std::size_t c = 0; c < kPathCategoryCount; ++c)
    w.key(to_string(static_cast<PathCategory>(c))).milliseconds(p.critical_path.by_category_ns[c]);
  w.end_object().key("by_layer_ms").begin_array();
  for (const auto& [layer, ns] : p.critical_path.by_layer_ns)
    w.begin_object().key("layer").value(layer).key("ms").milliseconds(ns).end_object();
  w.end_array().end_object();
  w.key("notes").begin_array();
  for (const auto& note : p.notes) w.value(note);
  w.end_array();
  return w.end_object().str();
}

}  // namespace daydream
