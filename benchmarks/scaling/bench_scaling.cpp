// daydream_bench_scaling: how graph building grows on the two shapes that were quadratic
// (issue 18, item 4), one JSON line per size.
//
//   daydream_bench_scaling [--max N] [--runs R]
//
//   threads  N CPU threads, each running one operator after the one before it ended (thread i
//            at 10*i us): every thread's first task asks "which task on another thread woke me?"
//            (cross-thread wake-up inference; it scanned every thread per question).
//   nesting  one thread with N operators nested inside each other (operator k opens at k us and
//            closes at 2N - k + 1 us): 2N tasks, each at depth up to N (the segmenter walked the
//            whole open stack per task).
// Sizes 10^3, 10^4, ... up to --max (default 10^6). Each size: the trace is generated in memory,
// parsed and built R times (default 3); the best build_graph time is printed with tasks/s.
#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "common/measure.hpp"
#include "daydream/error.hpp"
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"

namespace {

using daydream::bench::Clock;
using daydream::bench::seconds_since;

void add_event(std::string& json, std::string_view name, std::int64_t tid, std::int64_t ts_us, std::int64_t dur_us) {
  fmt::format_to(std::back_inserter(json),
                 R"({}{{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 1, "tid": {}, "ts": {}, "dur": {}}})",
                 json.back() == '[' ? "" : ",\n", name, tid, ts_us, dur_us);
}

std::string threads_trace(std::int64_t n) {
  std::string json = R"({"traceEvents": [)";
  add_event(json, "ProfilerStep#1", 1, 0, 10 * n + 10);
  for (std::int64_t i = 0; i < n; ++i) add_event(json, "aten::op", 2 + i, 10 * i + 1, 5);
  return json + "]}";
}

std::string nesting_trace(std::int64_t n) {
  std::string json = R"({"traceEvents": [)";
  add_event(json, "ProfilerStep#1", 1, 0, 2 * n + 4);
  for (std::int64_t k = 1; k <= n; ++k) add_event(json, "aten::op", 1, k, 2 * (n - k) + 2);
  return json + "]}";
}

void measure(std::string_view shape, std::int64_t n, const std::string& json, int runs) {
  daydream::bench::Timings build;
  std::size_t tasks = 0, edges = 0;
  for (int r = 0; r < runs; ++r) {
    const daydream::Trace trace = daydream::parse_kineto_json(json, std::string(shape));
    const auto start = Clock::now();
    const daydream::Graph graph = daydream::build_graph(trace);
    build.add(seconds_since(start));
    tasks = graph.num_tasks();
    edges = graph.num_edges();
  }
  fmt::print(R"({{"bench": "{}", "n": {}, "tasks": {}, "edges": {}, "build_s": {:.4f}, "tasks_per_s": {:.0f}, )"
             R"("peak_rss_mib": {:.1f}}})"
             "\n",
             shape, n, tasks, edges, build.best(), static_cast<double>(tasks) / build.best(),
             daydream::bench::peak_rss_mib());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t max = 1'000'000;
  int runs = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--max") max = std::atoll(argv[i + 1]);
    else if (flag == "--runs") runs = std::atoi(argv[i + 1]);
    else return fmt::print(stderr, "usage: daydream_bench_scaling [--max N] [--runs R]\n"), 2;
  }
  try {
    for (std::int64_t n = 1000; n <= max; n *= 10) measure("threads", n, threads_trace(n), runs);
    for (std::int64_t n = 1000; n <= max; n *= 10) measure("nesting", n, nesting_trace(n), runs);
  } catch (const daydream::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
