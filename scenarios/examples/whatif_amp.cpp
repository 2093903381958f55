// What if the job used automatic mixed precision (AMP)? The Daydream paper's estimate: kernels
// that run on tensor cores under AMP take 1/3 of their time, every other GPU kernel 1/2; copies,
// memsets, collectives and all CPU work keep their recorded durations. Tensor-core kernels are
// those whose name contains "gemm", "wgrad" or "conv", in any case. scenarios/examples/amp.py is the same script in
// Python; a ctest checks that both print the same prediction, to the nanosecond.
//
//   whatif_amp TRACE
#include <cstdio>
#include <exception>

#include "daydream/ingest.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/transform.hpp"

int main(int argc, char** argv) try {
  using namespace daydream;
  if (argc != 2) return std::fprintf(stderr, "usage: %s TRACE\n", argv[0]), 2;
  const char* tensor_core = "(?i)gemm|wgrad|conv";
  const Graph baseline = build_graph(load_trace(argv[1]));
  Graph amp = baseline;  // what-ifs change a copy
  amp.select(TaskFilter().kind(TaskKind::kernel).name(tensor_core)).scale(1.0 / 3);
  amp.select(TaskFilter().kind(TaskKind::kernel).name_not(tensor_core)).scale(1.0 / 2);
  const auto before = make_replay_report(baseline, simulate(baseline));
  const auto after = make_replay_report(amp, simulate(amp));

  const auto ms = [](TimeNs ns) { return static_cast<double>(ns) / 1e6; };
  std::printf("AMP what-if: %s\n%-20s %14s %14s %14s\n", argv[1], "iteration", "replay ms", "predicted ms", "predicted ns");
  for (std::size_t i = 0; i < after.iterations.size() && i < before.iterations.size(); ++i)
    std::printf("%-20s %14.6f %14.6f %14lld\n", after.iterations[i].name.c_str(), ms(before.iterations[i].simulated_ns),
                ms(after.iterations[i].simulated_ns), static_cast<long long>(after.iterations[i].simulated_ns));
  std::printf("%-20s %14.6f %14.6f %14lld\n", "makespan", ms(before.simulated_makespan_ns), ms(after.simulated_makespan_ns),
              static_cast<long long>(after.simulated_makespan_ns));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
