// User GPUs for the catalogue, from a JSON file (docs/gpu_model.md, "Your own GPUs").
#include <simdjson.h>

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "daydream/device.hpp"
#include "daydream/error.hpp"
#include "daydream/ingest.hpp"

namespace daydream {
namespace {

constexpr double kTera = 1e12, kGiga = 1e9, kGiB = 1024.0 * 1024 * 1024, kMiB = 1024.0 * 1024;

class DeviceFileReader {
 public:
  DeviceFileReader(DeviceCatalog& catalog, std::string path) : catalog_(catalog), path_(std::move(path)) {}

  void read(const std::string& json) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto error = parser.parse(json).get(doc)) fail(-1, "", fmt::format("invalid JSON ({})", simdjson::error_message(error)));
    simdjson::dom::array entries;
    if (doc["devices"].get(entries)) fail(-1, "devices", "missing or not an array");
    std::int64_t index = 0;
    for (simdjson::dom::element entry : entries) catalog_.add(read_entry(entry, index++));
  }

 private:
  [[noreturn]] void fail(std::int64_t index, std::string field, const std::string& problem) const {
    throw Error(path_, index, std::move(field), index < 0 ? problem : "device entry: " + problem);
  }

  DeviceSpec read_entry(simdjson::dom::element entry, std::int64_t index) const {
    std::string_view name;
    if (!entry.is_object()) fail(index, "", "not an object");
    if (entry["name"].get(name) || name.empty()) fail(index, "name", "missing or not a non-empty string");
    const DeviceSpec* known = catalog_.find(name);
    DeviceSpec spec = known ? *known : DeviceSpec{};
    spec.name = std::string(name);
    for (const DeviceNumberField& field : device_number_fields()) read_number(entry, index, field, spec);
    read_text(entry, index, "vendor", spec.vendor);
    read_text(entry, index, "source", spec.source);
    if (!known && spec.source.empty()) spec.source = path_;
    read_integer(entry, index, "sm_count", spec.sm_count);
    read_integer(entry, index, "compute_major", spec.compute_major);
    read_integer(entry, index, "compute_minor", spec.compute_minor);
    read_aliases(entry, index, spec);
    if (!(spec.memory_bandwidth > 0)) fail(index, "memory_bandwidth_gbps", "missing (a new GPU needs its memory bandwidth)");
    return spec;
  }

  void read_number(simdjson::dom::element entry, std::int64_t index, const DeviceNumberField& field,
                   DeviceSpec& spec) const {
    simdjson::dom::element value;
    if (entry[field.key].get(value)) return;
    double number = 0;
    if (value.get(number) || !std::isfinite(number) || number < 0 || number > 1e9)
      fail(index, std::string(field.key), "not a number between 0 and 1e9");
    spec.*field.member = number * field.unit;
  }

  void read_integer(simdjson::dom::element entry, std::int64_t index, const char* key, std::int32_t& out) const {
    simdjson::dom::element value;
    if (entry[key].get(value)) return;
    std::int64_t number = 0;
    if (value.get(number) || number < 0 || number > 100'000) fail(index, key, "not an integer between 0 and 100000");
    out = static_cast<std::int32_t>(number);
  }

  void read_text(simdjson::dom::element entry, std::int64_t index, const char* key, std::string& out) const {
    simdjson::dom::element value;
    if (entry[key].get(value)) return;
    std::string_view text;
    if (value.get(text)) fail(index, key, "not a string");
    out = std::string(text);
  }

  void read_aliases(simdjson::dom::element entry, std::int64_t index, DeviceSpec& spec) const {
    simdjson::dom::element value;
    if (entry["aliases"].get(value)) return;
    simdjson::dom::array aliases;
    if (value.get(aliases)) fail(index, "aliases", "not an array of strings");
    spec.aliases.clear();
    for (simdjson::dom::element alias : aliases) {
      std::string_view text;
      if (alias.get(text) || text.empty()) fail(index, "aliases", "not an array of non-empty strings");
      spec.aliases.emplace_back(text);
    }
  }

  DeviceCatalog& catalog_;
  std::string path_;
};

}  // namespace

const std::vector<DeviceNumberField>& device_number_fields() {
  static const std::vector<DeviceNumberField> fields = {
      {"boost_clock_mhz", &DeviceSpec::boost_clock_mhz, 1},
      {"fp32_tflops", &DeviceSpec::fp32_flops, kTera},
      {"fp16_simt_tflops", &DeviceSpec::fp16_simt_flops, kTera},
      {"tf32_tflops", &DeviceSpec::tf32_flops, kTera},
      {"fp16_tflops", &DeviceSpec::fp16_flops, kTera},
      {"bf16_tflops", &DeviceSpec::bf16_flops, kTera},
      {"fp8_tflops", &DeviceSpec::fp8_flops, kTera},
      {"memory_bandwidth_gbps", &DeviceSpec::memory_bandwidth, kGiga},
      {"memory_gib", &DeviceSpec::memory_bytes, kGiB},
      {"l2_mib", &DeviceSpec::l2_bytes, kMiB},
      {"power_watts", &DeviceSpec::power_watts, 1},
      {"host_bandwidth_gbps", &DeviceSpec::host_bandwidth, kGiga},
  };
  return fields;
}

void DeviceCatalog::load_json(const std::string& path) {
  const InputFile file = read_input_file(path);
  DeviceFileReader(*this, path).read(file.contents);
}

}  // namespace daydream
