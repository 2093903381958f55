#pragma once
/// @file cost.hpp
/// @brief What a training job costs to rent: list prices per GPU-hour (a dated built-in list,
/// overridable from a JSON file) and, for an iteration time, the job's throughput and the cost of
/// 1,000 iterations on its GPUs: DeepView's deployment table. docs/gpu_model.md, "Cost".
///
/// @code
///   const auto catalog = daydream::DeviceCatalog::builtin();
///   const auto prices = daydream::PriceList::builtin();
///   auto cost = daydream::run_cost(250'000'000, "NVIDIA H100 80GB HBM3", 0, 8, catalog, prices);
///   // cost.usd_per_1k_iterations = 0.25 s x 1000 x 8 GPUs x $4.29 / 3600 s = $2.38
/// @endcode

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daydream/device.hpp"
#include "daydream/trace.hpp"

namespace daydream {

/// The on-demand list price of renting one GPU for an hour.
struct GpuPrice {
  std::string gpu;              ///< a catalogue name (device.hpp), or as written for a GPU it lacks
  double usd_per_gpu_hour = 0;  ///< US dollars per GPU per hour
  std::string source;           ///< who lists it, where, and the date it was read
};

/// Prices per GPU model. Names resolve through the catalogue (any alias: "H100" is
/// H100-SXM5-80GB); a name the catalogue lacks stays as written (a GPU of a devices file).
class PriceList {
 public:
  /// The built-in list: on-demand prices of public GPU clouds, each with its source and date
  /// (docs/gpu_model.md lists them). GPUs no such list offers have no price.
  static PriceList builtin();
  /// `option` as `--price` takes it: "builtin" for the built-in list, else a prices file whose
  /// entries replace or add to the built-in ones.
  static PriceList from_option(const std::string& option, const DeviceCatalog& catalog);

  /// Adds the prices of a JSON file `{"source": "...", "prices": [{"gpu": "H100",
  /// "usd_per_gpu_hour": 2.49, "source": "..."}]}` (each entry's source defaults to the file's,
  /// else to the path). Throws Error naming the file, the entry and the field for anything
  /// malformed: a missing GPU name, a price that is not a positive number under 10,000.
  void load_json(const std::string& path, const DeviceCatalog& catalog);
  /// Adds or replaces the price of `price.gpu` (names compare ignoring case).
  void set(GpuPrice price);

  /// The price of the GPU of this name (exactly, ignoring case); nullptr when none.
  const GpuPrice* find(std::string_view gpu) const;
  const std::vector<GpuPrice>& prices() const { return prices_; }

 private:
  std::vector<GpuPrice> prices_;
};

/// Throughput and cost of a job that takes `iteration_ns` per iteration.
struct RunCost {
  /// The GPU: its catalogue name, or the recorded name when the catalogue lacks it; "" when the
  /// trace records none.
  std::string gpu;
  std::int64_t gpus = 1;          ///< GPUs of the job (its world size)
  double iterations_per_s = 0;    ///< 0 for an iteration of no time
  double samples_per_s = 0;       ///< iterations_per_s x batch per GPU x gpus; 0 when no batch is given
  std::optional<GpuPrice> price;  ///< none when the list has no price for the GPU
  /// iteration time x 1,000 x gpus x price per GPU-hour / 3,600 s; 0 without a price.
  double usd_per_1k_iterations = 0;
};

/// The cost of running iterations of `iteration_ns` on `gpus` GPUs of the model a trace records
/// as `gpu` (and `gpu_memory_bytes`, 0 if unknown; identified as DeviceCatalog::identify does).
/// `batch_per_gpu` (samples per GPU per iteration) gives samples_per_s; 0 leaves it 0.
/// `fallback_gpu`, when not empty, is the catalogue GPU to price when `gpu` is empty or unknown to
/// the catalogue (the user naming a trace's GPU). Throws Error for a non-positive GPU count, a
/// negative batch or an unknown fallback.
RunCost run_cost(TimeNs iteration_ns, std::string_view gpu, double gpu_memory_bytes, std::int64_t gpus,
                 const DeviceCatalog& catalog, const PriceList& prices, std::int64_t batch_per_gpu = 0,
                 std::string_view fallback_gpu = {});

}  // namespace daydream
