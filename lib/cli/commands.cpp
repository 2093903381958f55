#include "cli/commands.hpp"

#include <fmt/format.h>

#include <iostream>

#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/layers.hpp"
#include "daydream/replay.hpp"
#include "daydream/simulate.hpp"
#include "daydream/stats.hpp"
#include "report/json_writer.hpp"

namespace daydream::cli {
namespace {

std::string percent(double ratio) { return std::isfinite(ratio) ? fmt::format("{:+.2f}%", 100.0 * ratio) : "n/a"; }

void print_replay_table(const ReplayReport& r) {
  fmt::print("trace: {}\n\n{:<24} {:>14} {:>14} {:>9}\n", r.trace, "iteration", "measured ms", "simulated ms", "error");
  for (const auto& it : r.iterations)
    fmt::print("{:<24} {:>14} {:>14} {:>9}\n", it.name, format_ms(it.measured_ns), format_ms(it.simulated_ns),
               percent(it.error()));
  fmt::print("{:<24} {:>14} {:>14} {:>9}\n\n", "span (GPU)", format_ms(r.span.measured_ns),
             format_ms(r.span.simulated_ns), percent(r.span.error()));
  fmt::print("{:<40} {:>12} {:>10} {:>8}\n", "unit", "busy ms", "tasks", "util");
  for (const auto& u : r.units)
    fmt::print("{:<40} {:>12} {:>10} {:>7.1f}%\n", u.name, format_ms(u.busy_ns), u.tasks, 100.0 * u.utilization);
  const auto& cp = r.critical_path;
  fmt::print("\ncritical path: {} ms over {} tasks;", format_ms(cp.length_ns), cp.tasks);
  for (std::size_t k = 0; k < kTaskKindCount; ++k)
    if (cp.time_by_kind_ns[k] > 0) fmt::print(" {} {} ms,", to_string(static_cast<TaskKind>(k)), format_ms(cp.time_by_kind_ns[k]));
  fmt::print(" waiting {} ms\n", format_ms(cp.waiting_ns));
}

void print_stats_table(const GraphStats& s) {
  fmt::print("trace: {} ({}, {} events, {} bytes, {} iterations)\n", s.trace, s.format, s.events, s.bytes, s.iterations);
  fmt::print("units: {} CPU threads, {} GPU streams, {} communication channels\n\ntasks by kind\n", s.cpu_threads,
             s.gpu_streams, s.comm_channels);
  for (std::size_t k = 0; k < kTaskKindCount; ++k)
    fmt::print("  {:<16} {:>10}\n", to_string(static_cast<TaskKind>(k)), s.tasks_by_kind[k]);
  fmt::print("edges by type ({} inferred)\n", s.inferred_edges);
  for (std::size_t k = 0; k < kEdgeTypeCount; ++k)
    fmt::print("  {:<16} {:>10}\n", to_string(static_cast<EdgeType>(k)), s.edges_by_type[k]);
  fmt::print("calibration: kernel launch latency {} ms, stream gap {} ms ({} + {} samples)\n\nimport report\n",
             format_ms(s.calibration.launch_latency_ns[static_cast<std::size_t>(TaskKind::kernel)]),
             format_ms(s.calibration.gpu_gap_ns), s.calibration.launch_samples, s.calibration.gap_samples);
  for (const auto& stat : s.report)
    fmt::print("  {:<40} {:<9} {:>8}  {}\n", stat.key, to_string(stat.severity), stat.count, stat.description);
}

void print_layer_table(const LayerReport& r) {
  fmt::print("trace: {}\nGPU time attributed to a layer: {:.1f}% of {} ms; CPU time: {:.1f}% of {} ms\n\n", r.trace,
             100.0 * r.gpu_coverage(), format_ms(r.gpu_total_ns), 100.0 * r.cpu_coverage(), format_ms(r.cpu_total_ns));
  fmt::print("{:<60} {:<9} {:>12} {:>12} {:>8}\n", "layer", "phase", "GPU ms", "CPU ms", "kernels");
  for (const auto& row : r.rows)
    fmt::print("{:<60} {:<9} {:>12} {:>12} {:>8}\n", row.layer, to_string(row.phase), format_ms(row.gpu_ns),
               format_ms(row.cpu_ns), row.kernels);
}

}  // namespace

int run_layers(const LayerOptions& options) {
  Graph graph = build_graph(load_trace(options.common.trace));
  if (!options.layer_file.empty()) apply_layer_file(graph, options.layer_file);
  const LayerReport report = make_layer_report(graph, options.depth);
  if (options.common.json) std::cout << to_json(report);
  else print_layer_table(report);
  return 0;
}

int run_replay(const CommonOptions& options) {
  const Graph graph = build_graph(load_trace(options.trace));
  const ReplayReport report = make_replay_report(graph, simulate(graph));
  if (options.json) std::cout << to_json(report);
  else print_replay_table(report);
  return 0;
}

int run_stats(const CommonOptions& options) {
  const Trace trace = load_trace(options.trace);
  const GraphStats stats = make_stats(trace, build_graph(trace));
  if (options.json) std::cout << to_json(stats);
  else print_stats_table(stats);
  return 0;
}

}  // namespace daydream::cli
