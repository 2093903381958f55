// Cost (cost.hpp; docs/gpu_model.md, "Cost"): list prices per GPU-hour, a prices file over them,
// and what a job costs per 1,000 iterations; the GPU and GPU count a prediction runs on.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "daydream/cost.hpp"
#include "daydream/error.hpp"
#include "daydream/predict.hpp"
#include "unit/graph_helpers.hpp"
#include "unit/scenario_helpers.hpp"
#include "unit/trace_builder.hpp"

using namespace daydream;

namespace {

const DeviceCatalog& catalog() {
  static const DeviceCatalog builtin = DeviceCatalog::builtin();
  return builtin;
}

/// A prices file in the temporary directory, removed at the end of the test.
struct PricesFile {
  std::filesystem::path path = std::filesystem::temp_directory_path() / "daydream_test_prices.json";
  explicit PricesFile(const std::string& json) { std::ofstream(path) << json; }
  ~PricesFile() { std::filesystem::remove(path); }
};

/// One 1 ms step of one kernel on a recorded A100, marked as ProfilerStep#1.
Graph a100_step() {
  test::KinetoJson t;
  t.device(R"({"id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42297524224, "computeMajor": 8, )"
           R"("computeMinor": 0, "numSms": 108})");
  t.annotation("ProfilerStep#1", 0, 1000);
  t.runtime("cudaLaunchKernel", 1, 3, 1);
  t.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)", 10, 900, 1);
  t.runtime("cudaDeviceSynchronize", 5, 995, 2);
  return test::graph_of(t.str());
}

}  // namespace

TEST_CASE("cost: throughput and cost per 1,000 iterations of a job, on the GPU a trace names", "[gpu][cost]") {
  const PriceList prices = PriceList::builtin();
  // 250 ms per iteration on 8 H100s at $4.29 per GPU-hour: 4 iterations/s, 0.25 s x 1000 x 8 x 4.29 / 3600.
  const RunCost h100 = run_cost(250'000'000, "NVIDIA H100 80GB HBM3", 0, 8, catalog(), prices, 32);
  CHECK(h100.gpu == "H100-SXM5-80GB");
  CHECK(h100.gpus == 8);
  CHECK(h100.iterations_per_s == 4.0);
  CHECK(h100.samples_per_s == 4.0 * 32 * 8);
  REQUIRE(h100.price);
  CHECK(h100.price->usd_per_gpu_hour == 4.29);
  CHECK(h100.price->source.find("2026-") != std::string::npos);  // every list price carries its date
  CHECK(h100.usd_per_1k_iterations == Approx(0.25 * 1000 * 8 * 4.29 / 3600));
  // No batch: no samples/s. A GPU without a list price: throughput, no cost.
  const RunCost l4 = run_cost(100'000'000, "NVIDIA L4", 0, 1, catalog(), prices);
  CHECK(l4.gpu == "L4");
  CHECK(l4.iterations_per_s == 10.0);
  CHECK(l4.samples_per_s == 0);
  CHECK_FALSE(l4.price);
  CHECK(l4.usd_per_1k_iterations == 0);
  // A GPU the catalogue lacks keeps its recorded name; the fallback names the traced GPU.
  CHECK(run_cost(1'000'000, "Synthetic GPU", 0, 1, catalog(), prices).gpu == "Synthetic GPU");
  const RunCost named = run_cost(1'000'000, "Synthetic GPU", 0, 1, catalog(), prices, 0, "A100");
  CHECK(named.gpu == "A100-SXM4-40GB");
  CHECK(named.price->usd_per_gpu_hour == 1.99);
  CHECK(run_cost(1'000'000, "", 0, 1, catalog(), prices).gpu.empty());
  // An iteration of no time has no throughput (no division by zero).
  CHECK(run_cost(0, "NVIDIA L4", 0, 1, catalog(), prices).iterations_per_s == 0);
  CHECK_THROWS_WITH(run_cost(1, "L4", 0, 0, catalog(), prices), Catch::Contains("at least 1 GPU"));
  CHECK_THROWS_WITH(run_cost(1, "L4", 0, 1, catalog(), prices, -1), Catch::Contains("batch"));
  CHECK_THROWS_WITH(run_cost(1, "", 0, 1, catalog(), prices, 0, "Z9000"), Catch::Contains("unknown GPU 'Z9000'"));
  // Every built-in price names a catalogue GPU, by its canonical name.
  for (const GpuPrice& price : prices.prices()) {
    INFO(price.gpu);
    REQUIRE(catalog().find(price.gpu) != nullptr);
    CHECK(catalog().find(price.gpu)->name == price.gpu);
  }
}

