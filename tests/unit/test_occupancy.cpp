// GPU occupancy: the CUDA occupancy rules (lib/graph/occupancy.cpp), the launch configurations
// and SM resources the Kineto importer reads, and the held-work model end to end (graph and
// simulator) on hand-built traces with exact times: a kernel launched onto an idle stream while
// a GPU-filling kernel of another stream still dispatches blocks waits for that kernel's last
// wave, and moves with it under what-ifs.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/simulate.hpp"
#include "daydream/transform.hpp"
#include "graph/occupancy.hpp"
#include "unit/graph_helpers.hpp"
#include "unit/shared_traces.hpp"
#include "unit/trace_builder.hpp"

using namespace daydream;
using test::task_named;
using test::us;

namespace {

GpuResources v100() {
  GpuResources gpu;
  gpu.device = 0;
  gpu.sm_count = 80;
  gpu.compute_major = 7;
  gpu.max_threads_per_sm = 2048;
  gpu.registers_per_sm = 65536;
  gpu.registers_per_block = 65536;
  gpu.shared_memory_per_sm = 98304;
  return gpu;  // warp size and resident blocks come from the compute capability
}

GpuResources a100() {
  GpuResources gpu = v100();
  gpu.sm_count = 108;
  gpu.compute_major = 8;
  gpu.shared_memory_per_sm = 167936;
  return gpu;
}

LaunchConfig launch(std::int64_t blocks, std::int32_t threads, std::int32_t registers, std::int32_t shared = 0) {
  LaunchConfig config;
  config.blocks = blocks;
  config.threads_per_block = threads;
  config.registers_per_thread = registers;
  config.shared_memory_bytes = shared;
  return config;
}

// 256 threads x 32 registers on the test V100: 8 blocks per SM (64 warps), 640 per wave.
const test::LaunchArgs kFilling{6400, 256, 32, 0};  // 10 waves
const test::LaunchArgs kHalfWave{320, 256, 32, 0};  // does not fill the GPU
const test::LaunchArgs kSmall{4, 128, 16, 0};

enum class Side { kernel, device_copy, host_copy };

/// One thread (inside operators, so never idle) launches `warmup` on stream 7 at 0 (it starts
/// 10 us later, for 5 us), `big` (1000 us) on stream 7 at 100 (it starts at 110), and at 200 the
/// side task on idle stream 20. The side task starts at `side_start`: 990 us is 880 us into
/// `big`, 1.2 of its 100 us waves before its end.
std::string side_hold_trace(const test::LaunchArgs* big_launch, double side_start = 990, Side side = Side::kernel) {
  test::KinetoJson t;
  t.device(test::v100_properties());
  t.cpu_op("prep", 0, 100);
  t.runtime("cudaLaunchKernel", 0, 2, 1);
  if (big_launch) t.kernel("warmup", 10, 5, 1, 7, kSmall);
  else t.kernel("warmup", 10, 5, 1, 7);
  t.runtime("cudaLaunchKernel", 100, 5, 2);
  if (big_launch) t.kernel("big", 110, 1000, 2, 7, *big_launch);
  else t.kernel("big", 110, 1000, 2, 7);
  t.cpu_op("work", 105, 95);
  if (side == Side::kernel) {
    t.runtime("cudaLaunchKernel", 200, 5, 3);
    if (big_launch) t.kernel("side", side_start, 20, 3, 20, kSmall);
    else t.kernel("side", side_start, 20, 3, 20);
  } else {
    t.runtime("cudaMemcpyAsync", 200, 5, 3);
    t.memcpy(side == Side::device_copy ? "Memcpy DtoD (Device -> Device)" : "Memcpy HtoD (Pinned -> Device)",
             side_start, 20, 3, 20);
  }
  t.cpu_op("after", 205, 50);
  return t.str();
}

TimeNs start_of(const Graph& g, const SimulationResult& r, std::string_view name) { return r.start_ns[task_named(g, name)]; }

}  // namespace

