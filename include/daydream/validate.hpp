#pragma once
/// @file validate.hpp
/// @brief Checks a prediction against a measured run: predict the "after" run from the "before"
/// trace and a scenario, then compare with the iterations the "after" trace measured.
///
/// @code
///   const daydream::Predictor before(daydream::build_graph(daydream::load_trace("baseline.sqlite.gz")));
///   const daydream::Graph after = daydream::build_graph(daydream::load_trace("8workers.sqlite.gz"));
///   auto v = daydream::validate(before, after, daydream::parse_scenario_spec("dataloader_workers:workers=8"));
///   std::cout << "error of the mean: " << v.mean_error() << "\n";
/// @endcode

#include <string>
#include <vector>

#include "daydream/graph.hpp"
#include "daydream/predict.hpp"
#include "daydream/scenario.hpp"

namespace daydream {

/// One iteration position: BEFORE's prediction beside AFTER's measurement at the same index.
struct IterationCheck {
  std::string name;               ///< BEFORE's iteration (AFTER's when BEFORE's has no prediction)
  TimeNs predicted_ns = -1;       ///< BEFORE with the scenario; -1: the iteration has no task left
  TimeNs measured_ns = 0;         ///< AFTER, measured
  TimeNs baseline_ns = -1;        ///< BEFORE replayed unchanged; -1 as predicted_ns
  TimeNs before_measured_ns = 0;  ///< BEFORE, measured
  /// Counted in the statistics: false for an iteration measured as its range while the others
  /// are measured start to start (the last one of either run), or one without a prediction.
  bool compared = true;
  double error() const;  ///< (predicted - measured) / measured; NaN without a prediction
};

/// Median (the lower middle for even counts, as everywhere in daydream) and mean, in ns.
struct TimeSummary {
  TimeNs median_ns = 0;
  double mean_ns = 0;
};

/// A prediction checked against a measured run (`daydream validate`).
struct Validation {
  std::string before, after;  ///< the traces (Graph::source_path)
  std::string scenario;       ///< the spec as written
  IterationRule before_rule, after_rule;
  /// Paired by position over the iterations both runs have (the common prefix).
  std::vector<IterationCheck> iterations;
  /// Over the compared iterations only.
  TimeSummary predicted, measured, baseline, before_measured;
  std::vector<std::string> notes;           ///< how the runs were paired, what was left out
  std::vector<std::string> scenario_notes;  ///< the prediction's own notes

  std::size_t compared() const;   ///< how many iterations the statistics cover
  double median_error() const;    ///< (predicted - measured) / measured, of the medians
  double mean_error() const;      ///< the same, of the means
  double replay_median_error() const;  ///< BEFORE's baseline vs BEFORE's measured, medians
  double replay_mean_error() const;    ///< the same, means
  double median_speedup() const;  ///< baseline median / predicted median
  double mean_speedup() const;    ///< baseline mean / predicted mean
};

/// Predicts `spec` from `before` and compares it, iteration by iteration, with what `after`
/// measured. Throws Error naming the file when either run has no iterations or none can be
/// compared, and Error for a bad spec or one the scenario cannot apply to BEFORE.
Validation validate(const Predictor& before, const Graph& after, const ScenarioSpec& spec);

/// `daydream validate --json` form (field names are a contract; see docs/cli.md).
std::string to_json(const Validation& validation);

}  // namespace daydream
