// daydream: what-if analysis of DNN training performance from one trace.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <iostream>

#include "cli/commands.hpp"
#include "daydream/error.hpp"

namespace {

void add_trace_options(CLI::App& command, daydream::cli::CommonOptions& options) {
  command.add_option("TRACE", options.trace, "Trace file: Kineto JSON (.json or .json.gz)")->required();
  command.add_flag("--json", options.json, "Print one JSON object instead of a table");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"daydream: predict what an optimization would do to DNN training time, from one trace"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "daydream " DAYDREAM_VERSION);
  daydream::cli::CommonOptions replay_options, stats_options;
  auto* replay = app.add_subcommand("replay", "Measured vs simulated time of each iteration (ProfilerStep) and the GPU span");
  add_trace_options(*replay, replay_options);
  auto* stats = app.add_subcommand("stats", "Task counts by kind, edge counts by type, calibration and the import report");
  add_trace_options(*stats, stats_options);
  daydream::cli::LayerOptions layer_options;
  auto* layers = app.add_subcommand("layers", "GPU time, CPU time and kernels per layer and phase; share of GPU time attributed");
  add_trace_options(*layers, layer_options.common);
  layers->add_option("--layers", layer_options.layer_file, "JSON layer file to apply (see docs/formats.md)");
  layers->add_option("--depth", layer_options.depth, "Aggregate layer paths to this many levels (0: full paths)")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  spdlog::set_pattern("%l: %v");
  try {
    if (replay->parsed()) return daydream::cli::run_replay(replay_options);
    if (stats->parsed()) return daydream::cli::run_stats(stats_options);
    if (layers->parsed()) return daydream::cli::run_layers(layer_options);
  } catch (const daydream::Error& e) {
    spdlog::error("{}", e.what());
    return 1;
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    return 2;
  }
  return 0;
}