TEST_CASE("cost: a prices file replaces and adds prices, its errors name file, entry and field", "[gpu][cost]") {
  {
    const PricesFile file(R"({"source": "my cloud, 2026-11", "prices": [
        {"gpu": "a100", "usd_per_gpu_hour": 1.1},
        {"gpu": "L4", "usd_per_gpu_hour": 0.5, "source": "spot"},
        {"gpu": "Zeta 9000", "usd_per_gpu_hour": 9}]})");
    const PriceList prices = PriceList::from_option(file.path.string(), catalog());
    REQUIRE(prices.find("A100-SXM4-40GB"));  // the alias resolves to the catalogue's name
    CHECK(prices.find("A100-SXM4-40GB")->usd_per_gpu_hour == 1.1);
    CHECK(prices.find("A100-SXM4-40GB")->source == "my cloud, 2026-11");
    CHECK(prices.find("l4")->source == "spot");
    CHECK(prices.find("Zeta 9000")->usd_per_gpu_hour == 9);           // not in the catalogue: as written
    CHECK(prices.find("H100-SXM5-80GB")->usd_per_gpu_hour == 4.29);  // the built-in list stays under it
    // 3.6 s x 1000 iterations x 2 GPUs = 2 GPU-hours at $9.
    CHECK(run_cost(3'600'000'000, "Zeta 9000", 0, 2, catalog(), prices).usd_per_1k_iterations == Approx(18));
  }
  const auto fails = [](const std::string& json, const std::string& what) {
    const PricesFile file(json);
    CHECK_THROWS_WITH(PriceList::from_option(file.path.string(), catalog()),
                      Catch::Contains("daydream_test_prices.json") && Catch::Contains(what));
  };
  fails(R"({"prices": [{"gpu": "L4", "usd_per_gpu_hour": 0.5}, {"gpu": "H100", "usd_per_gpu_hour": -1}]})",
        "event #1: field \"usd_per_gpu_hour\"");
  fails(R"({"prices": [{"gpu": "H100", "usd_per_gpu_hour": 1e9}]})", "under 10000");
  fails(R"({"prices": [{"usd_per_gpu_hour": 2}]})", "field \"gpu\"");
  fails(R"({"prices": [{"gpu": "H100", "usd_per_gpu_hour": "2"}]})", "usd_per_gpu_hour");
  fails(R"({"prices": {"gpu": "H100"}})", "field \"prices\"");
  fails(R"({"prices": [)", "invalid JSON");
  CHECK_THROWS_AS(PriceList::from_option("/nonexistent/prices.json", catalog()), Error);
}

TEST_CASE("cost: a prediction runs on the gpu scenario's target, on the job's GPUs", "[gpu][cost]") {
  Graph base = a100_step();
  base.world_size = 8;  // one rank's trace of an 8-GPU job
  const Predictor predictor(base);
  const Prediction same = predictor.predict(parse_scenario_spec("faster_gpu:factor=2"));
  CHECK(same.gpu == "NVIDIA A100-SXM4-40GB");
  CHECK(same.gpu_memory_bytes == 42297524224.0);
  CHECK(same.gpus == 8);
  const Prediction moved = predictor.predict(parse_scenario_spec("gpu:target=H100"));
  CHECK(moved.gpu == "H100-SXM5-80GB");
  CHECK(moved.gpus == 8);
  // The changed graph records the target, so a second move starts from it.
  Graph twice = a100_step();
  test::apply(twice, "gpu:target=H100");
  REQUIRE(twice.gpus().size() == 1);
  CHECK(twice.gpus().front().sm_count == 132);
  CHECK(twice.gpus().front().memory_bytes == catalog().at("H100").memory_bytes);
  CHECK(traced_device(catalog(), twice.gpus(), "").name == "H100-SXM5-80GB");
  const auto notes = test::apply(twice, "gpu:target=H200").notes;
  CHECK(notes.front().rfind("H100-SXM5-80GB -> H200-SXM-141GB", 0) == 0);
}
