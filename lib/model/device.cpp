// The GPU catalogue: lookups, identification of a trace's GPU, and user entries from JSON.
#include "daydream/device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "daydream/error.hpp"
#include "graph/occupancy.hpp"

namespace daydream {
namespace {

/// Lower case, with '-' and '_' as spaces: "A100-SXM4-40GB" and "a100 sxm4 40gb" compare equal.
std::string folded(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = (c == '-' || c == '_') ? ' ' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// The longest alias (or name) of `spec` found in `folded_name`; 0 when none is.
std::size_t match_length(const DeviceSpec& spec, const std::string& folded_name) {
  std::size_t best = 0;
  const auto consider = [&](std::string_view alias) {
    if (folded_name.find(folded(alias)) != std::string::npos) best = std::max(best, alias.size());
  };
  consider(spec.name);
  for (const std::string& alias : spec.aliases) consider(alias);
  return best;
}

}  // namespace

std::string_view to_string(Precision precision) {
  switch (precision) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::fp8: return "fp8";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view text) {
  const std::string t = folded(text);
  if (t == "fp32" || t == "float32" || t == "float") return Precision::fp32;
  if (t == "tf32") return Precision::tf32;
  if (t == "fp16" || t == "float16" || t == "half") return Precision::fp16;
  if (t == "bf16" || t == "bfloat16") return Precision::bf16;
  if (t == "fp8") return Precision::fp8;
  return std::nullopt;
}

double DeviceSpec::peak_flops(Precision precision) const {
  switch (precision) {
    case Precision::fp32: return fp32_flops;
    case Precision::tf32: return tf32_flops;
    case Precision::fp16: return fp16_flops;
    case Precision::bf16: return bf16_flops;
    case Precision::fp8: return fp8_flops;
  }
  return 0;
}

double DeviceSpec::ridge_point(Precision precision) const {
  const double peak = peak_flops(precision);
  return peak > 0 && memory_bandwidth > 0 ? peak / memory_bandwidth : 0;
}

GpuResources DeviceSpec::resources() const {
  GpuResources gpu;
  gpu.sm_count = sm_count;
  gpu.compute_major = compute_major;
  gpu.compute_minor = compute_minor;
  gpu.max_threads_per_sm = architecture_max_threads(compute_major, compute_minor);
  return with_architecture_defaults(gpu);
}

void DeviceCatalog::add(DeviceSpec spec) {
  if (spec.name.empty()) throw Error("a GPU of the catalogue has no name");
  if (!(spec.memory_bandwidth > 0))
    throw Error(fmt::format("GPU '{}': memory bandwidth missing (memory_bandwidth_gbps)", spec.name));
  const auto same = std::find_if(devices_.begin(), devices_.end(),
                                 [&](const DeviceSpec& d) { return folded(d.name) == folded(spec.name); });
  if (same != devices_.end()) *same = std::move(spec);
  else devices_.push_back(std::move(spec));
}

const DeviceSpec* DeviceCatalog::find(std::string_view name) const {
  const std::string wanted = folded(name);
  for (const DeviceSpec& d : devices_)
    if (folded(d.name) == wanted) return &d;
  for (const DeviceSpec& d : devices_)
    for (const std::string& alias : d.aliases)
      if (folded(alias) == wanted) return &d;
  return nullptr;
}

const DeviceSpec& DeviceCatalog::at(std::string_view name) const {
  if (const DeviceSpec* d = identify(name)) return *d;
  std::string known;
  for (const DeviceSpec& d : devices_) known += (known.empty() ? "" : ", ") + d.name;
  throw Error(fmt::format("unknown GPU '{}' (known: {}; add others with a devices file, docs/gpu_model.md)", name, known));
}

const DeviceSpec* DeviceCatalog::identify(std::string_view trace_name, double memory_bytes) const {
  if (const DeviceSpec* exact = find(trace_name)) return exact;  // a catalogue name, as the gpu scenario records it
  const std::string name = folded(trace_name);
  const DeviceSpec* best = nullptr;
  std::size_t best_length = 0;
  for (const DeviceSpec& d : devices_) {
    const std::size_t length = match_length(d, name);
    if (length == 0 || length < best_length) continue;
    const bool closer = memory_bytes > 0 && best &&
                        std::abs(d.memory_bytes - memory_bytes) < std::abs(best->memory_bytes - memory_bytes);
    if (length > best_length || closer) best = &d, best_length = length;
  }
  return best;
}

const DeviceSpec& traced_device(const DeviceCatalog& catalog, const std::vector<GpuResources>& gpus,
                                std::string_view source_path) {
  if (gpus.empty() || gpus.front().name.empty())
    throw Error(fmt::format("{}: the trace records no GPU name (Kineto deviceProperties, Nsight TARGET_INFO_GPU); "
                            "name the traced GPU with from=<name>",
                            source_path));
  std::map<std::string, const DeviceSpec*> kinds;  // recorded name -> catalogue entry
  for (const GpuResources& gpu : gpus) {
    const DeviceSpec* spec = catalog.identify(gpu.name, gpu.memory_bytes);
    if (!spec)
      throw Error(fmt::format("{}: GPU '{}' is not in the catalogue; name a known GPU with from=<name> or add it "
                              "with a devices file (docs/gpu_model.md)",
                              source_path, gpu.name));
    kinds[gpu.name] = spec;
  }
  const DeviceSpec* first = kinds.begin()->second;
  for (const auto& [name, spec] : kinds)
    if (spec != first)
      throw Error(fmt::format("{}: the trace records GPUs of different kinds ('{}' and '{}'); name the traced GPU "
                              "with from=<name>",
                              source_path, kinds.begin()->first, name));
  return *first;
}

}  // namespace daydream
