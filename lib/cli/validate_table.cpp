// `daydream validate`: predict AFTER from BEFORE and a scenario, and compare with what AFTER
// measured (docs/cli.md). The comparison is the library's (daydream/validate.hpp); this file
// loads the two traces and prints the table or the JSON.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "common/paths.hpp"
#include "daydream/error.hpp"
#include "daydream/predict.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/validate.hpp"
#include "report/json_writer.hpp"

namespace daydream::cli {
namespace {

std::string ms_or_dash(TimeNs ns) { return ns >= 0 ? format_ms_us(ns) : "-"; }

/// One run's graph, with the command's --iterations; a missing file fails with its name before
/// any work (a multi-rank directory is allowed, as in predict).
Graph load_run(const ValidateOptions& options, const std::string& path, const std::string& layer_file) {
  path_kind(path);  // Error naming it when it is missing or cannot be read
  CommonOptions run;
  run.traces = {path};
  run.iterations = options.iterations;
  return load_graph(run, layer_file);
}

void print_summary_row(std::string_view label, TimeNs predicted_ns, TimeNs measured_ns, double error) {
  fmt::print("{:<24} {:>14} {:>14} {:>9}\n", label, format_ms_us(predicted_ns), format_ms_us(measured_ns), percent(error));
}

void print_validation(const Validation& v) {
  fmt::print("before: {}\nafter: {}\nscenario: {}\niterations: {}\n\n{:<24} {:>14} {:>14} {:>9}\n", v.before, v.after,
             v.scenario, describe(v.after_rule), "iteration", "predicted ms", "measured ms", "error");
  for (const auto& c : v.iterations)
    fmt::print("{:<24} {:>14} {:>14} {:>9}{}\n", c.name, ms_or_dash(c.predicted_ns), format_ms_us(c.measured_ns),
               percent(c.error()), c.compared ? "" : "  (not compared)");
  fmt::print("\nover {} compared iterations\n", v.compared());
  print_summary_row("median", v.predicted.median_ns, v.measured.median_ns, v.median_error());
  print_summary_row("mean", std::llround(v.predicted.mean_ns), std::llround(v.measured.mean_ns),
                    v.mean_error());
  fmt::print("\nBEFORE replayed: median {} ms (measured {} ms, {}), mean {} ms (measured {} ms, {})\n",
             format_ms_us(v.baseline.median_ns), format_ms_us(v.before_measured.median_ns), percent(v.replay_median_error()),
             format_ms_us(std::llround(v.baseline.mean_ns)), format_ms_us(std::llround(v.before_measured.mean_ns)),
             percent(v.replay_mean_error()));
  fmt::print("predicted speedup: {} (median), {} (mean)\n", speedup_text(v.median_speedup()),
             speedup_text(v.mean_speedup()));
  if (!v.notes.empty()) fmt::print("\nnotes\n");
  for (const auto& note : v.notes) fmt::print("  - {}\n", note);
  if (!v.scenario_notes.empty()) fmt::print("\nscenario notes\n");
  for (const auto& note : v.scenario_notes) fmt::print("  - {}\n", note);
}

}  // namespace

int run_validate(const ValidateOptions& options) {
  if (options.scenario.find('|') != std::string::npos)
    throw Error(fmt::format("validate: '{}' is a grid (a value lists alternatives with '|'); validate takes one "
                            "scenario", options.scenario));
  const ScenarioSpec spec = parse_scenario_spec(options.scenario);
  check_spec(spec);  // a bad spec fails before the traces are read
  const Predictor before(load_run(options, options.before, options.layer_file));
  const Graph after = load_run(options, options.after, "");
  const Validation validation = validate(before, after, spec);
  if (options.json) std::cout << to_json(validation);
  else print_validation(validation);
  return 0;
}

}  // namespace daydream::cli
