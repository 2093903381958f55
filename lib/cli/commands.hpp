#pragma once
// The CLI's commands: thin wrappers that load, build, simulate and print.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daydream/graph.hpp"
#include "daydream/predict.hpp"
#include "daydream/scenario.hpp"

namespace daydream::cli {

struct CommonOptions {
  /// One trace file; replay, predict and sweep also take the traces (or directories) of every
  /// rank of a job.
  std::vector<std::string> traces;
  bool json = false;
  std::string iterations;  ///< --iterations REGEX: which ranges are the iterations (empty: defaults)
  const std::string& trace() const { return traces.front(); }
  /// The one trace file of a command that reads one (stats, layers, roofline, gpus); throws Error
  /// saying which commands take a directory when it is one.
  const std::string& trace_file(std::string_view command) const;
  /// The traces as one label ("a.json,b.json") for reports.
  std::string label() const;
  GraphOptions graph_options() const;
};

int run_replay(const CommonOptions& options);
int run_stats(const CommonOptions& options);
/// `stats --catalogue`: every stat the import report may hold; needs no trace.
int run_stats_catalogue(bool json);

struct LayerOptions {
  CommonOptions common;
  std::string layer_file;
  int depth = 0;
};
int run_layers(const LayerOptions& options);

// --- issue 4: scenarios (docs/cli.md) ---

struct PredictOptions {
  CommonOptions common;
  std::string scenario;       ///< one spec: name or name:key=value,...
  std::string perfetto_file;  ///< write baseline + predicted timelines here (Chrome trace JSON)
  std::string layer_file;
};
int run_predict(const PredictOptions& options);

/// `daydream bottleneck TRACE... [--layers FILE] [--json]`: the baseline's critical path by
/// category, layer, operator and kernel, and each GPU stream's idle time by cause (bottleneck.hpp).
struct BottleneckOptions {
  CommonOptions common;
  std::string layer_file;
};
int run_bottleneck(const BottleneckOptions& options);

struct SweepCommandOptions {
  CommonOptions common;
  std::vector<std::string> scenarios;       ///< specs, grids allowed
  std::vector<std::string> scenario_files;  ///< one spec per line
  std::string layer_file;
  unsigned threads = 0;  ///< 0: all hardware threads
  std::size_t max_specs = kDefaultMaxSweepSpecs;  ///< grids are counted against it before expanding
  bool csv = false;
  bool quiet = false;    ///< no progress on stderr
  /// "builtin" or a prices file: adds throughput and cost per 1,000 iterations (cost.hpp); empty: none.
  std::string price;
  std::int64_t batch_size = 0;  ///< samples per GPU per iteration, for samples/s (0: not given)
  std::string devices_file;     ///< GPUs beyond the catalogue, for naming the rows' GPUs
  std::string device;           ///< the traced GPU, for a trace that records none
};
int run_sweep(const SweepCommandOptions& options);

int run_scenarios(bool json);

/// `daydream gpus [TRACE] [--devices FILE] [--json]`: the GPU catalogue, or which entry TRACE's GPU is.
struct GpusOptions {
  std::string trace;         ///< empty: list the catalogue
  std::string devices_file;  ///< more GPUs (docs/gpu_model.md)
  bool json = false;
};
int run_gpus(const GpusOptions& options);

/// `daydream roofline TRACE [--device NAME] [--devices FILE] [--layers FILE] [--json]`: kernel
/// classes, operators and layers on the roofline of the trace's GPU (docs/gpu_model.md).
struct RooflineOptions {
  CommonOptions common;
  std::string device;        ///< catalogue name; empty: the GPU the trace records
  std::string devices_file;  ///< more GPUs (docs/gpu_model.md)
  std::string layer_file;
};
int run_roofline(const RooflineOptions& options);

struct ValidateOptions {
  std::string before, after;  ///< the run the prediction starts from, and the measured run it predicts
  std::string scenario;       ///< one spec (no grids)
  std::string iterations;     ///< --iterations REGEX for both runs (empty: defaults)
  std::string layer_file;     ///< applied to BEFORE
  bool json = false;
};
int run_validate(const ValidateOptions& options);

// Shared by the commands (commands.cpp, sweep_table.cpp).

/// Loads and builds the trace's graph (a job graph for several traces or a directory), then
/// applies the layer file if one is given.
Graph load_graph(const CommonOptions& options, const std::string& layer_file);
/// load_job on the inputs, with a warning on stderr naming the files a directory listing brought
/// in that are no Chrome trace (skipped).
Graph load_job_input(const CommonOptions& options);
/// Whether the inputs name a multi-rank job (several files, or a directory).
bool is_job_input(const std::vector<std::string>& traces);
/// Checks a spec against its scenario (name, parameters, ranges) before any trace is loaded;
/// throws Error with the library's message (it lists the valid names or parameters).
void check_spec(const ScenarioSpec& spec);
/// The critical path by category, then its top layers (or why there are none), under `title`.
void print_critical_path(const PathBreakdown& path, std::string_view title);
/// A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text);
/// "1.976x", or "n/a" when the predicted time is not positive.
std::string speedup_text(double speedup);
/// A signed error as "+1.25%", or "n/a" when it is not finite.
std::string percent(double ratio);
/// part / whole as "63.2%" (0.0% for an empty whole).
std::string share_text(std::int64_t part, std::int64_t whole);

}  // namespace daydream::cli
