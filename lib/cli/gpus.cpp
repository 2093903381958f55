// `daydream gpus`: the GPU catalogue of the GPU model (docs/gpu_model.md), and which entry a
// trace's GPU is.
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "daydream/device.hpp"
#include "daydream/ingest.hpp"
#include "report/json_writer.hpp"

namespace daydream::cli {
namespace {

constexpr double kTera = 1e12, kGiga = 1e9, kGiB = 1024.0 * 1024 * 1024, kMiB = 1024.0 * 1024;

/// One GPU in the fields and units of a devices file, so that the output can be edited and loaded.
void write_device(JsonWriter& w, const DeviceSpec& d) {
  w.begin_object().key("name").value(d.name).key("aliases").begin_array();
  for (const std::string& alias : d.aliases) w.value(alias);
  w.end_array().key("vendor").value(d.vendor);
  w.key("compute_major").value(std::int64_t{d.compute_major}).key("compute_minor").value(std::int64_t{d.compute_minor});
  w.key("sm_count").value(std::int64_t{d.sm_count});
  for (const DeviceNumberField& field : device_number_fields()) w.key(field.key).ratio(d.*field.member / field.unit);
  w.key("source").value(d.source).end_object();
}

void print_table(const DeviceCatalog& catalog) {
  fmt::print("{:<16} {:>4} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>6} {:>5}\n", "gpu", "SMs", "MHz",
             "fp32", "fp16s", "tf32", "fp16", "bf16", "fp8", "GB/s", "GiB", "L2MiB", "W");
  for (const DeviceSpec& d : catalog.devices())
    fmt::print("{:<16} {:>4} {:>6.0f} {:>7.1f} {:>7.1f} {:>7.1f} {:>7.1f} {:>7.1f} {:>7.1f} {:>7.0f} {:>6.0f} {:>6.1f} "
               "{:>5.0f}\n",
               d.name, d.sm_count, d.boost_clock_mhz, d.fp32_flops / kTera, d.fp16_simt_flops / kTera,
               d.tf32_flops / kTera, d.fp16_flops / kTera, d.bf16_flops / kTera, d.fp8_flops / kTera,
               d.memory_bandwidth / kGiga, d.memory_bytes / kGiB, d.l2_bytes / kMiB, d.power_watts);
  fmt::print("\nthroughputs in TFLOP/s, dense (fp16s: SIMT fp16; tf32/fp16/bf16/fp8: tensor cores, fp32 accumulate); "
             "0 = none or not published; sources: daydream gpus --json\n");
}

int print_traced(const DeviceCatalog& catalog, const std::string& path, bool json) {
  const Trace trace = load_trace(path);
  const DeviceSpec& spec = traced_device(catalog, trace.metadata.gpus, path);
  if (json) {
    JsonWriter w;
    w.begin_object().key("trace").value(path).key("recorded").value(trace.metadata.gpus.front().name).key("device");
    write_device(w, spec);
    std::cout << w.end_object().str();
    return 0;
  }
  fmt::print("{}: '{}' is {} ({})\n", path, trace.metadata.gpus.front().name, spec.name, spec.source);
  return 0;
}

}  // namespace

int run_gpus(const GpusOptions& options) {
  const DeviceCatalog catalog = DeviceCatalog::with_file(options.devices_file);
  if (!options.trace.empty()) return print_traced(catalog, options.trace, options.json);
  if (!options.json) {
    print_table(catalog);
    return 0;
  }
  JsonWriter w;
  w.begin_object().key("devices").begin_array();
  for (const DeviceSpec& d : catalog.devices()) write_device(w, d);
  std::cout << w.end_array().end_object().str();
  return 0;
}

}  // namespace daydream::cli
