// daydream's command line: daydream::cli::run parses the arguments and runs one command. The
// `daydream` program (program.cpp) and `python -m daydream` (the Python module) both call it.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <new>
#include <iostream>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "cli/run.hpp"
#include "daydream/error.hpp"

namespace {

/// Every input format, as each command's --help names it (README.md, "Inputs").
constexpr const char* kTraceFormats =
    "PyTorch profiler (Kineto) or daydream collector Chrome-trace JSON (.json, .json.gz), or an Nsight Systems SQLite "
    "export (.sqlite, gzip allowed)";

constexpr const char* kIterationsHelp =
    "Regular expression (RE2) naming the CPU ranges that are iterations, measured start to start (default: "
    "ProfilerStep#N, else step N, iteration N or iter N, else from one optimizer step's end to the next)";

void add_iterations_option(CLI::App& command, daydream::cli::CommonOptions& options) {
  command.add_option("--iterations", options.iterations, kIterationsHelp);
}

void add_trace_options(CLI::App& command, daydream::cli::CommonOptions& options) {
  command.add_option("TRACE", options.traces, std::string("Trace file: ") + kTraceFormats)
      ->required()->expected(1);
  command.add_flag("--json", options.json, "Print one JSON object instead of a table");
  add_iterations_option(command, options);
}

/// replay, predict and sweep also take every rank of a multi-rank job.
void add_job_trace_options(CLI::App& command, daydream::cli::CommonOptions& options) {
  command.add_option("TRACE", options.traces,
                     std::string("Trace file: ") + kTraceFormats +
                         "; or the Chrome traces of every rank of one job, as files "
                     "or a directory")
      ->required()->expected(1, -1);
  command.add_flag("--json", options.json, "Print one JSON object instead of a table");
  add_iterations_option(command, options);
}

/// stats TRACE, or stats --catalogue (no trace): TRACE is required unless --catalogue is given,
/// with CLI11's own message, as for a required option.
CLI::App* add_stats_command(CLI::App& app, daydream::cli::CommonOptions& options, bool& catalogue) {
  auto* stats = app.add_subcommand("stats", "Task counts by kind, edge counts by type, calibration and the import report");
  add_trace_options(*stats, options);
  CLI::Option* trace = stats->get_option("TRACE")->required(false);
  stats->add_flag("--catalogue", catalogue, "List every counter the import report may hold (takes no TRACE)")
      ->excludes(trace);
  stats->callback([&options, &catalogue] {
    if (!catalogue && options.traces.empty()) throw CLI::RequiredError("TRACE");
  });
  return stats;
}

CLI::App* add_predict_command(CLI::App& app, daydream::cli::PredictOptions& options) {
  auto* predict = app.add_subcommand("predict", "Predict one scenario: per-iteration baseline vs predicted time, the "
                                                "critical path by category and layer, and the scenario's notes");
  add_job_trace_options(*predict, options.common);
  predict->add_option("--scenario", options.scenario,
                      "Scenario: name or name:key=value,... (`daydream scenarios` lists them)")->required();
  predict->add_option("--perfetto", options.perfetto_file,
                      "Also write the baseline and predicted timelines to this Chrome trace JSON file (Perfetto; gzip when it ends in .gz), iterations aligned");
  predict->add_option("--layers", options.layer_file, "JSON layer file to apply first (see docs/formats.md)");
  return predict;
}

CLI::App* add_sweep_command(CLI::App& app, daydream::cli::SweepCommandOptions& options) {
  auto* sweep = app.add_subcommand("sweep", "Predict many scenarios (grids: key=a|b) in parallel from one trace; one "
                                            "row per scenario, after the baseline");
  add_job_trace_options(*sweep, options.common);
  // One value per occurrence, so that `--scenario a TRACE` does not take TRACE as a second spec.
  sweep->add_option("--scenario", options.scenarios, "Scenario spec, grids allowed (repeat for more)")
      ->expected(1)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sweep->add_option("--scenarios", options.scenario_files,
                    "File listing one spec per line ('#' comments, grids allowed); repeatable")
      ->expected(1)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sweep->add_option("--threads", options.threads, "Worker threads (0: all cores)")->check(CLI::Range(0u, 4096u));
  sweep->add_option("--max-specs", options.max_specs,
                    "The most specs the grids may expand to, counted before expanding (default 100000)")
      ->check(CLI::PositiveNumber);
  sweep->add_flag("--csv", options.csv, "Print CSV instead of a table")->excludes("--json");
  sweep->add_flag("--quiet", options.quiet, "No progress on stderr");
  sweep->add_option("--layers", options.layer_file, "JSON layer file to apply first (see docs/formats.md)");
  sweep->add_option("--price", options.price,
                    "Add each row's GPU, throughput and cost per 1,000 iterations: 'builtin' for the built-in list "
                    "prices (dated, docs/gpu_model.md), or a JSON prices file over them");
  sweep->add_option("--batch-size", options.batch_size, "Samples per GPU per iteration, for samples/s (with --price)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1'000'000'000}))
      ->needs("--price");
  sweep->add_option("--devices", options.devices_file, "JSON file of GPUs beyond the catalogue (docs/gpu_model.md)")
      ->needs("--price");
  sweep->add_option("--device", options.device, "The traced GPU, for a trace that records none (daydream gpus)")
      ->needs("--price");
  return sweep;
}

CLI::App* add_validate_command(CLI::App& app, daydream::cli::ValidateOptions& options) {
  auto* validate = app.add_subcommand("validate", "Predict AFTER from BEFORE with a scenario and compare with AFTER's "
                                                  "measured iterations: per iteration, median, mean and their errors");
  validate->add_option("BEFORE", options.before, "Trace the prediction starts from (any format predict reads)")
      ->required();
  validate->add_option("AFTER", options.after, std::string("Trace of the run with the change made, measured: ") + kTraceFormats)->required();
  validate->add_option("--scenario", options.scenario,
                       "Scenario: name or name:key=value,... (`daydream scenarios` lists them)")->required();
  validate->add_flag("--json", options.json, "Print one JSON object instead of a table");
  validate->add_option("--iterations", options.iterations, std::string(kIterationsHelp) + ", in both traces");
  validate->add_option("--layers", options.layer_file, "JSON layer file to apply to BEFORE first (see docs/formats.md)");
  return validate;
}

CLI::App* add_roofline_command(CLI::App& app, daydream::cli::RooflineOptions& options) {
  auto* roofline = app.add_subcommand("roofline", "Kernel classes, operators and layers of a trace on the roofline of "
                                                  "its GPU: time, FLOPs and bytes (from recorded shapes), achieved "
                                                  "rates, share of peak, bound, and expected vs measured time");
  add_trace_options(*roofline, options.common);
  roofline->add_option("--device", options.device,
                       "GPU of the catalogue to use instead of the one the trace records (`daydream gpus` lists them)");
  roofline->add_option("--devices", options.devices_file, "JSON file of more GPUs (see docs/gpu_model.md)");
  roofline->add_option("--layers", options.layer_file, "JSON layer file to apply first (see docs/formats.md)");
  return roofline;
}

/// Levenshtein distance, for suggesting a command.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// `daydream rplay ...`: the message for a first argument that is no command, naming the closest
/// command when one is within 2 edits; nullopt when the first argument is an option or a command.
std::optional<std::string> unknown_command(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return std::nullopt;
  const std::string_view given = argv[1];
  std::string closest;
  std::size_t best = 3;  // suggest within 2 edits only
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (command->get_name() == given) return std::nullopt;
    const std::size_t distance = edit_distance(given, command->get_name());
    if (distance < best) best = distance, closest = command->get_name();
  }
  return fmt::format("unknown command '{}'{}; `daydream --help` lists the commands", given,
                     closest.empty() ? "" : fmt::format(" (did you mean '{}'?)", closest));
}

/// Messages go to stderr, so that stdout holds only the requested output (JSON, CSV, tables). The
/// logger is not registered by name, so that run() can be called again in the same process (Python);
/// the previous default logger comes back when run() returns.
class StderrLogger {
 public:
  StderrLogger() : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>("daydream", std::make_shared<spdlog::sinks::stderr_sink_st>());
    logger->set_pattern("%l: %v");
    spdlog::set_default_logger(std::move(logger));
  }
  ~StderrLogger() { spdlog::set_default_logger(previous_); }
  StderrLogger(const StderrLogger&) = delete;
  StderrLogger& operator=(const StderrLogger&) = delete;

