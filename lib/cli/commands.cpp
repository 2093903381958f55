#include "cli/commands.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>

#include "daydream/bottleneck.hpp"
#include "daydream/error.hpp"
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/job.hpp"
#include "daydream/layers.hpp"
#include "daydream/predict.hpp"
#include "daydream/report/chrome_trace.hpp"
#include "daydream/report/layers.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/simulate.hpp"
#include "daydream/report/stats.hpp"
#include "common/text.hpp"
#include "report/json_writer.hpp"

namespace daydream::cli {
namespace {

void print_replay_table(const ReplayReport& r) {
  fmt::print("trace: {}\niterations: {}\n\n{:<24} {:>14} {:>14} {:>9}\n", r.trace, describe(r.iteration_rule),
             "iteration", "measured ms", "simulated ms", "error");
  for (const auto& it : r.iterations)
    fmt::print("{:<24} {:>14} {:>14} {:>9}\n", it.name, format_ms_us(it.measured_ns), format_ms_us(it.simulated_ns),
               percent(it.error()));
  fmt::print("{:<24} {:>14} {:>14} {:>9}\n\n", "span (GPU)", format_ms_us(r.span.measured_ns),
             format_ms_us(r.span.simulated_ns), percent(r.span.error()));
  fmt::print("{:<40} {:>12} {:>10} {:>8}\n", "unit", "busy ms", "tasks", "util");
  for (const auto& u : r.units)
    fmt::print("{:<40} {:>12} {:>10} {:>7.1f}%\n", u.name, format_ms_us(u.busy_ns), u.tasks, 100.0 * u.utilization);
  const auto& cp = r.critical_path;
  fmt::print("\ncritical path: {} ms over {} tasks;", format_ms_us(cp.length_ns), cp.tasks);
  for (std::size_t k = 0; k < kTaskKindCount; ++k)
    if (cp.time_by_kind_ns[k] > 0) fmt::print(" {} {} ms,", to_string(static_cast<TaskKind>(k)), format_ms_us(cp.time_by_kind_ns[k]));
  fmt::print(" waiting {} ms\n", format_ms_us(cp.waiting_ns));
  if (r.occupancy_holds > 0)
    fmt::print("GPU occupancy: {} tasks held back for another stream's GPU-filling kernel, {} ms in all\n",
               r.occupancy_holds, format_ms_us(r.occupancy_hold_ns));
}

std::string rank_text(std::int64_t rank) { return rank == kNone ? "-" : fmt::format("rank {}", rank); }

void print_job_iterations(const JobReport& r) {
  fmt::print("job: {} ranks traced of {}; largest clock offset {} ms\n\n{:<20} {:>22} {:>22} {:>9}\n",
             r.ranks.size(), r.world_size, format_ms_us(r.max_clock_skew_ns), "job iteration", "measured ms (slowest)",
             "simulated ms (slowest)", "error");
  for (const auto& it : r.iterations)
    fmt::print("{:<20} {:>12} {:>9} {:>12} {:>9} {:>9}\n", it.name, format_ms_us(it.measured_ns),
               rank_text(it.measured_slowest_rank), format_ms_us(it.simulated_ns), rank_text(it.simulated_slowest_rank),
               percent(it.error()));
}

void print_job_ranks(const JobReport& r) {
  fmt::print("\n{:<6} {:>10} {:>12} {:>12} {:>9} {:>10} {:>12} {:>6} {:>10}  trace\n", "rank", "offset ms",
             "measured ms", "simulated ms", "error", "waited ms", "held back ms", "last", "path ms");
  for (const auto& rank : r.ranks)
    for (const auto& it : rank.iterations)
      fmt::print("{:<6} {:>10} {:>12} {:>12} {:>9} {:>10} {:>12} {:>6} {:>10}  {}\n", rank.rank,
                 format_ms_us(rank.clock_offset_ns), format_ms_us(it.measured_ns), format_ms_us(it.simulated_ns),
                 percent(it.error()), format_ms_us(rank.waited_ns), format_ms_us(rank.held_back_ns), rank.last_arrivals,
                 format_ms_us(rank.critical_path_ns), rank.trace);
}

void print_job_collectives(const JobReport& r) {
  fmt::print("\n{:<28} {:>12} {:>9} {:>10} {:>12} {:>9}\n", "collective (group)", "bytes", "last", "wait ms",
             "transfer ms", "critical");
  for (const auto& c : r.collectives)
    fmt::print("{:<28} {:>12} {:>9} {:>10} {:>12} {:>9}\n", fmt::format("{} #{} ({})", c.name, c.sequence, c.group),
               c.bytes == kNone ? std::string("?") : std::to_string(c.bytes), rank_text(c.last_rank),
               format_ms_us(c.wait_ns), format_ms_us(c.transfer_ns), c.on_critical_path ? "yes" : "");
  if (r.straggler != kNone) {
    const auto& s = *std::find_if(r.ranks.begin(), r.ranks.end(), [&](const auto& x) { return x.rank == r.straggler; });
    fmt::print("\nstraggler: rank {} (the others waited {} ms for it, last at {} collectives); critical path {} ms\n",
               s.rank, format_ms_us(s.held_back_ns), s.last_arrivals, format_ms_us(r.critical_path_ns));
  }
  for (const auto& line : r.explanations) fmt::print("  - {}\n", line);  // warnings went to stderr at load
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
  fmt::print("calibration: kernel launch latency {} ms, stream gap {} ms ({} + {} samples)\n",
             format_ms(s.calibration.launch_latency_ns[static_cast<std::size_t>(TaskKind::kernel)]),
             format_ms(s.calibration.gpu_gap_ns), s.calibration.launch_samples, s.calibration.gap_samples);
  if (s.calibration.occupancy_holders > 0)
    fmt::print("GPU occupancy: {} GPU-filling kernels held other streams' work, letting it in a median {:.3f} "
               "block times before their end\n",
               s.calibration.occupancy_holders, s.calibration.occupancy_let_in_waves);
  fmt::print("\nimport report\n");
  for (const auto& stat : s.report)
    fmt::print("  {:<40} {:<9} {:>8}  {}{}\n", stat.key, to_string(stat.severity), stat.count,
               stat.total_ns > 0 ? fmt::format("[{} ms] ", format_ms_us(stat.total_ns)) : std::string(), stat.description);
}

void print_catalogue_table() {
  fmt::print("import report catalogue ({} stats; docs/formats.md, \"Import report\")\n", stats::kNumStats);
  for (const stats::Stat& stat : stats::catalogue())
    fmt::print("  {:<40} {:<9} {:<6}  {}\n", stat.pattern(), to_string(stat.severity), to_string(stat.stage),
               stat.description);
}

void print_layer_table(const LayerReport& r) {
  fmt::print("trace: {}\nGPU time attributed to a layer: {:.1f}% of {} ms; CPU time: {:.1f}% of {} ms\n\n", r.trace,
             100.0 * r.gpu_coverage(), format_ms_us(r.gpu_total_ns), 100.0 * r.cpu_coverage(), format_ms_us(r.cpu_total_ns));
  if (r.rows.empty()) {  // rather than an empty table: where layers come from, and what to use meanwhile
    fmt::print("no task has a layer: the trace marks none (NVTX ranges, record_function, module hooks: "
               "docs/layers.md); give --layers FILE, or see time by operator with `daydream bottleneck`\n");
    return;
  }
  fmt::print("{:<60} {:<9} {:>12} {:>12} {:>8}\n", "layer", "phase", "GPU ms", "CPU ms", "kernels");
  for (const auto& row : r.rows)
    fmt::print("{:<60} {:<9} {:>12} {:>12} {:>8}\n", row.layer, to_string(row.phase), format_ms_us(row.gpu_ns),
               format_ms_us(row.cpu_ns), row.kernels);
}

// --- predict ---

constexpr std::size_t kTopLayers = 10;

std::string iteration_speedup(TimeNs baseline_ns, TimeNs predicted_ns) {
  return speedup_text(predicted_ns > 0 ? static_cast<double>(baseline_ns) / static_cast<double>(predicted_ns) : 0.0);
}

void print_time_row(std::string_view name, TimeNs baseline_ns, TimeNs predicted_ns) {
  fmt::print("{:<24} {:>14} {:>14} {:>9}\n", name, format_ms_us(baseline_ns), format_ms_us(predicted_ns),
             iteration_speedup(baseline_ns, predicted_ns));
}

}  // namespace

void print_critical_path(const PathBreakdown& path, std::string_view title) {
  const auto dominant = static_cast<std::size_t>(path.dominant());
  fmt::print("\n{}: {} ms, dominated by {} ({})\n", title, format_ms_us(path.length_ns),
             to_string(path.dominant()), share_text(path.by_category_ns[dominant], path.length_ns));
  fmt::print("  {:<22} {:>12} {:>7}\n", "category", "ms", "share");
  for (std::size_t c = 0; c < kPathCategoryCount; ++c)
    fmt::print("  {:<22} {:>12} {:>7}\n", to_string(static_cast<PathCategory>(c)), format_ms_us(path.by_category_ns[c]),
               share_text(path.by_category_ns[c], path.length_ns));
  if (path.by_layer_ns.empty()) return;
  if (path.by_layer_ns.size() == 1 && path.by_layer_ns[0].first == "(no layer)") {
    fmt::print("\nno task on the critical path has a layer (where layers come from: docs/layers.md; or give --layers FILE)\n");
    return;
  }
  fmt::print("\ntop layers on the critical path\n  {:<60} {:>12} {:>7}\n", "layer", "ms", "share");
  for (std::size_t i = 0; i < std::min(kTopLayers, path.by_layer_ns.size()); ++i) {
    const auto& [layer, ns] = path.by_layer_ns[i];
    fmt::print("  {:<60} {:>12} {:>7}\n", layer, format_ms_us(ns), share_text(ns, path.length_ns));
  }
  if (path.by_layer_ns.size() > kTopLayers) fmt::print("  ({} more layers)\n", path.by_layer_ns.size() - kTopLayers);
}

namespace {

void print_prediction_table(const Prediction& p, const std::string& trace) {
  fmt::print("trace: {}\nscenario: {}\niterations: {}\n\n{:<24} {:>14} {:>14} {:>9}\n", trace, p.scenario,
             describe(p.iteration_rule), "iteration", "baseline ms", "predicted ms", "speedup");
  for (const auto& it : p.iterations) print_time_row(it.name, it.baseline_ns, it.predicted_ns);
  if (!p.iterations.empty()) print_time_row("median", p.baseline_median_ns, p.predicted_median_ns);
  print_time_row("total (whole run)", p.baseline_total_ns, p.predicted_total_ns);
  print_critical_path(p.critical_path, "critical path of the predicted iterations");
  if (p.notes.empty()) return;
  fmt::print("\nnotes\n");
  for (const auto& note : p.notes) fmt::print("  - {}\n", note);
}

/// One scenario, not a grid (sweep runs grids).
ScenarioSpec single_spec(const std::string& text) {
  if (text.find('|') != std::string::npos)
    throw Error(fmt::format("predict: '{}' is a grid (a value lists alternatives with '|'); predict takes one "
                            "scenario, use `daydream sweep` for grids",
                            text));
  ScenarioSpec spec = parse_scenario_spec(text);
  check_spec(spec);
  return spec;
}

// --- scenarios ---

/// describe_scenario's help with each parameter's description under its line ("  name (kind,
/// range; default)").
std::string with_descriptions(const Scenario& scenario, std::string_view help) {
  std::string out;
  std::size_t next_param = 0;
  for (std::size_t begin = 0; begin < help.size();) {
    const std::size_t end = std::min(help.find('\n', begin), help.size());
    const std::string_view line = help.substr(begin, end - begin);
    out.append(line).append("\n");
    begin = end + 1;
    if (next_param >= scenario.params.size()) continue;
    const ScenarioParam& p = scenario.params[next_param];
    if (!text::starts_with(line, "  " + p.name + " (")) continue;
    if (!p.description.empty()) out.append("      ").append(p.description).append("\n");
    ++next_param;
  }
  return out;
}

}  // namespace

std::string CommonOptions::label() const {
  std::string joined;
  for (const auto& t : traces) joined += (joined.empty() ? "" : ",") + t;
  return joined;
}

bool is_job_input(const std::vector<std::string>& traces) {
  std::error_code ec;  // a path that cannot be examined is refused, with its reason, when it is read
  return traces.size() > 1 || (traces.size() == 1 && std::filesystem::is_directory(traces.front(), ec));
}

GraphOptions CommonOptions::graph_options() const {
  GraphOptions graph;
  graph.iterations = iterations;
  return graph;
}

const std::string& CommonOptions::trace_file(std::string_view command) const {
  std::error_code ec;
  if (std::filesystem::is_directory(trace(), ec))
    throw Error(fmt::format("{}: a directory; {} reads one trace file: give one of its traces, or use replay, "
                            "bottleneck, predict or sweep, which take a directory of a job's rank traces whole",
                            trace(), command));
  return trace();
}

Graph load_job_input(const CommonOptions& options) {
  std::vector<std::string> skipped;
  Graph job = load_job({options.traces.begin(), options.traces.end()}, {options.graph_options(), 0, &skipped});
  if (job.job()) {  // the job's warnings hold the skipped files too; `replay --json` lists them again
    for (const auto& warning : job.job()->warnings) spdlog::warn("{}", warning);
  } else if (!skipped.empty()) {
    spdlog::warn("skipped {} JSON files that are no Chrome trace (no traceEvents: execution traces, configs): {}",
                 skipped.size(), fmt::join(skipped, ", "));
  }
  return job;
}

Graph load_graph(const CommonOptions& options, const std::string& layer_file) {
  const auto& traces = options.traces;
  Graph graph = is_job_input(traces) ? load_job_input(options)
                                     : build_graph(load_trace(traces.front()), options.graph_options());
  if (!layer_file.empty()) apply_layer_file(graph, layer_file);
  return graph;
}

void check_spec(const ScenarioSpec& spec) { resolve_params(builtin_scenarios().find(spec.name), spec); }

std::string speedup_text(double speedup) {
  return speedup > 0 && std::isfinite(speedup) ? fmt::format("{:.3f}x", speedup) : "n/a";
}

std::string percent(double ratio) { return std::isfinite(ratio) ? fmt::format("{:+.2f}%", 100.0 * ratio) : "n/a"; }

std::string share_text(std::int64_t part, std::int64_t whole) {
  return fmt::format("{:.1f}%", whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
}

int run_predict(const PredictOptions& options) {
  const ScenarioSpec spec = single_spec(options.scenario);  // a bad spec fails before the trace is read
  const Predictor predictor(load_graph(options.common, options.layer_file));
  Prediction prediction;
  if (options.perfetto_file.empty()) {
    prediction = predictor.predict(spec);
  } else {
    Graph changed;
    SimulationResult result;
    prediction = predictor.predict(spec, changed, result);
    write_chrome_trace(options.perfetto_file, {{"baseline", &predictor.base(), &predictor.baseline()},
                                               {"predicted: " + prediction.scenario, &changed, &result}});
    fmt::print(stderr, "wrote the baseline and predicted timelines to {} (open it in https://ui.perfetto.dev)\n",
               options.perfetto_file);
  }
  if (options.common.json) std::cout << to_json(prediction, options.common.label());
  else print_prediction_table(prediction, options.common.label());
  return 0;
}

int run_scenarios(bool json) {
  if (json) {
    std::cout << scenarios_json(builtin_scenarios());
    return 0;
  }
  bool first = true;
  for (const auto& [name, s] : builtin_scenarios()) {
    fmt::print("{}{}", first ? "" : "\n", with_descriptions(s, describe_scenario(s)));
    first = false;
  }
  return 0;
}

int run_layers(const LayerOptions& options) {
  Graph graph = build_graph(load_trace(options.common.trace_file("layers")), options.common.graph_options());
  if (!options.layer_file.empty()) apply_layer_file(graph, options.layer_file);
  const LayerReport report = make_layer_report(graph, options.depth);
  if (options.common.json) std::cout << to_json(report);
  else print_layer_table(report);
  return 0;
}

namespace {

/// The replay report of one trace's graph; the table ends with `daydream bottleneck`'s summary.
/// The JSON report needs the replay alone; the table ends with the bottleneck, which reads a
/// Predictor's baseline (whose preparation for what-ifs a one-shot JSON replay would not use).
int print_replay(Graph graph, const CommonOptions& options) {
  if (options.json) {
    std::cout << to_json(make_replay_report(graph, simulate(graph)));
    return 0;
  }
  const Predictor replay(std::move(graph));
  print_replay_table(make_replay_report(replay.base(), replay.baseline()));
  fmt::print("\n{}\n", find_bottleneck(replay).summary);
  return 0;
}

void print_job_report(const JobReport& report) {
  print_job_iterations(report);
  print_job_ranks(report);
  print_job_collectives(report);
}

}  // namespace

int run_job_replay(const CommonOptions& options) {
  Graph graph = load_job_input(options);
  if (!graph.job()) return print_replay(std::move(graph), options);  // one trace left in the directory
  if (options.json) {
    std::cout << to_json(make_job_report(graph, simulate(graph)));
    return 0;
  }
  const Predictor job(std::move(graph));
  print_job_report(make_job_report(job.base(), job.baseline()));
  fmt::print("\n{}\n", find_bottleneck(job).summary);  // as `daydream bottleneck` ends
  return 0;
}

int run_replay(const CommonOptions& options) {
  if (is_job_input(options.traces)) return run_job_replay(options);
  return print_replay(build_graph(load_trace(options.trace()), options.graph_options()), options);
}

int run_stats(const CommonOptions& options) {
  const Trace trace = load_trace(options.trace_file("stats"));
  const GraphStats stats = make_stats(trace, build_graph(trace, options.graph_options()));
  if (options.json) std::cout << to_json(stats);
  else print_stats_table(stats);
  return 0;
}

int run_stats_catalogue(bool json) {
  if (json) std::cout << catalogue_json();
  else print_catalogue_table();
  return 0;
}

}  // namespace daydream::cli
