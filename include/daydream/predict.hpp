#pragma once
/// @file predict.hpp
/// @brief Predictions of scenarios against one base graph: per-iteration baseline vs predicted
/// time, the critical path broken down by category and by layer, batch sweeps on all cores, and
/// the Perfetto (Chrome trace) timeline export.
///
/// @code
///   const daydream::Predictor predictor(daydream::build_graph(daydream::load_trace(path)));
///   auto p = predictor.predict(daydream::parse_scenario_spec("dataloader_workers:workers=4"));
///   std::cout << p.baseline_median_ns << " -> " << p.predicted_median_ns << " ns\n";
/// @endcode

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daydream/graph.hpp"
#include "daydream/scenario.hpp"
#include "daydream/simulate.hpp"

namespace daydream {

class RestructuredGraphs;  // predict/restructured_graphs.hpp

/// What the time on a critical path was spent on ("what is the bottleneck?").
enum class PathCategory : std::uint8_t {
  compute,          ///< GPU kernels, copies and memsets
  cpu,              ///< framework and Python work on CPU threads (not data loading)
  launch_overhead,  ///< CUDA API calls that do not wait (kernel launches, async copies)
  communication,    ///< collectives and inserted communication tasks
  data_loading,     ///< main-thread work inside the DataLoader (phase data_loading)
  synchronization,  ///< blocking CUDA calls waiting for the GPU
  latency,          ///< path time no task covers: launch latencies, wake-ups, gaps
};
inline constexpr std::size_t kPathCategoryCount = 7;
std::string_view to_string(PathCategory category);
/// The category of a task's time on a critical path.
PathCategory path_category(const Graph& graph, TaskId task);

struct PathBreakdown {
  TimeNs length_ns = 0;
  std::array<TimeNs, kPathCategoryCount> by_category_ns{};
  /// Task time per layer (tasks without a layer under "(no layer)"), longest first.
  std::vector<std::pair<std::string, TimeNs>> by_layer_ns;
  PathCategory dominant() const;  ///< the category with the most time
};

/// Breaks down the part of `result`'s critical path that lies inside [from_ns, to_ns) (the whole
/// path by default).
PathBreakdown break_down_critical_path(const Graph& graph, const SimulationResult& result,
                                       TimeNs from_ns = std::numeric_limits<TimeNs>::min(),
                                       TimeNs to_ns = std::numeric_limits<TimeNs>::max());

/// The part of a simulation the iterations cover: the earliest start to the latest end of their
/// simulated windows (simulated_iteration_spans); the whole time axis (lowest to highest TimeNs)
/// when the graph marks none.
std::pair<TimeNs, TimeNs> iteration_window(const Graph& graph, const SimulationResult& result);

/// The whole run of a simulation (predict's `total`): first start to last end of the tasks on GPU
/// streams and channels and on the CPU threads that launch GPU work or mark iterations. A thread
/// that only serves or polls (DataLoader workers, an NCCL watchdog) counts through what it holds
/// back on those, never by running past them. The makespan when no such task is left.
TimeNs run_span_ns(const Graph& graph, const SimulationResult& result);

/// One iteration; for a multi-rank job graph (job.hpp), the job's: the slowest rank's time.
struct IterationPrediction {
  std::string name;
  TimeNs measured_ns = 0;   ///< from the trace
  TimeNs baseline_ns = 0;   ///< replay of the unmodified graph
  TimeNs predicted_ns = 0;  ///< simulation of the scenario
};

struct Prediction {
  std::string scenario;  ///< the spec as written (ScenarioSpec::text)
  IterationRule iteration_rule;  ///< the base graph's: which ranges are the iterations, how measured
  std::vector<IterationPrediction> iterations;
  /// Whole simulated run (run_span_ns), baseline and predicted.
  TimeNs baseline_total_ns = 0, predicted_total_ns = 0;
  /// Median over iterations (IterationRule), the whole run (run_span_ns) when the trace marks none.
  TimeNs baseline_median_ns = 0, predicted_median_ns = 0;
  double speedup() const;  ///< baseline_median / predicted_median
  PathBreakdown critical_path;  ///< of the predicted run
  std::vector<std::string> notes;
  /// The GPU the predicted job runs on, as its graph records it (the `gpu` scenario's target, else
  /// the trace's GPU; "" when the trace records none), that GPU's memory (0 if unknown) and the
  /// job's GPU count (its world size; 1 when the trace records none). cost.hpp prices them.
  std::string gpu;
  double gpu_memory_bytes = 0;
  std::int64_t gpus = 1;
};

/// Holds a base graph, its baseline simulation and the scenarios it knows by name; predictions copy
/// the graph, so one Predictor serves many threads at once.
class Predictor {
 public:
  explicit Predictor(Graph base, ScenarioRegistry scenarios = builtin_scenarios());
  const Graph& base() const { return base_; }
  const ScenarioRegistry& scenarios() const { return registry_; }
  const SimulationResult& baseline() const { return baseline_; }
  /// Median baseline iteration time (the whole run when the trace marks no iterations).
  TimeNs baseline_median_ns() const;

  /// Sets `changed` to the base graph with the scenario applied; what predict() simulates. A
  /// split scenario (ScenarioSplit) copies a restructured graph kept from earlier specs where
  /// one has the spec's restructure_key. Throws Error for a bad spec.
  ScenarioOutcome apply(const ScenarioSpec& spec, Graph& changed) const;
  /// Applies the scenario to a copy and simulates it. Throws Error for a bad spec.
  Prediction predict(const ScenarioSpec& spec) const;
  /// The same, also returning the changed graph and its simulation (for timelines).
  Prediction predict(const ScenarioSpec& spec, Graph& changed, SimulationResult& result) const;
  /// Compares a graph changed some other way (a copy of base() changed by hand, a Python
  /// function) and its simulation with the baseline; `label` names it in the Prediction.
  Prediction compare(std::string label, const Graph& changed, const SimulationResult& result) const;

 private:
  Graph base_;
  ScenarioRegistry registry_;
  /// Graphs split scenarios restructured, for later specs (predict/restructured_graphs.hpp);
  /// shared by copies of this Predictor, whose base is the same.
  std::shared_ptr<RestructuredGraphs> restructured_;
  SimulationResult baseline_;
  /// Per (job) iteration: baseline time; for a job graph the slowest rank's (job_iteration_groups).
  std::vector<TimeNs> baseline_iterations_;
  TimeNs baseline_run_ns_ = 0;  ///< run_span_ns of the baseline
  std::vector<IterationPrediction> measured_;  ///< name and measured time per (job) iteration
};

struct SweepOptions {
  unsigned threads = 0;  ///< 0: all hardware threads
  /// Called after each finished scenario with (done, total), from worker threads (serialised).
  std::function<void(std::size_t, std::size_t)> progress;
};

/// One sweep row: the prediction, or the error that scenario raised.
struct SweepRow {
  ScenarioSpec spec;
  std::optional<Prediction> prediction;
  std::string error;
};

/// Predicts every spec with the predictor's scenarios, in parallel; rows are in the order of `specs` whatever the thread count.
/// Bad specs are checked first (Error before any work starts).
std::vector<SweepRow> sweep(const Predictor& predictor, const std::vector<ScenarioSpec>& specs,
                            const SweepOptions& options = {});

/// `daydream predict --json` form (field names are a contract; see docs/scenarios.md).
std::string to_json(const Prediction& prediction, const std::string& trace_path);

}  // namespace daydream
