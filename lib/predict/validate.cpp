// validate: a prediction from one trace checked against the iterations another trace measured.
#include "daydream/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/text.hpp"
#include "daydream/error.hpp"
#include "daydream/report/replay.hpp"
#include "report/iteration_rule_json.hpp"
#include "report/json_writer.hpp"

namespace daydream {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double relative_error(double value, double reference) {
  return reference > 0 ? (value - reference) / reference : kNaN;
}

double ratio(double numerator, double denominator) { return denominator > 0 ? numerator / denominator : kNaN; }

/// One (job) iteration of a graph as it was measured: for a job graph the slowest rank's time.
/// `partial`: the last range of a run measured start to start (among others), measured as its
/// range, so it covers less than an iteration (no wait for the next batch).
struct MeasuredIteration {
  std::string name;
  TimeNs measured_ns = 0;
  bool partial = false;
};

std::vector<MeasuredIteration> measured_iterations(const Graph& graph) {
  std::vector<MeasuredIteration> out;
  const auto groups = job_iteration_groups(graph);
  const bool start_to_start = graph.iteration_rule.measure == IterationMeasure::start_to_start && groups.size() > 1;
  for (const auto& group : groups) {
    const Iteration& first = graph.iterations()[group.front()];
    MeasuredIteration it{first.name, 0, start_to_start && !first.to_next_start};
    for (std::size_t i : group) it.measured_ns = std::max(it.measured_ns, graph.iterations()[i].measured_ns);
    out.push_back(std::move(it));
  }
  return out;
}

std::string trace_name(const std::string& path) { return path.empty() ? std::string("<memory>") : path; }

void require_iterations(const Graph& graph, const char* role) {
  if (!graph.iterations().empty()) return;
  throw Error(trace_name(graph.source_path), Error::kNoEvent, "",
              fmt::format("{} run: {}", role, describe(graph.iteration_rule)));
}

/// The checks at each position of the common prefix; the prediction's iterations (which skip
/// those left without tasks) are found by name, in order.
std::vector<IterationCheck> pair_iterations(const std::vector<MeasuredIteration>& before,
                                            const std::vector<MeasuredIteration>& after, const Prediction& p) {
  std::vector<IterationCheck> checks;
  std::size_t next = 0;  // into p.iterations
  for (std::size_t i = 0; i < std::min(before.size(), after.size()); ++i) {
    IterationCheck check;
    check.name = before[i].name;
    check.measured_ns = after[i].measured_ns;
    check.before_measured_ns = before[i].measured_ns;
    if (next < p.iterations.size() && p.iterations[next].name == before[i].name) {
      check.predicted_ns = p.iterations[next].predicted_ns;
      check.baseline_ns = p.iterations[next++].baseline_ns;
    }
    check.compared = check.predicted_ns >= 0 && !before[i].partial && !after[i].partial;
    checks.push_back(std::move(check));
  }
  return checks;
}

TimeSummary summarize(const std::vector<IterationCheck>& checks, TimeNs IterationCheck::*field) {
  std::vector<TimeNs> values;
  for (const auto& c : checks)
    if (c.compared) values.push_back(c.*field);
  TimeSummary s;
  if (values.empty()) return s;
  s.mean_ns = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  s.median_ns = text::median(values);
  return s;
}

/// Notes on how the runs were paired: counts, names, iterations left out, iteration rules.
std::vector<std::string> pairing_notes(const Validation& v, const std::vector<MeasuredIteration>& before,
                                       const std::vector<MeasuredIteration>& after) {
  std::vector<std::string> notes;
  if (before.size() != after.size())
    notes.push_back(fmt::format("BEFORE has {} iterations and AFTER {}: compared over the first {}", before.size(),
                                after.size(), v.iterations.size()));
  std::size_t renamed = 0, unpredicted = 0;
  for (std::size_t i = 0; i < v.iterations.size(); ++i) {
    renamed += before[i].name != after[i].name;
    unpredicted += v.iterations[i].predicted_ns < 0;
  }
  if (renamed > 0) notes.push_back(fmt::format("{} iterations are named differently in the two runs (paired by position)", renamed));
  if (unpredicted > 0) notes.push_back(fmt::format("{} iterations have no task left in the prediction: not compared", unpredicted));
  for (const auto& c : v.iterations)
    if (!c.compared && c.predicted_ns >= 0)
      notes.push_back(fmt::format("iterations are measured start to start; '{}' is measured as its range (no next "
                                  "start) in one run: left out of the statistics", c.name));
  const auto same_rule = [](const IterationRule& a, const IterationRule& b) {  // threads differ between runs
    return a.form == b.form && a.pattern == b.pattern && a.measure == b.measure;
  };
  if (!same_rule(v.before_rule, v.after_rule))
    notes.push_back(fmt::format("the runs mark iterations differently: BEFORE {}; AFTER {}", describe(v.before_rule),
                                describe(v.after_rule)));
  return notes;
}

void write_summary(JsonWriter& w, std::string_view key, const TimeSummary& s) {
  w.key(key).begin_object().key("median_ms").milliseconds(s.median_ns);
  w.key("mean_ms").milliseconds(std::llround(s.mean_ns)).end_object();
}

void write_errors(JsonWriter& w, std::string_view key, double median, double mean) {
  w.key(key).begin_object().key("median").ratio(median).key("mean").ratio(mean).end_object();
}

void write_time_or_null(JsonWriter& w, std::string_view key, TimeNs ns) {
  w.key(key);
  if (ns >= 0) w.milliseconds(ns);
  else w.ratio(kNaN);  // null
}

void write_strings(JsonWriter& w, std::string_view key, const std::vector<std::string>& values) {
  w.key(key).begin_array();
  for (const auto& s : values) w.value(s);
  w.end_array();
}

}  // namespace

