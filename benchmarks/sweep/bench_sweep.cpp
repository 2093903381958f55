// Sweep throughput: scenarios predicted per second from one base graph, by thread count, with
// the per-scenario cost split into its parts (copy + apply, simulate, report). One JSON line per
// thread count on stdout.
//
//   daydream_bench_sweep [--program-heap] TRACE [SCENARIOS=48] [THREADS=1,2] [RUNS=3]
//   daydream_bench_sweep [--program-heap] --phases TRACE [SCENARIOS=48] [RUNS=3] [ONLY]
//
// --program-heap: the heap as the `daydream` program has it (reserve_huge_page_heap first).
//
// --phases times one thread's scenarios phase by phase instead (Predictor::apply: the copy of the
// base graph, or of a restructured graph the Predictor kept, and the scenario; simulate; compare),
// per scenario of the mix: one JSON line per scenario name with the best of RUNS of each phase's
// mean, in ms. ONLY keeps the mix's scenarios of that
// name (for a profiler).
//
// The scenario mix is the one issue 19 measures: it cycles through cheap and structural
// what-ifs: faster_gpu / amp (durations only), dataloader_workers (inserts tasks and units),
// fused_adam (removes the optimizer's kernels and launches, inserts fused ones), cuda_graphs
// (removes the step's CPU work, inserts graph launches), each with varying parameters so no two
// specs are equal.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/measure.hpp"
#include "daydream/ingest.hpp"
#include "daydream/predict.hpp"
#include "common/huge_pages.hpp"

namespace {

std::vector<daydream::ScenarioSpec> scenario_mix(std::size_t count) {
  std::vector<daydream::ScenarioSpec> specs;
  for (std::size_t i = 0; i < count; ++i) {
    std::string text;
    const double step = double(i / 5 + 1);  // the parameters move with each round of the five
    switch (i % 5) {
      case 0: text = fmt::format("faster_gpu:factor={}", 1.0 + 0.1 * step); break;
      case 1: text = fmt::format("amp:tensor_core={},other={}", 2.0 + 0.05 * step, 1.5 + 0.01 * step); break;
      case 2: text = fmt::format("dataloader_workers:workers={}", 1 + i / 5 % 1024); break;
      case 3: text = fmt::format("fused_adam:factor={},kernels={}", 0.5 + 0.01 * step, 1 + i / 5 % 4096); break;
      default: text = fmt::format("cuda_graphs:launch={}us", 1 + i / 5 % 100000); break;
    }
    specs.push_back(daydream::parse_scenario_spec(text));
  }
  return specs;
}

std::vector<unsigned> parse_threads(const std::string& list) {
  std::vector<unsigned> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(static_cast<unsigned>(std::stoul(item)));
  return out;
}

/// Mean ms per scenario of each phase, by scenario name, as Predictor::predict runs them.
struct PhaseTimes {
  std::string name;
  std::size_t scenarios = 0;
  std::array<double, 3> best_ms{1e300, 1e300, 1e300};  // copy and apply, simulate, compare
};

int run_phases(const daydream::Predictor& predictor, const std::vector<daydream::ScenarioSpec>& specs, int runs) {
  using namespace daydream;
  using bench::Clock;
  std::vector<PhaseTimes> by_name;
  Graph changed;
  SimulationResult result;
  for (int r = 0; r < runs; ++r) {
    std::vector<std::array<double, 3>> sums(by_name.size());
    for (const ScenarioSpec& spec : specs) {
      auto it = std::find_if(by_name.begin(), by_name.end(), [&](const PhaseTimes& p) { return p.name == spec.name; });
      if (it == by_name.end()) by_name.push_back({spec.name}), sums.emplace_back(), it = by_name.end() - 1;
      auto& sum = sums[std::size_t(it - by_name.begin())];
      if (r == 0) ++it->scenarios;
      auto start = Clock::now();
      const ScenarioOutcome outcome = predictor.apply(spec, changed);  // copy and apply
      sum[0] += bench::seconds_since(start), start = Clock::now();
      if (outcome.policy) simulate_into(result, changed, *outcome.policy);
      else simulate_into(result, changed);
      sum[1] += bench::seconds_since(start), start = Clock::now();
      const Prediction p = predictor.compare(spec.text(), changed, result);
      sum[2] += bench::seconds_since(start);
    }
    for (std::size_t i = 0; i < by_name.size(); ++i)
      for (std::size_t k = 0; k < 3; ++k)
        by_name[i].best_ms[k] = std::min(by_name[i].best_ms[k], 1e3 * sums[i][k] / double(by_name[i].scenarios));
  }
  for (const PhaseTimes& p : by_name)
    std::printf("{\"bench\": \"sweep_phases\", \"scenario\": \"%s\", \"scenarios\": %zu, \"apply_ms\": %.3f, "
                "\"simulate_ms\": %.3f, \"compare_ms\": %.3f, \"total_ms\": %.3f}\n",
                p.name.c_str(), p.scenarios, p.best_ms[0], p.best_ms[1], p.best_ms[2],
                p.best_ms[0] + p.best_ms[1] + p.best_ms[2]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  using namespace daydream;
  using bench::Clock;
  if (argc > 1 && std::string_view(argv[1]) == "--program-heap") {  // the heap as `daydream` has it
    (void)reserve_huge_page_heap();
    argv[1] = argv[0], ++argv, --argc;
  }
  if (argc > 2 && std::string_view(argv[1]) == "--phases") {
    const Predictor predictor(build_graph(load_trace(argv[2])));
    auto specs = scenario_mix(argc > 3 ? std::stoul(argv[3]) : 48);
    if (argc > 5)
      specs.erase(std::remove_if(specs.begin(), specs.end(), [&](const ScenarioSpec& s) { return s.name != argv[5]; }),
                  specs.end());
    return run_phases(predictor, specs, argc > 4 ? std::atoi(argv[4]) : 3);
  }
  if (argc < 2) return std::fprintf(stderr, "usage: %s TRACE [SCENARIOS=48] [THREADS=1,2] [RUNS=3]\n", argv[0]), 2;
  const std::size_t count = argc > 2 ? std::stoul(argv[2]) : 48;
  const auto threads = parse_threads(argc > 3 ? argv[3] : "1,2");
  const int runs = argc > 4 ? std::atoi(argv[4]) : 3;

  auto start = Clock::now();
  const Predictor predictor(build_graph(load_trace(argv[1])));
  const double setup_s = bench::seconds_since(start);
  const auto specs = scenario_mix(count);
  for (unsigned t : threads) {
    bench::Timings timings;
    std::size_t failed = 0;
    for (int r = 0; r < runs; ++r) {
      start = Clock::now();
      const auto rows = sweep(predictor, specs, {t, {}});
      timings.add(bench::seconds_since(start));
      failed = 0;
      for (const auto& row : rows) failed += row.prediction ? 0 : 1;
    }
    std::printf("{\"bench\": \"sweep\", \"trace\": \"%s\", \"tasks\": %zu, \"scenarios\": %zu, \"threads\": %u, "
                "\"failed\": %zu, \"setup_s\": %.3f, \"best_s\": %.4f, \"median_s\": %.4f, "
                "\"scenarios_per_s\": %.1f, \"ms_per_scenario\": %.2f, \"peak_rss_mib\": %.1f}\n",
                argv[1], predictor.base().num_tasks(), specs.size(), t, failed, setup_s, timings.best(),
                timings.median(), double(specs.size()) / timings.best(), 1e3 * timings.best() / double(specs.size()),
                bench::peak_rss_mib());
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