TEST_CASE("occupancy rules: blocks per SM limited by warps, resident blocks, registers and shared memory",
          "[occupancy]") {
  CHECK(blocks_per_sm(launch(1, 256, 32), v100()) == 8);         // 64 warps / 8
  CHECK(blocks_per_sm(launch(1, 32, 16), v100()) == 32);         // 7.0: 32 resident blocks
  GpuResources turing = v100();
  turing.compute_minor = 5;
  turing.max_threads_per_sm = 1024;
  CHECK(blocks_per_sm(launch(1, 32, 16), turing) == 16);         // 7.5: 16 resident blocks
  // registers: 72 x 32 = 2304 per warp; 16384 / 2304 = 7 warps per sub-partition, 28 per SM
  CHECK(blocks_per_sm(launch(1, 256, 72), a100()) == 3);
  // shared memory: 48 KiB + the 1 KiB Ampere reserves per block, in 164 KiB
  CHECK(blocks_per_sm(launch(1, 128, 0, 48 * 1024), a100()) == 3);
  CHECK(blocks_per_sm(launch(1, 128, 0, 48 * 1024), v100()) == 2);  // 96 KiB, nothing reserved
  LaunchConfig carveout = launch(1, 128, 0, 48 * 1024);
  carveout.shared_memory_config_bytes = 100 * 1024;  // the carveout the launch ran with
  CHECK(blocks_per_sm(carveout, a100()) == 2);
  CHECK(blocks_per_sm(launch(1, 1024, 255), v100()) == 0);        // one block needs more registers than a block may have
  GpuResources unknown = v100();
  unknown.sm_count = 0;
  CHECK(blocks_per_sm(launch(1, 256, 32), unknown) == 0);
}

TEST_CASE("occupancy rules: waves of a grid, and the resources of a device", "[occupancy]") {
  CHECK(waves(launch(640, 256, 32), v100()) == 1);  // one full wave
  CHECK(waves(launch(641, 256, 32), v100()) == 2);
  CHECK(waves(launch(6400, 256, 32), v100()) == 10);
  CHECK(waves(launch(6400, 1024, 255), v100()) == 0);  // unknown: the block does not fit

  GpuResources other = v100();
  other.device = 3;
  CHECK(resources_of({v100(), other}, 3)->device == 3);
  CHECK(resources_of({other}, 0)->device == 3);  // one kind of GPU: its numbering may differ
  other.sm_count = 108;
  CHECK_FALSE(resources_of({v100(), other}, 5));  // two kinds: no guess
  CHECK_FALSE(resources_of({}, 0));
}

/// Kineto's "est. achieved occupancy %" of every kernel, in file order, with the "blocks per SM"
/// (grid / SMs) it was computed from: round(100 x min(grid / SMs, blocks per SM by NVIDIA's
/// calculator) x threads / threads per SM) (libkineto, kernelOccupancy).
std::vector<std::pair<double, long>> kineto_occupancy_estimates(const std::string& text) {
  std::vector<std::pair<double, long>> out;
  const std::string blocks_key = "\"blocks per SM\":", estimate_key = "\"est. achieved occupancy %\":";
  for (std::size_t at = text.find(estimate_key); at != std::string::npos; at = text.find(estimate_key, at + 1)) {
    const std::size_t blocks = text.rfind(blocks_key, at);
    REQUIRE(blocks != std::string::npos);
    out.emplace_back(std::strtod(text.c_str() + blocks + blocks_key.size(), nullptr),
                     std::strtol(text.c_str() + at + estimate_key.size(), nullptr, 10));
  }
  return out;
}

TEST_CASE("occupancy rules reproduce Kineto's occupancy estimate on real traces (V100, RTX 2080 Ti, A100)",
          "[occupancy][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  for (const char* relative : {"resnet50-v100-dataloader/workers0", "resnet-2080ti-sgd/resnet_kineto.json.gz",
                               "ddp-convnet-a100-nccl/nccl_data.json.gz"}) {
    for (const auto& path : test::traces_at(relative)) {
      CAPTURE(path.string());
      const Trace trace = load_trace(path);
      const auto estimates = kineto_occupancy_estimates(read_input_file(path).contents);
      std::size_t k = 0, compared = 0;
      for (const TraceEvent& e : trace.events) {
        if (e.kind != EventKind::kernel || e.launch < 0) continue;
        REQUIRE(k < estimates.size());
        const auto [grid_per_sm, estimate] = estimates[k++];
        const LaunchConfig& config = trace.launches[static_cast<std::size_t>(e.launch)];
        const GpuResources gpu = *resources_of(trace.metadata.gpus, trace.lanes[e.lane].process);
        const std::int32_t fit = blocks_per_sm(config, gpu);
        // Kineto's calculator refuses opt-in shared memory (over 48 KiB per block) and writes 0
        if (estimate == 0 && config.shared_memory_bytes > 48 * 1024) continue;
        CAPTURE(trace.name_of(e), config.threads_per_block, config.registers_per_thread, config.shared_memory_bytes);
        const double occupancy = std::min(grid_per_sm, static_cast<double>(fit)) * config.threads_per_block /
                                 gpu.max_threads_per_sm;
        CHECK(std::abs(occupancy * 100.0 - static_cast<double>(estimate)) <= 0.5 + 1e-3);  // Kineto rounds a float
        ++compared;
      }
      CHECK(k == estimates.size());
      CHECK(compared > 2000);
    }
  }
}

