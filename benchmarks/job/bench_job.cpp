// Multi-rank jobs at scale: the traced ranks of a job loaded and merged, then grown by
// replication (replicate_ranks) to each requested rank count and simulated. One JSON line per
// rank count on stdout: tasks, edges, replication and simulation time, tasks simulated per
// second, resident memory after the step, and the job's simulated iteration.
//
//   daydream_bench_job DIR_OR_TRACES... [--ranks 8,64,256,1024] [--program-heap]
//
// --program-heap: the heap as the `daydream` program has it (reserve_huge_page_heap first).
//
// Each size starts from the merged job, so the sizes are independent; run the largest alone
// (one process per size, see benchmarks/README.md) to read its peak memory.
#include <fmt/format.h>

#include <algorithm>

#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "common/measure.hpp"
#include "daydream/job.hpp"
#include "common/huge_pages.hpp"
#include "daydream/simulate.hpp"

namespace {

std::vector<std::int64_t> parse_list(const std::string& list) {
  std::vector<std::int64_t> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoll(item));
  return out;
}

void measure(const daydream::Graph& traced, std::int64_t ranks, double load_s) {
  using namespace daydream;
  auto start = bench::Clock::now();
  const Graph job = ranks == static_cast<std::int64_t>(traced.job()->ranks.size()) ? traced : replicate_ranks(traced, ranks);
  const double replicate_s = bench::seconds_since(start);
  // The first simulation of a graph also builds what its copies then share (the edge table with
  // its topological order, the task columns); later ones, as in a sweep, do not.
  start = bench::Clock::now();
  SimulationResult result = simulate(job);
  const double first_s = bench::seconds_since(start);
  double simulate_s = 1e9, engine_s = 1e9;
  for (int run = 0; run < 3; ++run) {
    start = bench::Clock::now();
    result = simulate(job);
    simulate_s = std::min(simulate_s, bench::seconds_since(start));
  }
  start = bench::Clock::now();
  const SimulationResult engine = simulate(job, TraceOrderPolicy{}, SimulationMethod::event_engine);
  engine_s = bench::seconds_since(start);
  const bool same = engine.start_ns == result.start_ns && engine.binding == result.binding;
  const JobReport report = make_job_report(job, result);
  fmt::print(R"({{"ranks": {}, "tasks": {}, "edges": {}, "load_s": {:.3f}, "replicate_s": {:.3f}, )"
             R"("simulate_first_s": {:.3f}, "simulate_s": {:.3f}, "engine_s": {:.3f}, "static_order": {}, "same_result": {}, )"
             R"("tasks_per_s": {:.0f}, "rss_mib": {:.1f}, "peak_rss_mib": {:.1f}, "job_iteration_ms": {:.3f}}})"
             "\n",
             ranks, job.num_tasks(), job.num_edges(), load_s, replicate_s, first_s, simulate_s, engine_s,
             result.static_order, same, static_cast<double>(job.num_tasks()) / simulate_s, bench::current_rss_mib(),
             bench::peak_rss_mib(),
             report.iterations.empty() ? 0.0 : static_cast<double>(report.iterations[0].simulated_ns) / 1e6);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> inputs;
  std::vector<std::int64_t> sizes{8, 64, 256, 1024};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--ranks" && i + 1 < argc) sizes = parse_list(argv[++i]);
    else if (arg == "--program-heap") (void)daydream::reserve_huge_page_heap();
    else inputs.emplace_back(arg);
  }
  if (inputs.empty()) {
    fmt::print(stderr, "usage: daydream_bench_job DIR_OR_TRACES... [--ranks 8,64,256,1024] [--program-heap]\n");
    return 2;
  }
  try {
    const auto start = daydream::bench::Clock::now();
    const daydream::Graph traced = daydream::load_job(inputs);
    const double load_s = daydream::bench::seconds_since(start);
    for (std::int64_t ranks : sizes) measure(traced, ranks, load_s);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
