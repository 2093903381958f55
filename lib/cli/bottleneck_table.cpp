// `daydream bottleneck`: what limits the unmodified run (bottleneck.hpp), as tables or JSON.
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "daydream/bottleneck.hpp"
#include "report/json_writer.hpp"

namespace daydream::cli {
namespace {

constexpr std::size_t kTopRows = 10;
constexpr std::size_t kNameWidth = 60;  // longer names (templated kernels) are cut with "..."

std::string cut(const std::string& name) {
  return name.size() <= kNameWidth ? name : name.substr(0, kNameWidth - 3) + "...";
}

void print_named(const std::vector<NamedTime>& rows, std::string_view title, std::string_view what, TimeNs path_ns) {
  if (rows.empty()) return;
  fmt::print("\n{}\n  {:<{}} {:>12} {:>7} {:>7}\n", title, what, kNameWidth, "ms", "share", "tasks");
  for (std::size_t i = 0; i < std::min(kTopRows, rows.size()); ++i)
    fmt::print("  {:<{}} {:>12} {:>7} {:>7}\n", cut(rows[i].name), kNameWidth, format_ms_us(rows[i].ns),
               share_text(rows[i].ns, path_ns), rows[i].tasks);
  if (rows.size() > kTopRows) fmt::print("  ({} more)\n", rows.size() - kTopRows);
}

void print_streams(const std::vector<StreamIdle>& streams) {
  if (streams.empty()) return;
  fmt::print("\nGPU streams inside the iterations (share of the window)\n  {:<28} {:>7} {:>7}", "stream", "busy", "idle");
  for (std::size_t c = 0; c < kIdleCauseCount; ++c) fmt::print(" {:>13}", to_string(static_cast<IdleCause>(c)));
  fmt::print("\n");
  for (const StreamIdle& s : streams) {
    fmt::print("  {:<28} {:>7} {:>7}", s.unit + (s.main ? " *" : ""), share_text(s.busy_ns, s.window_ns),
               share_text(s.idle_ns(), s.window_ns));
    for (TimeNs ns : s.idle_by_cause_ns) fmt::print(" {:>13}", share_text(ns, s.window_ns));
    fmt::print("\n");
  }
  fmt::print("  (* the busiest stream of its GPU, which the summary below speaks of)\n");
}

void print_report(const BottleneckReport& r, const std::string& trace) {
  fmt::print("trace: {}\n", trace);
  if (r.iterations > 0)
    fmt::print("{} iterations, median {} ms; window {} to {} ms\n", r.iterations, format_ms_us(r.iteration_ns),
               format_ms_us(r.window_start_ns), format_ms_us(r.window_end_ns));
  else fmt::print("no iterations marked: the whole run, {} ms\n", format_ms_us(r.window_end_ns - r.window_start_ns));
  print_critical_path(r.critical_path, "critical path inside the iterations");
  print_named(r.by_operator, "top operators on the critical path (innermost operator of each task)", "operator",
              r.critical_path.length_ns);
  print_named(r.by_kernel, "top kernels on the critical path", "kernel", r.critical_path.length_ns);
  print_streams(r.streams);
  fmt::print("\n{}\n", r.summary);
}

}  // namespace

int run_bottleneck(const BottleneckOptions& options) {
  const Predictor predictor(load_graph(options.common, options.layer_file));
  const BottleneckReport report = find_bottleneck(predictor);
  if (options.common.json) std::cout << to_json(report, options.common.label());
  else print_report(report, options.common.label());
  return 0;
}

}  // namespace daydream::cli
