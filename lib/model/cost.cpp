// Rental prices per GPU-hour and what a job costs at a given iteration time (cost.hpp;
// docs/gpu_model.md, "Cost").
#include <simdjson.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "daydream/cost.hpp"
#include "daydream/error.hpp"
#include "daydream/ingest.hpp"

namespace daydream {
namespace {

// The built-in list: on-demand prices per GPU from Lambda's list where it offers the GPU, else
// from RunPod's (Secure Cloud), read on the dates given; one provider per GPU. List prices move
// (the H100's fell from above $7 in early 2024 to $2-4 in 2026) and differ 2-4x between
// providers: give yours with --price FILE.
constexpr const char* kLambda = "Lambda on-demand, 1-GPU instance, lambda.ai/pricing, read 2026-09-25";
constexpr const char* kLambda8 = "Lambda on-demand, 8-GPU instance, per GPU, lambda.ai/pricing, read 2026-09-25";
constexpr const char* kLambdaV100 = "Lambda on-demand, 8x Tesla V100 16 GB instance, per GPU, lambda.ai/instances, read 2026-09-20";
constexpr const char* kRunPod = "RunPod Secure Cloud on-demand, runpod.io/pricing, read 2026-09-25";
constexpr double kMaxPrice = 10'000;  // USD per GPU-hour: anything above is a unit mistake

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

class PriceFileReader {
 public:
  PriceFileReader(PriceList& prices, const DeviceCatalog& catalog, std::string path)
      : prices_(prices), catalog_(catalog), path_(std::move(path)) {}

  void read(const std::string& json) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto error = parser.parse(json).get(doc)) fail(-1, "", fmt::format("invalid JSON ({})", simdjson::error_message(error)));
    std::string file_source = path_;
    simdjson::dom::element value;
    if (!doc["source"].get(value)) file_source = text(value, -1, "source");
    simdjson::dom::array entries;
    if (doc["prices"].get(entries)) fail(-1, "prices", "missing or not an array");
    std::int64_t index = 0;
    for (simdjson::dom::element entry : entries) prices_.set(read_entry(entry, index++, file_source));
  }

 private:
  [[noreturn]] void fail(std::int64_t index, std::string field, const std::string& problem) const {
    throw Error(path_, index, std::move(field), index < 0 ? problem : "price entry: " + problem);
  }

  std::string text(simdjson::dom::element value, std::int64_t index, const char* field) const {
    std::string_view out;
    if (value.get(out) || out.empty()) fail(index, field, "not a non-empty string");
    return std::string(out);
  }

  GpuPrice read_entry(simdjson::dom::element entry, std::int64_t index, const std::string& file_source) const {
    if (!entry.is_object()) fail(index, "", "not an object");
    simdjson::dom::element value;
    if (entry["gpu"].get(value)) fail(index, "gpu", "missing (the GPU's name, as `daydream gpus` lists it)");
    GpuPrice price;
    price.gpu = text(value, index, "gpu");
    if (const DeviceSpec* known = catalog_.find(price.gpu)) price.gpu = known->name;
    double usd = 0;
    if (entry["usd_per_gpu_hour"].get(value)) fail(index, "usd_per_gpu_hour", "missing");
    if (value.get(usd) || !std::isfinite(usd) || usd <= 0 || usd >= kMaxPrice)
      fail(index, "usd_per_gpu_hour",
           fmt::format("not a number above 0 and under {:.0f} (US dollars per GPU-hour)", kMaxPrice));
    price.usd_per_gpu_hour = usd;
    price.source = entry["source"].get(value) ? file_source : text(value, index, "source");
    return price;
  }

  PriceList& prices_;
  const DeviceCatalog& catalog_;
  std::string path_;
};

}  // namespace

PriceList PriceList::builtin() {
  PriceList list;
  for (GpuPrice price : std::vector<GpuPrice>{
           {"V100-SXM2-16GB", 0.79, kLambdaV100},
           {"A10", 1.29, kLambda},
           {"A100-SXM4-40GB", 1.99, kLambda},
           {"A100-SXM4-80GB", 2.79, kLambda8},
           {"A100-PCIE-80GB", 1.59, kRunPod},
           {"RTX-4090", 0.74, kRunPod},
           {"L40S", 1.09, kRunPod},
           {"H100-SXM5-80GB", 4.29, kLambda},
           {"H100-PCIE-80GB", 3.29, kLambda},
           {"H200-SXM-141GB", 4.59, kRunPod},
           {"B200", 6.99, kLambda},
       })
    list.set(std::move(price));
  return list;
}

PriceList PriceList::from_option(const std::string& option, const DeviceCatalog& catalog) {
  PriceList list = builtin();
  if (option != "builtin") list.load_json(option, catalog);
  return list;
}

void PriceList::load_json(const std::string& path, const DeviceCatalog& catalog) {
  const InputFile file = read_input_file(path);
  PriceFileReader(*this, catalog, path).read(file.contents);
}

void PriceList::set(GpuPrice price) {
  const auto same =
      std::find_if(prices_.begin(), prices_.end(), [&](const GpuPrice& p) { return same_name(p.gpu, price.gpu); });
  if (same != prices_.end()) *same = std::move(price);
  else prices_.push_back(std::move(price));
}

const GpuPrice* PriceList::find(std::string_view gpu) const {
  for (const GpuPrice& price : prices_)
    if (same_name(price.gpu, gpu)) return &price;
  return nullptr;
}

RunCost run_cost(TimeNs iteration_ns, std::string_view gpu, double gpu_memory_bytes, std::int64_t gpus,
                 const DeviceCatalog& catalog, const PriceList& prices, std::int64_t batch_per_gpu,
                 std::string_view fallback_gpu) {
  if (gpus < 1) throw Error(fmt::format("run_cost: a job runs on at least 1 GPU, not {}", gpus));
  if (batch_per_gpu < 0) throw Error(fmt::format("run_cost: the batch per GPU is {}, under 0", batch_per_gpu));
  RunCost cost;
  const DeviceSpec* known = gpu.empty() ? nullptr : catalog.identify(gpu, gpu_memory_bytes);
  if (!known && !fallback_gpu.empty()) known = &catalog.at(fallback_gpu);
  cost.gpu = known ? known->name : std::string(gpu);
  cost.gpus = gpus;
  if (iteration_ns <= 0) return cost;
  const double seconds = static_cast<double>(iteration_ns) * 1e-9;
  cost.iterations_per_s = 1.0 / seconds;
  cost.samples_per_s = cost.iterations_per_s * static_cast<double>(batch_per_gpu) * static_cast<double>(gpus);
  if (const GpuPrice* price = cost.gpu.empty() ? nullptr : prices.find(cost.gpu)) {
    cost.price = *price;
    cost.usd_per_1k_iterations = seconds * 1000 * static_cast<double>(gpus) * price->usd_per_gpu_hour / 3600;
  }
  return cost;
}

}  // namespace daydream
