// What if every GPU kernel ran FACTOR times faster (a faster GPU)? Copies, memsets, collectives
// and all CPU work keep their recorded durations.
//
//   whatif_faster_gpu TRACE [FACTOR=2]
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/simulate.hpp"

int main(int argc, char** argv) try {
  if (argc < 2) return std::fprintf(stderr, "usage: %s TRACE [FACTOR=2]\n", argv[0]), 2;
  const double factor = argc > 2 ? std::atof(argv[2]) : 2.0;
  if (!(factor > 0)) return std::fprintf(stderr, "FACTOR must be a positive number\n"), 2;

  const daydream::Graph baseline = daydream::build_graph(daydream::load_trace(argv[1]));
  daydream::Graph faster = baseline;
  for (daydream::TaskId t = 0; t < faster.num_tasks(); ++t) {
    const daydream::Task& task = faster.task(t);
    if (task.kind == daydream::TaskKind::kernel)
      faster.set_duration(t, static_cast<daydream::TimeNs>(static_cast<double>(task.duration_ns) / factor));
  }
  const auto before = daydream::make_replay_report(baseline, daydream::simulate(baseline));
  const auto after = daydream::make_replay_report(faster, daydream::simulate(faster));

  std::printf("what if GPU kernels ran %.2fx faster: %s\n\n%-20s %12s %12s %12s %9s\n", factor, argv[1], "iteration",
              "measured ms", "replay ms", "predicted ms", "speedup");
  for (std::size_t i = 0; i < before.iterations.size(); ++i) {
    const auto& b = before.iterations[i];
    const auto& a = after.iterations[i];
    const auto ms = [](daydream::TimeNs ns) { return static_cast<double>(ns) / 1e6; };
    std::printf("%-20s %12.3f %12.3f %12.3f %8.2fx\n", b.name.c_str(), ms(b.measured_ns), ms(b.simulated_ns),
                ms(a.simulated_ns), ms(b.simulated_ns) / ms(a.simulated_ns));
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