double IterationCheck::error() const {
  return predicted_ns < 0 ? kNaN : relative_error(static_cast<double>(predicted_ns), static_cast<double>(measured_ns));
}

std::size_t Validation::compared() const {
  return static_cast<std::size_t>(std::count_if(iterations.begin(), iterations.end(), [](const auto& c) { return c.compared; }));
}
double Validation::median_error() const {
  return relative_error(static_cast<double>(predicted.median_ns), static_cast<double>(measured.median_ns));
}
double Validation::mean_error() const { return relative_error(predicted.mean_ns, measured.mean_ns); }
double Validation::replay_median_error() const {
  return relative_error(static_cast<double>(baseline.median_ns), static_cast<double>(before_measured.median_ns));
}
double Validation::replay_mean_error() const { return relative_error(baseline.mean_ns, before_measured.mean_ns); }
double Validation::median_speedup() const {
  return ratio(static_cast<double>(baseline.median_ns), static_cast<double>(predicted.median_ns));
}
double Validation::mean_speedup() const { return ratio(baseline.mean_ns, predicted.mean_ns); }

Validation validate(const Predictor& before, const Graph& after, const ScenarioSpec& spec) {
  require_iterations(before.base(), "BEFORE");
  require_iterations(after, "AFTER");
  Prediction prediction = before.predict(spec);
  Validation v;
  v.before = before.base().source_path;
  v.after = after.source_path;
  v.scenario = prediction.scenario;
  v.before_rule = before.base().iteration_rule;
  v.after_rule = after.iteration_rule;
  const auto before_runs = measured_iterations(before.base());
  const auto after_runs = measured_iterations(after);
  v.iterations = pair_iterations(before_runs, after_runs, prediction);
  if (v.compared() == 0)
    throw Error(trace_name(after.source_path), Error::kNoEvent, "",
                fmt::format("no iteration to compare with BEFORE ({}): {} iterations here, {} there, none predicted "
                            "and measured start to start in both", trace_name(v.before), after_runs.size(),
                            before_runs.size()));
  v.predicted = summarize(v.iterations, &IterationCheck::predicted_ns);
  v.measured = summarize(v.iterations, &IterationCheck::measured_ns);
  v.baseline = summarize(v.iterations, &IterationCheck::baseline_ns);
  v.before_measured = summarize(v.iterations, &IterationCheck::before_measured_ns);
  v.notes = pairing_notes(v, before_runs, after_runs);
  v.scenario_notes = std::move(prediction.notes);
  return v;
}

std::string to_json(const Validation& v) {
  JsonWriter w;
  w.begin_object().key("before").value(v.before).key("after").value(v.after).key("scenario").value(v.scenario);
  write_iteration_rule(w, "iteration_rule", v.after_rule);
  write_iteration_rule(w, "before_iteration_rule", v.before_rule);
  w.key("iterations").begin_array();
  for (const auto& c : v.iterations) {
    w.begin_object().key("name").value(c.name);
    write_time_or_null(w, "predicted_ms", c.predicted_ns);
    w.key("measured_ms").milliseconds(c.measured_ns).key("error").ratio(c.error());
    write_time_or_null(w, "baseline_ms", c.baseline_ns);
    w.key("before_measured_ms").milliseconds(c.before_measured_ns).key("compared").value(c.compared).end_object();
  }
  w.end_array().key("compared").value(static_cast<std::int64_t>(v.compared()));
  write_summary(w, "predicted", v.predicted);
  write_summary(w, "measured", v.measured);
  write_errors(w, "error", v.median_error(), v.mean_error());
  write_summary(w, "baseline", v.baseline);
  write_summary(w, "before_measured", v.before_measured);
  write_errors(w, "replay_error", v.replay_median_error(), v.replay_mean_error());
  write_errors(w, "speedup", v.median_speedup(), v.mean_speedup());
  write_strings(w, "notes", v.notes);
  write_strings(w, "scenario_notes", v.scenario_notes);
  return w.end_object().str();
}

}  // namespace daydream
