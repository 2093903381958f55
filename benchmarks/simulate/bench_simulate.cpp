// Simulation throughput of one graph: the automatic choice (the static-order pass where it
// applies) against the event engine, in the same process on the same graph. One JSON line.
//
//   daydream_bench_simulate TRACE [RUNS=50]
//
// Every run is a whole simulate() call: compiling the graph's per-task arrays, the pass or the
// event loop, unit usage and the critical path. Both give the same result (checked here too).
#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <string>

#include "common/measure.hpp"
#include "daydream/ingest.hpp"
#include "daydream/simulate.hpp"

namespace {

using daydream::bench::Clock;
using daydream::bench::Timings;

Timings time_runs(const daydream::Graph& graph, daydream::SimulationMethod method, int runs,
                  daydream::SimulationResult& last) {
  Timings timings;
  for (int r = 0; r < runs; ++r) {
    const auto start = Clock::now();
    last = daydream::simulate(graph, daydream::TraceOrderPolicy{}, method);
    timings.add(daydream::bench::seconds_since(start));
  }
  return timings;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    fmt::print(stderr, "usage: daydream_bench_simulate TRACE [RUNS=50]\n");
    return 2;
  }
  const int runs = argc > 2 ? std::atoi(argv[2]) : 50;
  const daydream::Graph graph = daydream::build_graph(daydream::load_trace(argv[1]));
  const auto tasks = static_cast<double>(graph.num_tasks());
  daydream::SimulationResult fast, engine;
  const Timings automatic = time_runs(graph, daydream::SimulationMethod::automatic, runs, fast);
  const Timings events = time_runs(graph, daydream::SimulationMethod::event_engine, runs, engine);
  const bool same = fast.start_ns == engine.start_ns && fast.end_ns == engine.end_ns &&
                    fast.binding == engine.binding && fast.critical_path == engine.critical_path;
  fmt::print(
      "{{\"trace\": {}, \"tasks\": {}, \"edges\": {}, \"runs\": {}, \"static_order\": {}, \"same_result\": {}, "
      "\"auto_s\": {:.6f}, \"auto_s_median\": {:.6f}, \"auto_tasks_s\": {:.0f}, "
      "\"engine_s\": {:.6f}, \"engine_s_median\": {:.6f}, \"engine_tasks_s\": {:.0f}, \"speedup\": {:.2f}, "
      "\"makespan_ns\": {}}}\n",
      daydream::bench::json_string(argv[1]), graph.num_tasks(), graph.num_edges(), runs, fast.static_order, same,
      automatic.best(), automatic.median(), tasks / automatic.best(), events.best(), events.median(),
      tasks / events.best(), events.best() / automatic.best(), fast.makespan_ns);
  return same ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "daydream_bench_simulate: {}\n", e.what());
  return 1;
}