TEST_CASE("kineto: launch configurations from kernel args, SM resources from deviceProperties", "[occupancy][ingest]") {
  const Trace trace = parse_kineto_json(side_hold_trace(&kFilling), "test.json");
  REQUIRE(trace.metadata.gpus.size() == 1);
  const GpuResources& gpu = trace.metadata.gpus.front();
  CHECK(gpu.device == 0);
  CHECK(gpu.sm_count == 80);
  CHECK(gpu.compute_major == 7);
  CHECK(gpu.max_threads_per_sm == 2048);
  CHECK(gpu.registers_per_sm == 65536);
  CHECK(gpu.shared_memory_per_sm == 98304);
  for (const TraceEvent& e : trace.events) {
    if (trace.name_of(e) != "big") continue;
    REQUIRE(e.launch >= 0);
    const LaunchConfig& config = trace.launches[static_cast<std::size_t>(e.launch)];
    CHECK(config.blocks == 6400);
    CHECK(config.threads_per_block == 256);
    CHECK(config.registers_per_thread == 32);
    CHECK(config.shared_memory_bytes == 0);
  }
  const Trace without = parse_kineto_json(side_hold_trace(nullptr), "test.json");
  CHECK(without.launches.empty());
  for (const TraceEvent& e : without.events) CHECK(e.launch == -1);
}

TEST_CASE("occupancy: a kernel on an idle stream waits for a GPU-filling kernel's last wave, and moves with it",
          "[occupancy][graph][simulate]") {
  Graph g = test::graph_of(side_hold_trace(&kFilling));
  const TaskId big = task_named(g, "big"), side = task_named(g, "side");
  REQUIRE(g.holds(side).sm_held_by == big);
  CHECK(g.holds(side).sm_let_in == Approx(0.88));
  CHECK(g.holds(big).sm_held_by == kNoTask);
  // the launch edge keeps the calibrated latency: the wait is the simulator's
  CHECK(g.calibration().launch_latency_ns[static_cast<std::size_t>(TaskKind::kernel)] == 10 * us);
  CHECK(test::edge_between(g, launching_call(g, side), side)->delay_ns == 10 * us);
  CHECK(g.report().get("gpu_holds_by_occupancy") == 1);
  CHECK(g.report().total_ns("gpu_holds_by_occupancy") == 780 * us);  // from ready (210) to start (990)
  CHECK(g.report().get("gpu_holds_kept") == 0);
  CHECK(g.calibration().occupancy_holders == 1);
  CHECK(g.calibration().occupancy_let_in_waves == Approx(1.2));

  const SimulationResult base = simulate(g);
  CHECK(start_of(g, base, "big") == 110 * us);
  CHECK(start_of(g, base, "side") == 990 * us);
  CHECK(base.occupancy_holds == 1);
  CHECK(base.occupancy_hold_ns == 780 * us);
  CHECK(base.binding[side] == big);
  CHECK(base.cause[side] == StartCause::dependency);

  SECTION("the identity what-if replays the baseline") {
    Graph copy = g;
    const SimulationResult again = simulate(copy);
    CHECK(again.start_ns == base.start_ns);
    CHECK(again.end_ns == base.end_ns);
  }
  SECTION("halving the filling kernel lets the held kernel in 440 us (0.88 x 500 us) earlier") {
    g.select(TaskFilter().name("^big$")).scale(0.5);
    const SimulationResult r = simulate(g);
    CHECK(start_of(g, r, "big") == 110 * us);
    CHECK(start_of(g, r, "side") == 550 * us);
    CHECK(r.occupancy_hold_ns == 340 * us);
  }
  SECTION("a faster GPU never starts the held kernel later") {
    g.select(TaskFilter().kind(TaskKind::kernel)).scale(0.5);
    const SimulationResult r = simulate(g);
    CHECK(start_of(g, r, "side") == 550 * us);
    CHECK(r.makespan_ns <= base.makespan_ns);
  }
  SECTION("a filling kernel that starts after the held kernel is ready holds nothing") {
    g.select(TaskFilter().name("^warmup$")).set_duration(310 * us);  // big queued behind it: starts at 320
    const SimulationResult r = simulate(g);
    CHECK(start_of(g, r, "big") == 320 * us);
    CHECK(start_of(g, r, "side") == 210 * us);
    CHECK(r.occupancy_holds == 0);
  }
}

