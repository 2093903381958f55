// `daydream roofline`: each kernel class, operator and layer of a trace on the roofline of its
// GPU, and expected (at peak) vs measured time (docs/gpu_model.md, "Roofline report").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "cli/commands.hpp"
#include "daydream/ingest.hpp"
#include "daydream/layers.hpp"
#include "daydream/roofline.hpp"
#include "report/json_writer.hpp"

namespace daydream::cli {
namespace {

constexpr double kTera = 1e12, kGiga = 1e9;
constexpr std::size_t kMaxNameWidth = 60;

/// A number with fixed decimals, or "n/a" when it is not finite.
std::string number(double value, int decimals) {
  return std::isfinite(value) ? fmt::format("{:.{}f}", value, decimals) : std::string("n/a");
}

std::string ms(double ns) { return number(ns / 1e6, 3); }
std::string ms(TimeNs ns) { return ms(static_cast<double>(ns)); }

/// A row's FLOPs or bytes in `unit`, or "n/a" when none of its kernels has known work.
std::string work_text(const RooflineRow& row, double value, double unit, int decimals) {
  return row.has_work() ? number(value / unit, decimals) : std::string("n/a");
}

void print_header(const RooflineReport& r) {
  const DeviceSpec& d = r.device;
  fmt::print("trace: {}\ndevice: {}", r.trace, d.name);
  if (!r.recorded_gpu.empty()) fmt::print(" (the trace records '{}')", r.recorded_gpu);
  fmt::print("; memory {:.0f} GB/s\npeaks, TFLOP/s (ridge point, FLOP/byte):", d.memory_bandwidth / kGiga);
  for (std::size_t i = 0; i < r.peaks.size(); ++i) {
    const RooflinePeak& p = r.peaks[i];
    const std::string value = p.flops > 0 ? fmt::format("{:.1f} ({:.2f})", p.flops / kTera, p.ridge) : "none";
    fmt::print("{} {} {} {}", i == 0 ? "" : ",", to_string(p.engine), to_string(p.precision), value);
  }
  const double shaped = r.kernel_ns > 0 ? 100.0 * static_cast<double>(r.shaped_ns) / static_cast<double>(r.kernel_ns) : 0;
  fmt::print("\nkernels: {}, {} ms; ", r.kernels, ms(r.kernel_ns));
  if (r.shaped_kernels == 0) fmt::print("no work from shapes: every kernel classed by name\n");
  else
    fmt::print("work from shapes for {} kernels, {} ms ({:.1f}%); the others classed by name\n", r.shaped_kernels,
               ms(r.shaped_ns), shaped);
  fmt::print("operators with shapes: {}", r.recorded_operators);
  if (r.malformed_operators > 0) fmt::print(" ({} more with malformed shapes, dropped at import)", r.malformed_operators);
  if (r.unusable_operators > 0)
    fmt::print("; {} whose shapes their rule cannot use, first: {}", r.unusable_operators, r.first_unusable);
  fmt::print("\n");
}

std::size_t name_width(const std::vector<RooflineRow>& rows, std::string_view title) {
  std::size_t width = title.size();
  for (const RooflineRow& row : rows) width = std::max(width, std::min(row.name.size(), kMaxNameWidth));
  return width;
}

void print_rows(std::string_view title, std::string_view name_title, const std::vector<RooflineRow>& rows) {
  if (rows.empty()) return;
  const std::size_t width = name_width(rows, name_title);
  fmt::print("\n{}\n{:>11} {:>8} {:>11} {:>10} {:>8} {:>9} {:>7} {:<8} {:<{}}  {}\n", title, "ms", "kernels", "GFLOP",
             "GB", "TFLOP/s", "GB/s", "%peak", "bound", name_title, width, "decided by");
  for (const RooflineRow& row : rows) {
    const double share = row.share_of_peak();
    fmt::print("{:>11} {:>8} {:>11} {:>10} {:>8} {:>9} {:>7} {:<8} {:<{}}  {}\n", ms(row.time_ns), row.kernels,
               work_text(row, row.flops, kGiga, 3), work_text(row, row.bytes, kGiga, 3),
               number(row.achieved_flops() / kTera, 3), number(row.achieved_bandwidth() / kGiga, 1),
               std::isfinite(share) ? fmt::format("{:.1f}%", 100 * share) : "n/a", to_string(row.bound), row.name,
               width, row.decided_by);
  }
}

void print_expected(const RooflineReport& r) {
  if (r.expected.empty()) return;
  const std::string_view what = r.expected_by_layer ? "layer" : "operator";
  fmt::print("\nexpected at peak (max of FLOPs / peak and bytes / bandwidth) vs measured, per {}, kernels with work\n"
             "{:>11} {:>11} {:>8} {:>8} {:>11} {:>10} {:<8} {}\n",
             what, "measured ms", "expected ms", "ratio", "kernels", "GFLOP", "GB", "bound", what);
  for (const RooflineRow& row : r.expected) {
    const double expected = row.expected_ns();
    const double ratio = expected > 0 ? static_cast<double>(row.shaped_ns) / expected : std::nan("");
    const Bound bound = row.compute_ns >= row.memory_ns ? Bound::compute : Bound::memory;
    fmt::print("{:>11} {:>11} {:>8} {:>8} {:>11} {:>10} {:<8} {}\n", ms(row.shaped_ns), ms(expected),
               number(ratio, 2) + (std::isfinite(ratio) ? "x" : ""), row.shaped_kernels, number(row.flops / kGiga, 3),
               number(row.bytes / kGiga, 3), to_string(bound), row.name);
  }
}

// --- JSON ---

void write_row(JsonWriter& w, const RooflineRow& row) {
  w.begin_object().key("name").value(row.name);
  w.key("engine").value(to_string(row.engine)).key("precision").value(to_string(row.precision));
  w.key("bound").value(to_string(row.bound)).key("decided_by").value(row.decided_by);
  w.key("time_ms").milliseconds(row.time_ns).key("kernels").value(row.kernels);
  w.key("shaped_time_ms").milliseconds(row.shaped_ns).key("shaped_kernels").value(row.shaped_kernels);
  const double none = std::nan("");
  w.key("flops").ratio(row.has_work() ? row.flops : none).key("bytes").ratio(row.has_work() ? row.bytes : none);
  w.key("intensity").ratio(row.intensity()).key("ridge").ratio(row.ridge());
  w.key("achieved_tflops").ratio(row.achieved_flops() / kTera).key("achieved_gbps").ratio(row.achieved_bandwidth() / kGiga);
  w.key("share_of_peak").ratio(row.share_of_peak());
  w.key("expected_ms").ratio(row.has_work() ? row.expected_ns() / 1e6 : none).end_object();
}

void write_rows(JsonWriter& w, std::string_view key, const std::vector<RooflineRow>& rows) {
  w.key(key).begin_array();
  for (const RooflineRow& row : rows) write_row(w, row);
  w.end_array();
}

void write_json(const RooflineReport& r) {
  JsonWriter w;
  w.begin_object().key("trace").value(r.trace).key("device").begin_object().key("name").value(r.device.name);
  w.key("recorded").value(r.recorded_gpu).key("memory_bandwidth_gbps").ratio(r.device.memory_bandwidth / kGiga);
  w.key("peaks").begin_array();
  for (const RooflinePeak& p : r.peaks)
    w.begin_object().key("engine").value(to_string(p.engine)).key("precision").value(to_string(p.precision))
        .key("tflops").ratio(p.flops / kTera).key("ridge").ratio(p.ridge).end_object();
  w.end_array().end_object();
  w.key("kernels").value(r.kernels).key("time_ms").milliseconds(r.kernel_ns);
  w.key("shaped_kernels").value(r.shaped_kernels).key("shaped_time_ms").milliseconds(r.shaped_ns);
  w.key("recorded_operators").value(r.recorded_operators).key("malformed_operators").value(r.malformed_operators);
  w.key("unusable_operators").value(r.unusable_operators);
  w.key("first_unusable").value(r.first_unusable);
  write_rows(w, "classes", r.classes);
  write_rows(w, "operators", r.operators);
  write_rows(w, "layers", r.layers);
  w.key("expected_by").value(r.expected_by_layer ? "layer" : "operator");
  write_rows(w, "expected", r.expected);
  std::cout << w.end_object().str();
}

}  // namespace

int run_roofline(const RooflineOptions& options) {
  const DeviceCatalog catalog = DeviceCatalog::with_file(options.devices_file);
  if (!options.device.empty()) catalog.at(options.device);  // an unknown name fails before the trace is read
  Graph graph = build_graph(load_trace(options.common.trace_file("roofline")), options.common.graph_options());
  if (!options.layer_file.empty()) apply_layer_file(graph, options.layer_file);
  const RooflineReport report = make_roofline(graph, roofline_device(catalog, graph, options.device));
  if (options.common.json) {
    write_json(report);
    return 0;
  }
  print_header(report);
  print_rows("kernel classes", "class", report.classes);
  print_rows("operators", "operator", report.operators);
  print_rows("layers", "layer", report.layers);
  print_expected(report);
  return 0;
}

}  // namespace daydream::cli