 private:
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace

int daydream::cli::run(int argc, char** argv) {
  CLI::App app{"daydream: predict what an optimization would do to DNN training time, from one trace"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "daydream " DAYDREAM_VERSION);
  daydream::cli::CommonOptions replay_options, stats_options;
  auto* replay = app.add_subcommand("replay", "Measured vs simulated time of each iteration (ProfilerStep#N, step N, ...) and the GPU span; for "
                                             "several ranks, per rank and for the job, with the straggler report");
  add_job_trace_options(*replay, replay_options);
  bool stats_catalogue = false;
  auto* stats = add_stats_command(app, stats_options, stats_catalogue);
  daydream::cli::LayerOptions layer_options;
  auto* layers = app.add_subcommand("layers", "GPU time, CPU time and kernels per layer and phase; share of GPU time attributed");
  add_trace_options(*layers, layer_options.common);
  layers->add_option("--layers", layer_options.layer_file, "JSON layer file to apply (see docs/formats.md)");
  layers->add_option("--depth", layer_options.depth, "Aggregate layer paths to this many levels (0: full paths)")
      ->check(CLI::NonNegativeNumber);

  daydream::cli::BottleneckOptions bottleneck_options;
  auto* bottleneck = app.add_subcommand(
      "bottleneck", "What is my bottleneck? The unmodified run's critical path by category, layer, operator and kernel, "
                    "and each GPU stream's idle time by what it waited for (CPU, data, sync, another stream)");
  add_job_trace_options(*bottleneck, bottleneck_options.common);
  bottleneck->add_option("--layers", bottleneck_options.layer_file, "JSON layer file to apply first (see docs/formats.md)");
  daydream::cli::PredictOptions predict_options;
  auto* predict = add_predict_command(app, predict_options);
  daydream::cli::SweepCommandOptions sweep_options;
  auto* sweep = add_sweep_command(app, sweep_options);
  daydream::cli::ValidateOptions validate_options;
  auto* validate = add_validate_command(app, validate_options);
  bool scenarios_json = false;
  auto* scenarios = app.add_subcommand("scenarios", "List the scenarios with their parameters (kind, range, default)");
  scenarios->add_flag("--json", scenarios_json, "Print one JSON object instead of text");
  daydream::cli::GpusOptions gpus_options;
  auto* gpus = app.add_subcommand("gpus", "List the GPU catalogue of the GPU model (peak throughput per precision, "
                                          "memory bandwidth, sources), or name the GPU a trace ran on");
  gpus->add_option("TRACE", gpus_options.trace, std::string("Trace whose GPU to identify: ") + kTraceFormats);
  gpus->add_option("--devices", gpus_options.devices_file, "JSON file of more GPUs (see docs/gpu_model.md)");
  gpus->add_flag("--json", gpus_options.json, "Print one JSON object (the fields of a devices file) instead of a table");
  daydream::cli::RooflineOptions roofline_options;
  auto* roofline = add_roofline_command(app, roofline_options);
  if (const auto message = unknown_command(app, argc, argv)) {
    fmt::print(stderr, "error: {}\n", *message);
    return daydream::cli::kExitBadInput;
  }
  CLI11_PARSE(app, argc, argv);
  const StderrLogger logger;
  try {
    if (replay->parsed()) return daydream::cli::run_replay(replay_options);
    if (stats->parsed())
      return stats_catalogue ? daydream::cli::run_stats_catalogue(stats_options.json)
                             : daydream::cli::run_stats(stats_options);
    if (layers->parsed()) return daydream::cli::run_layers(layer_options);
    if (bottleneck->parsed()) return daydream::cli::run_bottleneck(bottleneck_options);
    if (predict->parsed()) return daydream::cli::run_predict(predict_options);
    if (sweep->parsed()) return daydream::cli::run_sweep(sweep_options);
    if (validate->parsed()) return daydream::cli::run_validate(validate_options);
    if (scenarios->parsed()) return daydream::cli::run_scenarios(scenarios_json);
    if (gpus->parsed()) return daydream::cli::run_gpus(gpus_options);
    if (roofline->parsed()) return daydream::cli::run_roofline(roofline_options);
  } catch (const daydream::Error& e) {
    spdlog::error("{}", e.what());
    return daydream::cli::kExitBadInput;
  } catch (const std::filesystem::filesystem_error& e) {  // a path the library met: bad input too
    spdlog::error("{}: {}", e.path1().string(), e.code().message());
    return daydream::cli::kExitBadInput;
  } catch (const std::bad_alloc&) {
    spdlog::error("out of memory: the input needs more memory than this machine gives the process");
    return daydream::cli::kExitBadInput;
  } catch (const std::exception& e) {
    spdlog::error("internal error: {} (a bug in daydream: please report it with the command and its input)", e.what());
    return daydream::cli::kExitBug;
  }
  return daydream::cli::kExitDone;
}