TEST_CASE("occupancy: no hold where the other stream's kernel does not fill the GPU", "[occupancy][graph][simulate]") {
  SECTION("the side kernel started at its launch: it starts there in the replay") {
    const Graph g = test::graph_of(side_hold_trace(&kHalfWave, 210));
    CHECK(g.holds(task_named(g, "side")).sm_held_by == kNoTask);
    const SimulationResult r = simulate(g);
    CHECK(start_of(g, r, "side") == 210 * us);
    CHECK(r.occupancy_holds == 0);
  }
  SECTION("a late start beside a kernel that leaves SMs free is not an occupancy hold, nor kept") {
    const Graph g = test::graph_of(side_hold_trace(&kHalfWave));
    CHECK(g.holds(task_named(g, "side")).sm_held_by == kNoTask);
    CHECK(g.report().get("gpu_holds_by_occupancy") == 0);
    CHECK(g.report().get("gpu_holds_kept") == 0);
    CHECK(start_of(g, simulate(g), "side") == 210 * us);
  }
}

TEST_CASE("occupancy: device-to-device copies run on SMs and are held, host-to-device copies are not",
          "[occupancy][graph]") {
  const Graph dtod = test::graph_of(side_hold_trace(&kFilling, 990, Side::device_copy));
  const TaskId copy = task_named(dtod, "Memcpy DtoD (Device -> Device)");
  CHECK(dtod.holds(copy).sm_held_by == task_named(dtod, "big"));
  CHECK(simulate(dtod).start_ns[copy] == 990 * us);

  const Graph htod = test::graph_of(side_hold_trace(&kFilling, 990, Side::host_copy));
  CHECK(htod.holds(task_named(htod, "Memcpy HtoD (Pinned -> Device)")).sm_held_by == kNoTask);
  CHECK(htod.report().get("gpu_holds_by_occupancy") == 0);
}

TEST_CASE("occupancy fallback: without launch configurations the recorded hold is kept as a launch delay",
          "[occupancy][graph]") {
  Graph g = test::graph_of(side_hold_trace(nullptr));
  const TaskId side = task_named(g, "side");
  CHECK(g.holds(side).sm_held_by == kNoTask);
  CHECK(g.report().get("gpu_holds_kept") == 1);
  CHECK(g.report().total_ns("gpu_holds_kept") == 780 * us);
  CHECK(g.report().get("gpu_holds_by_occupancy") == 0);
  CHECK(test::edge_between(g, launching_call(g, side), side)->delay_ns == 790 * us);
  CHECK(simulate(g).start_ns[side] == 990 * us);
  g.select(TaskFilter().name("^big$")).scale(0.5);
  CHECK(simulate(g).start_ns[side] == 990 * us);  // a kept delay does not move
}

TEST_CASE("occupancy: launch-latency samples leave out tasks another stream's kernel held back",
          "[occupancy][calibration]") {
  // Stream 7: `warmup` starts 10 us after its call (the only clean sample); four filling kernels
  // (1000 us each) queue behind it. Stream 20: each side kernel is launched 100 us into one of
  // them and gets in 880 us into it, 780 us after its launch could have started it.
  test::KinetoJson t;
  t.device(test::v100_properties());
  t.cpu_op("main_op", 0, 5000, 1);
  t.runtime("cudaLaunchKernel", 0, 2, 1, 1).kernel("warmup", 10, 30, 1, 7, kSmall);
  std::int64_t c = 2;
  for (int i = 0; i < 4; ++i) t.runtime("cudaLaunchKernel", 20 + i, 1, c, 1).kernel("big", 40 + 1000 * i, 1000, c, 7, kFilling), ++c;
  for (int i = 0; i < 4; ++i) {
    const double big_start = 40 + 1000 * i;
    t.runtime("cudaLaunchKernel", big_start + 100, 5, c, 1).kernel("side", big_start + 890, 20, c, 20, kSmall), ++c;
  }
  const Graph g = test::graph_of(t.str());
  CHECK(g.calibration().launch_latency_ns[static_cast<std::size_t>(TaskKind::kernel)] == 10 * us);
  CHECK(g.calibration().launch_samples == 1);
  CHECK(g.report().get("gpu_holds_by_occupancy") == 4);
  CHECK(g.calibration().occupancy_holders == 4);
  const SimulationResult r = simulate(g);
  for (int i = 0; i < 4; ++i) CHECK(r.start_ns[task_named(g, "side", i)] == (40 + 1000 * i + 890) * us);
}
