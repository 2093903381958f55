// The single-GPU scenarios (amp, faster_gpu, faster_network, channels_last, pinned_memory):
// exact arithmetic on small hand-built traces, bad parameters, and properties on the real traces
// of ../shared/traces (skipped when absent).
//
// Hand-built traces are one thread and one stream inside ProfilerStep#0, so every CPU segment
// touches the next (no cpu_sequential delays) and the step runs from its first to its last CPU
// task. Launch latencies and the stream gap are the graph's calibration (docs/graph.md), worked
// out in each test's comment.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "daydream/error.hpp"
#include "daydream/ingest.hpp"
#include "daydream/predict.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/scenario.hpp"
#include "daydream/simulate.hpp"
#include "daydream/transform.hpp"
#include "unit/graph_helpers.hpp"
#include "unit/shared_traces.hpp"
#include "unit/scenario_helpers.hpp"
#include "unit/trace_builder.hpp"
#include "graph/graph_access.hpp"

using namespace daydream;
using test::KinetoJson;
using test::task_named;
using test::us;
using test::apply;
using test::live_named;
using test::step_time;
using test::step_times;

namespace {

using test::all_notes;

// Two kernels and a copy on stream 7, then a device synchronisation.
//   cpu: step [0,10) L1 [10,20) step [20,30) L2 [30,40) L3 [40,44) step [44,46) sync [46,150) step [150,200)
//   gpu: sgemm_a [25,85) (L1)  relu_b [85,125) (L2)  DtoD copy [125,145) (L3)
// Calibration: sgemm_a is the only task launched onto an idle stream: launch latency 15 us for
// every kind; relu_b and the copy were held back by the stream with no gap: gap 0. The sync
// waited for the copy (ends 145), so its own time is 150 - 145 = 5 us.
// Replay: sgemm 25-85, relu 85-125, copy 125-145, sync 145-150, last segment 150-200: 200 us.
std::string two_kernels_and_a_copy() {
  return KinetoJson()
      .annotation("ProfilerStep#0", 0, 200)
      .runtime("cudaLaunchKernel", 10, 10, 1)
      .kernel("sgemm_a", 25, 60, 1)
      .runtime("cudaLaunchKernel", 30, 10, 2)
      .kernel("relu_b", 85, 40, 2)
      .runtime("cudaMemcpyAsync", 40, 4, 3)
      .memcpy("Memcpy DtoD (Device -> Device)", 125, 20, 3)
      .runtime("cudaDeviceSynchronize", 46, 104, 4)
      .str();
}

}  // namespace

// ---------------------------------------------------------------------------------- faster_gpu

TEST_CASE("faster_gpu divides the chosen GPU tasks' durations: exact step times", "[scenario][local]") {
  const Graph base = test::graph_of(two_kernels_and_a_copy());
  REQUIRE(base.calibration().launch_latency_ns[static_cast<std::size_t>(TaskKind::kernel)] == 15 * us);
  REQUIRE(base.calibration().gpu_gap_ns == 0);
  REQUIRE(step_time(base) == 200 * us);

  SECTION("kernels (default): sgemm 25-55, relu 55-75, copy 75-95, sync 95-100, segment 100-150") {
    Graph g = base;
    const auto out = apply(g, "faster_gpu");
    CHECK(g.task(task_named(g, "sgemm_a")).duration_ns == 30 * us);
    CHECK(g.task(task_named(g, "relu_b")).duration_ns == 20 * us);
    CHECK(g.task(task_named(g, "Memcpy DtoD (Device -> Device)")).duration_ns == 20 * us);
    CHECK(step_time(g) == 150 * us);
    CHECK_THAT(all_notes(out), Catch::Contains("2 GPU tasks (kernel) scaled by 1/2"));
  }
  SECTION("memcpy, factor 4: the copy takes 5 us, 125-130; sync 130-135, segment 135-185") {
    Graph g = base;
    apply(g, "faster_gpu:kind=memcpy,factor=4");
    CHECK(g.task(task_named(g, "sgemm_a")).duration_ns == 60 * us);
    CHECK(g.task(task_named(g, "Memcpy DtoD (Device -> Device)")).duration_ns == 5 * us);
    CHECK(step_time(g) == 185 * us);
  }
  SECTION("all: sgemm 25-55, relu 55-75, copy 75-85, sync 85-90, segment 90-140") {
    Graph g = base;
    apply(g, "faster_gpu:kind=all");
    CHECK(step_time(g) == 140 * us);
  }
  SECTION("memset: the trace has none, nothing changes") {
    Graph g = base;
    apply(g, "faster_gpu:kind=memset,factor=3");
    CHECK(step_time(g) == 200 * us);
  }
  SECTION("factor 1 is the baseline") {
    Graph g = base;
    apply(g, "faster_gpu:factor=1,kind=all");
    CHECK(step_time(g) == 200 * us);
  }
}

TEST_CASE("scenario parameters out of range or unknown are refused with the valid values", "[scenario][local]") {
  Graph g = test::graph_of(two_kernels_and_a_copy());
  CHECK_THROWS_WITH(apply(g, "faster_gpu:factor=0"), Catch::Contains("'factor' = '0' is out of range (valid: > 0)"));
  CHECK_THROWS_WITH(apply(g, "faster_gpu:factor=nan"), Catch::Contains("out of range (valid: > 0)"));
  CHECK_THROWS_WITH(apply(g, "faster_gpu:factor=-2"), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(apply(g, "faster_gpu:kind=tensor"),
                    Catch::Contains("'kind' = 'tensor' is not a GPU task kind (valid: kernel, memcpy, memset, all)"));
  CHECK_THROWS_WITH(apply(g, "faster_gpu:speed=2"), Catch::Contains("has no parameter 'speed'") && Catch::Contains("factor"));
  CHECK_THROWS_WITH(apply(g, "faster_network:factor=0"), Catch::Contains("out of range (valid: > 0)"));
  CHECK_THROWS_WITH(apply(g, "faster_network:bandwidth=0"), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(apply(g, "amp:tensor_core=0"), Catch::Contains("'tensor_core' = '0' is out of range"));
  CHECK_THROWS_WITH(apply(g, "amp:other=nan"), Catch::Contains("'other' = 'nan' is out of range"));
  CHECK_THROWS_WITH(apply(g, "amp:casts=2"), Catch::Contains("'casts' = '2' is out of range (valid: 0..1"));
  CHECK_THROWS_WITH(apply(g, "amp:pattern=(gemm"), Catch::Contains("invalid amp pattern '(gemm'"));
  CHECK_THROWS_WITH(apply(g, "channels_last:pattern=[x"), Catch::Contains("invalid channels_last pattern '[x'"));
  CHECK_THROWS_WITH(apply(g, "pinned_memory:bandwidth=0"), Catch::Contains("'bandwidth' = '0' is out of range"));
  CHECK_THROWS_WITH(apply(g, "pinned_memory:non_blocking=0.5"), Catch::Contains("whole numbers"));
  CHECK(step_time(g) == 200 * us);  // a refused scenario changed nothing
}

// ------------------------------------------------------------------------------ faster_network

namespace {

// As two_kernels_and_a_copy, with an NCCL all-reduce instead of relu_b and no copy; the
// all-reduce's launch latency is the pooled 15 us (never launched onto an idle stream).
//   gpu: sgemm_a [25,85), allreduce [85,125); sync [45,130) keeps 5 us; last segment [130,200).
std::string kernel_and_allreduce() {
  return KinetoJson()
      .annotation("ProfilerStep#0", 0, 200)
      .runtime("cudaLaunchKernel", 10, 10, 1)
      .kernel("sgemm_a", 25, 60, 1)
      .runtime("cudaLaunchKernel", 30, 10, 2)
      .kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 85, 40, 2)
      .runtime("cudaDeviceSynchronize", 45, 85, 3)
      .str();
}

}  // namespace

TEST_CASE("faster_network scales collectives by factor, or sets bytes / bandwidth", "[scenario][local]") {
  const Graph base = test::graph_of(kernel_and_allreduce());
  const TaskId allreduce = task_named(base, "ncclKernel_AllReduce_RING_LL_Sum_float");
  REQUIRE(base.task(allreduce).kind == TaskKind::communication);
  REQUIRE(step_time(base) == 200 * us);

  SECTION("factor 2: all-reduce 85-105, sync 105-110, segment 110-180; the kernel is untouched") {
    Graph g = base;
    const auto out = apply(g, "faster_network");
    CHECK(g.task(allreduce).duration_ns == 20 * us);
    CHECK(g.task(task_named(g, "sgemm_a")).duration_ns == 60 * us);
    CHECK(step_time(g) == 180 * us);
    CHECK_THAT(all_notes(out), Catch::Contains("1 communication tasks scaled by 1/2"));
  }
  SECTION("factor 1 is the baseline") {
    Graph g = base;
    apply(g, "faster_network:factor=1");
    CHECK(step_time(g) == 200 * us);
  }
  SECTION("bandwidth: 2 MB at 100 Gbps (12.5 GB/s) = 160 us: all-reduce 85-245, sync 245-250, segment 250-320") {
    Graph g = base;
    GraphAccess::set_bytes(g, allreduce, 2'000'000);
    const auto out = apply(g, "faster_network:bandwidth=100Gbps");
    CHECK(g.task(allreduce).duration_ns == 160 * us);
    CHECK(step_time(g) == 320 * us);
    CHECK_THAT(all_notes(out), Catch::Contains("1 communication tasks set to bytes / 12.5 GB/s"));
  }
  SECTION("bandwidth with the model's size, as ddp sizes a traced all-reduce: 500k fp32 parameters = 2 MB = 160 us") {
    Graph g = base;
    const auto out = apply(g, "faster_network:bandwidth=100Gbps,params=500e3");
    CHECK(g.task(allreduce).duration_ns == 160 * us);
    CHECK(step_time(g) == 320 * us);
    CHECK_THAT(all_notes(out), Catch::Contains("1 communication tasks set to bytes / 12.5 GB/s (1 sized as ddp sizes"));
  }
  SECTION("bandwidth without sizes, or with factor, is refused") {
    Graph g = base;
    CHECK_THROWS_WITH(apply(g, "faster_network:bandwidth=10Gbps"),
                      Catch::Contains("parameter 'bandwidth' needs communication tasks of known size") &&
                          Catch::Contains("give params or param_file") && Catch::Contains("use 'factor' instead"));
    CHECK_THROWS_WITH(apply(g, "faster_network:factor=2,bandwidth=10Gbps"),
                      Catch::Contains("give either 'factor' or 'bandwidth', not both"));
    CHECK(g.task(allreduce).duration_ns == 40 * us);
  }
  SECTION("a graph without collectives is left as it is, with a note") {
    Graph g = test::graph_of(two_kernels_and_a_copy());
    const auto out = apply(g, "faster_network:factor=3");
    CHECK(step_time(g) == 200 * us);
    CHECK_THAT(all_notes(out), Catch::Contains("no communication tasks"));
    CHECK_THROWS_WITH(apply(g, "faster_network:bandwidth=10Gbps,params=1e6"), Catch::Contains("the trace has none"));
  }
}

// ------------------------------------------------------------------------------- channels_last

TEST_CASE("channels_last removes layout-transform kernels with their launch calls", "[scenario][local]") {
  // cpu: step [0,10) L1 [10,20) step [20,30) L2 [30,40) L3 [40,45) step [45,50) sync [50,110) step [110,200)
  // gpu: nchwToNhwc [25,45) (L1), conv [45,85) (L2), nhwcToNchw [85,105) (L3); latency 15, gap 0;
  // the sync keeps 110 - 105 = 5 us. Replay: 200 us.
  const Graph base = test::graph_of(KinetoJson()
                                        .annotation("ProfilerStep#0", 0, 200)
                                        .runtime("cudaLaunchKernel", 10, 10, 1)
                                        .kernel("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, "
                                                "(cudnnKernelDataType_t)2>(cudnn::ops::nchw2nhwc_params_t<float>)",
                                                25, 20, 1)
                                        .runtime("cudaLaunchKernel", 30, 10, 2)
                                        .kernel("conv_main", 45, 40, 2)
                                        .runtime("cudaLaunchKernel", 40, 5, 3)
                                        .kernel("void nhwcToNchwKernel<float, float, float, true, false>(int)", 85, 20, 3)
                                        .runtime("cudaDeviceSynchronize", 50, 60, 4)
                                        .str());
  REQUIRE(step_time(base) == 200 * us);
  Graph g = base;
  const auto out = apply(g, "channels_last");
  // Both transforms and their calls L1, L3 are gone; conv keeps its call L2 (now [20,30)):
  // conv starts 20 + 15 = 35, ends 75; the sync starts at 75 and keeps 5 us; the last
  // segment (90 us) runs 80-170.
  CHECK(live_named(g, "conv_main") == 1);
  CHECK(live_named(g, "cudaLaunchKernel") == 1);
  CHECK(g.num_live_tasks() == base.num_live_tasks() - 4);
  CHECK(step_time(g) == 170 * us);
  CHECK_THAT(all_notes(out), Catch::Contains("removed 2 layout-transform kernels (0.040 ms of GPU time) and 2 launch calls"));

  SECTION("a pattern that matches nothing is a valid no-change prediction") {
    Graph h = base;
    const auto none = apply(h, "channels_last:pattern=transpose");
    CHECK(step_time(h) == 200 * us);
    CHECK_THAT(all_notes(none), Catch::Contains("no layout-transform kernels found"));
  }
  SECTION("the pattern can name other kernels") {
    Graph h = base;
    apply(h, "channels_last:pattern=^conv_main$");
    CHECK(live_named(h, "conv_main") == 0);
    CHECK(live_named(h, "cudaLaunchKernel") == 2);
  }
}

// ------------------------------------------------------------------------------- pinned_memory

namespace {

// cpu: step [0,5) M1 [5,10) step [10,20) copy_ [20,25) M2 [25,120) copy_ [120,125)
//      S1 (cudaStreamSynchronize) [125,135) copy_ [135,140) step [140,150) L [150,160)
//      step [160,220) S2 (cudaDeviceSynchronize) [220,230) step [230,300)
// gpu: DtoD [9,15) (M1), HtoD pageable 4096 bytes [45,125) (M2), relu [165,215) (L)
// Calibration: memcpy latency = lower median of (4, 20) = 4 us (the staged copy's 20 us is a
// sample too), kernel latency 15 us; no task was held back by the stream: gap 0. The HtoD copy
// is staged: its launch edge carries its 20 us offset inside M2. S1 waits for the copy (ends 125)
// and keeps 10 us; S2 starts after relu ended and keeps 10 us. Replay: 300 us.
std::string pageable_input_copy() {
  return KinetoJson()
      .annotation("ProfilerStep#0", 0, 300)
      .runtime("cudaMemcpyAsync", 5, 5, 1)
      .memcpy("Memcpy DtoD (Device -> Device)", 9, 6, 1)
      .cpu_op("aten::copy_", 20, 120)
      .runtime("cudaMemcpyAsync", 25, 95, 2)
      .memcpy("Memcpy HtoD (Pageable -> Device)", 45, 80, 2)
      .runtime("cudaStreamSynchronize", 125, 10, 3)
      .runtime("cudaLaunchKernel", 150, 10, 4)
      .kernel("relu", 165, 50, 4)
      .runtime("cudaDeviceSynchronize", 220, 10, 5)
      .str();
}

}  // namespace

TEST_CASE("pinned_memory makes a pageable host-to-device copy asynchronous at pinned bandwidth", "[scenario][local]") {
  const Graph base = test::graph_of(pageable_input_copy());
  const TaskId copy = task_named(base, "Memcpy HtoD (Pageable -> Device)");
  const TaskId issue = task_named(base, "cudaMemcpyAsync", 1);
  const TaskId stream_sync = task_named(base, "cudaStreamSynchronize");
  REQUIRE(base.calibration().launch_latency_ns[static_cast<std::size_t>(TaskKind::memcpy)] == 4 * us);
  REQUIRE(test::edge_between(base, issue, copy)->delay_ns == 20 * us);  // the staging offset
  REQUIRE(test::edge_between(base, copy, stream_sync)->type == EdgeType::sync);
  REQUIRE(step_time(base) == 300 * us);

  SECTION("non_blocking (default), 4096 bytes at 4.096 GB/s = 1 us") {
    Graph g = base;
    const auto out = apply(g, "pinned_memory:bandwidth=4.096GB/s");
    CHECK(g.task(copy).duration_ns == 1 * us);
    CHECK(g.task(issue).duration_ns == 10 * us);   // the median kernel-launch call (L: 10 us)
    CHECK(g.edge(issue, copy).delay_ns == 4 * us);  // no staging: the memcpy launch latency
    CHECK(g.removed(stream_sync));
    CHECK(g.task(task_named(g, "Memcpy DtoD (Device -> Device)")).duration_ns == 6 * us);  // not host-to-device
    // M2 25-35, copy 29-30; copy_ 35-40, (S1 gone) copy_ 40-45, step 45-55, L 55-65,
    // relu 70-120, step 65-125, S2 125-135, step 135-205.
    CHECK(step_time(g) == 205 * us);
    CHECK_THAT(all_notes(out), Catch::Contains("1 host-to-device copies made pinned") &&
                                   Catch::Contains("1 stream synchronisations removed"));
  }
  SECTION("non_blocking=0: the operator still synchronises") {
    Graph g = base;
    apply(g, "pinned_memory:bandwidth=4.096GB/s,non_blocking=0");
    CHECK_FALSE(g.removed(stream_sync));
    // copy 29-30, copy_ 35-40, S1 40-50, copy_ 50-55, step 55-65, L 65-75, relu 80-130,
    // step 75-135, S2 135-145, step 145-215.
    CHECK(step_time(g) == 215 * us);
  }
  SECTION("default bandwidth 12 GB/s: 4096 bytes take 341 ns") {
    Graph g = base;
    apply(g, "pinned_memory");
    CHECK(g.task(copy).duration_ns == 341);  // 4096 / 12e9 s = 341.3 ns
  }
  SECTION("copies already pinned, and graphs without host-to-device copies, are left as they are") {
    Graph g = test::graph_of(two_kernels_and_a_copy());
    const auto out = apply(g, "pinned_memory");
    CHECK(step_time(g) == 200 * us);
    CHECK_THAT(all_notes(out), Catch::Contains("no host-to-device copies from pageable memory"));
  }
}

// ------------------------------------------------------------------------------------------ amp

namespace {

// Inside ProfilerStep#0 (so the forward phase):
//   cpu: step [0,10) conv2d [10,15) L1 [15,25) conv2d [25,27) L2 [27,35) conv2d [35,40)
//        step [40,50) linear [50,55) L3 [55,65) linear [65,70) step [70,80) M [80,86)
//        step [86,90) sync [90,235) step [235,300)
//   gpu: scudnn conv [30,120) (L1), elementwise add [120,160) (L2), sgemm [160,220) (L3),
//        DtoD copy [220,230) (M)
// Calibration: latency 15 us (the conv, onto the idle stream; pooled for the copy); the rest
// was held back by the stream with no gap: gap 0. The sync keeps 235 - 230 = 5 us. Replay 300 us.
std::string conv_add_linear() {
  return KinetoJson()
      .annotation("ProfilerStep#0", 0, 300)
      .cpu_op("aten::conv2d", 10, 30)
      .runtime("cudaLaunchKernel", 15, 10, 1)
      .kernel("volta_scudnn_128x64_relu_interior_nn_v1", 30, 90, 1)
      .runtime("cudaLaunchKernel", 27, 8, 2)
      .kernel("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)", 120, 40, 2)
      .cpu_op("aten::linear", 50, 20)
      .runtime("cudaLaunchKernel", 55, 10, 3)
      .kernel("volta_sgemm_64x64_nt", 160, 60, 3)
      .runtime("cudaMemcpyAsync", 80, 6, 4)
      .memcpy("Memcpy DtoD (Device -> Device)", 220, 10, 4)
      .runtime("cudaDeviceSynchronize", 90, 145, 5)
      .str();
}

}  // namespace

TEST_CASE("a data pipeline's kernels are data loading, outside autocast: amp keeps them", "[scenario][local]") {
  // DALI's executor thread (tid 2) launches a flip kernel inside its NVTX ranges; the training
  // loop (tid 1) launches an elementwise kernel of the model.
  Graph g = test::graph_of(KinetoJson()
                               .annotation("ProfilerStep#0", 0, 100)
                               .cpu_op("aten::add", 10, 20)
                               .runtime("cudaLaunchKernel", 15, 5, 1)
                               .kernel("void at::native::vectorized_elementwise_kernel<4>(int)", 30, 40, 1)
                               .annotation("[DALI][Executor] RunGPU", 5, 30, 2)
                               .annotation("[DALI][GPU op] __Flip_12", 6, 20, 2)
                               .runtime("cudaLaunchKernel", 10, 5, 2, 2)
                               .kernel("void dali::kernels::FlipKernel<float>(int)", 20, 30, 2, 9)
                               .str());
  const TaskId flip = task_named(g, "void dali::kernels::FlipKernel<float>(int)");
  const TaskId add = task_named(g, "void at::native::vectorized_elementwise_kernel<4>(int)");
  CHECK(g.task(flip).phase == Phase::data_loading);
  CHECK(g.task(flip).layer == 0);  // DALI's ranges name no layer of the model
  CHECK(g.task(add).phase == Phase::forward);
  const auto out = apply(g, "amp:casts=0");
  CHECK(g.task(flip).duration_ns == 30 * us);
  CHECK(g.task(add).duration_ns == 20 * us);
  CHECK_THAT(all_notes(out), Catch::Contains("1 data-loading kernels (DALI, DataLoader: outside autocast) kept"));
}

TEST_CASE("amp scales tensor-core and other kernels and casts each forward operator's weights", "[scenario][local]") {
  const Graph base = test::graph_of(conv_add_linear());
  const TaskId conv = task_named(base, "volta_scudnn_128x64_relu_interior_nn_v1");
  const TaskId gemm = task_named(base, "volta_sgemm_64x64_nt");
  REQUIRE(base.task(conv).phase == Phase::forward);
  REQUIRE(base.calibration().gpu_gap_ns == 0);
  REQUIRE(step_time(base) == 300 * us);

  SECTION("the Daydream paper's model (casts=0): conv 30-60, add 60-80, gemm 80-100, copy 100-110, "
          "sync 110-115, step 115-180") {
    Graph g = base;
    const auto out = apply(g, "amp:casts=0");
    CHECK(g.task(conv).duration_ns == 30 * us);
    CHECK(g.task(gemm).duration_ns == 20 * us);
    CHECK(g.task(task_named(g, "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)"))
              .duration_ns == 20 * us);
    CHECK(g.task(task_named(g, "Memcpy DtoD (Device -> Device)")).duration_ns == 10 * us);  // copies unchanged
    CHECK(step_time(g) == 180 * us);
    CHECK_THAT(all_notes(out), Catch::Contains("2 tensor-core kernels scaled by 1/3") &&
                                   Catch::Contains("1 other kernels by 1/2"));
  }
  SECTION("with casts: one cast (the median elementwise kernel after scaling, 20 us) per forward operator") {
    Graph g = base;
    const auto out = apply(g, "amp");
    REQUIRE(live_named(g, "amp cast fp32 -> fp16") == 2);
    REQUIRE(live_named(g, "cudaLaunchKernel (amp cast)") == 2);
    const TaskId cast1 = task_named(g, "amp cast fp32 -> fp16");
    const TaskId launch1 = task_named(g, "cudaLaunchKernel (amp cast)");
    const TaskId l1 = task_named(g, "cudaLaunchKernel");
    CHECK(g.task(cast1).duration_ns == 20 * us);
    CHECK(g.task(cast1).phase == Phase::forward);
    CHECK(g.task(launch1).duration_ns == 10 * us);  // median launch call of (10, 8, 10)
    CHECK(test::edge_between(g, launch1, cast1)->timing == Timing::start_to_start);
    CHECK(test::edge_between(g, launch1, cast1)->delay_ns == 15 * us);
    CHECK(test::edge_between(g, launch1, l1)->type == EdgeType::cpu_sequential);
    CHECK(test::edge_between(g, cast1, conv)->type == EdgeType::gpu_sequential);
    CHECK(test::edge_between(g, task_named(g, "amp cast fp32 -> fp16", 1), gemm).has_value());
    // cpu: conv2d 10-15, cast launch 15-25, L1 25-35, conv2d 35-37, L2 37-45, conv2d 45-50,
    //      step 50-60, linear 60-65, cast launch 65-75, L3 75-85, linear 85-90, step 90-100,
    //      M 100-106, step 106-110.
    // gpu: cast 30-50, conv 50-80, add 80-100, cast 100-120 (launched at 65 + 15), gemm 120-140,
    //      copy 140-150; sync 150-155, step 155-220.
    CHECK(step_time(g) == 220 * us);
    CHECK_THAT(all_notes(out), Catch::Contains("2 fp16 weight casts inserted"));
  }
  SECTION("without operator events, one cast per run of GEMM or convolution kernels in the range") {
    // An Nsight-style step: the only range around the launches is NVTX `forward`. The convolution,
    // then (after an elementwise kernel) two GEMMs back to back: two weights' casts, not one for the
    // range and not one for each GEMM of the run.
    Graph g = test::graph_of(KinetoJson()
                                 .annotation("ProfilerStep#0", 0, 300)
                                 .annotation("forward", 5, 100)
                                 .runtime("cudaLaunchKernel", 10, 5, 1)
                                 .kernel("volta_scudnn_128x64_relu_interior_nn_v1", 30, 40, 1)
                                 .runtime("cudaLaunchKernel", 20, 5, 2)
                                 .kernel("void at::native::vectorized_elementwise_kernel<4>(int)", 70, 20, 2)
                                 .runtime("cudaLaunchKernel", 30, 5, 3)
                                 .kernel("volta_sgemm_128x64_nn", 90, 30, 3)
                                 .runtime("cudaLaunchKernel", 40, 5, 4)
                                 .kernel("volta_sgemm_64x64_nt", 120, 30, 4)
                                 .str());
    const TaskId convolution = task_named(g, "volta_scudnn_128x64_relu_interior_nn_v1");
    const TaskId first_gemm = task_named(g, "volta_sgemm_128x64_nn");
    REQUIRE(g.task(convolution).op_event == g.task(first_gemm).op_event);  // both inside `forward` only
    const auto out = apply(g, "amp");
    CHECK(live_named(g, "amp cast fp32 -> fp16") == 2);
    CHECK(test::edge_between(g, task_named(g, "amp cast fp32 -> fp16", 0), convolution)->type == EdgeType::gpu_sequential);
    CHECK(test::edge_between(g, task_named(g, "amp cast fp32 -> fp16", 1), first_gemm)->type ==
          EdgeType::gpu_sequential);
    CHECK_THAT(all_notes(out), Catch::Contains("2 fp16 weight casts inserted (one per run of GEMM or convolution"));
  }
  SECTION("a trace without a forward phase gets no casts") {
    Graph g = test::graph_of(KinetoJson()
                                 .runtime("cudaLaunchKernel", 15, 10, 1)
                                 .kernel("volta_sgemm_64x64_nt", 30, 90, 1)
                                 .str());
    const auto out = apply(g, "amp");
    CHECK(g.task(task_named(g, "volta_sgemm_64x64_nt")).duration_ns == 30 * us);
    CHECK(live_named(g, "amp cast fp32 -> fp16") == 0);
    CHECK_THAT(all_notes(out), Catch::Contains("no casts inserted: the graph marks no forward phase"));
  }
}

TEST_CASE("amp recognises tensor-core kernels by name, not by their parameter lists", "[scenario][local]") {
  const std::vector<std::string> tensor_core = {
      "volta_sgemm_128x64_nn",
      "cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1",
      "void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>(int, int)",
      "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int)",
      "void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int)",
      "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(Params)",
      "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16",
      "volta_h884gemm_64x64_ldg8_nn",
      "turing_fp16_s1688cudnn_fp16_128x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1",
      "_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolution",
  };
  const std::vector<std::string> other = {
      "void cudnn::cnn::im2col4d_kernel<float, long>(cudnn::cnn::im2col4d_params, cudnnConvolutionStruct)",
      "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)",
      "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>(cudnnTensorStruct)",
      "cask_cudnn::computeWgradBOffsetsKernel(cask_cudnn::ComputeWgradBOffsetsParams)",
      "void cudnn::cnn::reduce_wgrad_nchw_helper<float, float>(void*, void const*, float, int, int)",
      "void cudnn::winograd_nonfused::winogradWgradData4x4<float, float>(Params)",
      "void cudnn::winograd::generateWinogradTilesKernel<0, float, float>(Params)",
      "void splitKreduce_kernel<float, float, float, float>(cublasSplitKParams<float>)",
  };
  KinetoJson trace;
  double ts = 0;
  std::int64_t correlation = 1;
  for (const auto* names : {&tensor_core, &other})
    for (const auto& name : *names) trace.kernel(name, ts += 100, 30, correlation++);
  Graph g = test::graph_of(trace.str());
  apply(g, "amp:tensor_core=3,other=2");
  for (const auto& name : tensor_core) {
    INFO(name);
    CHECK(g.task(task_named(g, name)).duration_ns == 10 * us);
  }
  for (const auto& name : other) {
    INFO(name);
    CHECK(g.task(task_named(g, name)).duration_ns == 15 * us);
  }
}

// ------------------------------------------------------------------------- real shared traces
// Through Predictor, as `daydream predict` reports them: baseline and predicted time per step.

namespace {

Predictor predictor_of(const std::string& relative) {
  const auto files = test::traces_at(relative);
  REQUIRE(!files.empty());
  return Predictor(build_graph(load_trace(files.front())));
}

// Predicts `spec`; checks every step against `bound_ns(step)`; returns the prediction.
template <class Bound>
Prediction check_steps(const Predictor& predictor, const std::string& spec, Bound bound_ns, Graph* changed = nullptr) {
  INFO(spec);
  Graph graph;
  SimulationResult result;
  Prediction p = predictor.predict(parse_scenario_spec(spec), graph, result);
  REQUIRE(!p.iterations.empty());
  for (std::size_t k = 0; k < p.iterations.size(); ++k) {
    const auto& step = p.iterations[k];
    INFO(step.name << ": baseline " << step.baseline_ns << " ns, predicted " << step.predicted_ns << " ns");
    CHECK(step.predicted_ns <= bound_ns(k, graph));
  }
  if (changed) *changed = std::move(graph);
  return p;
}

const auto no_slower = [](const Prediction& base) {
  return [&base](std::size_t k, const Graph&) { return base.iterations[k].baseline_ns; };
};

bool same_as_baseline(const Prediction& p) {
  for (const auto& step : p.iterations)
    if (step.predicted_ns != step.baseline_ns) return false;
  return p.predicted_total_ns == p.baseline_total_ns;
}

// The CPU time AMP's inserted cast launches add to step k.
TimeNs cast_launch_ns(const Graph& graph, std::size_t k) {
  TimeNs total = 0;
  for (TaskId t = 0; t < graph.num_tasks(); ++t)
    if (!graph.removed(t) && graph.name(t) == "cudaLaunchKernel (amp cast)" && graph.task(t).iteration == static_cast<std::int32_t>(k))
      total += graph.task(t).duration_ns;
  return total;
}

}  // namespace

TEST_CASE("amp and faster_gpu never slow a real step down, factor 1 is the baseline", "[scenario][local][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  for (const char* relative : {"resnet50-v100-dataloader/workers0", "ddp-resnet-v100-rank0"}) {
    INFO(relative);
    const Predictor predictor = predictor_of(relative);
    const Prediction baseline = predictor.predict(parse_scenario_spec("faster_gpu:factor=1,kind=all"));
    REQUIRE(baseline.iterations.size() >= 5);
    CHECK(same_as_baseline(baseline));
    // Precision alone never slows a step; GradScaler's sync may (a CPU-bound step waits for the
    // GPU's backward pass before its optimizer step): grad_scaler=0 here, its edge is tested on
    // a hand-built step (test_gpu_model.cpp).
    for (const char* spec : {"faster_gpu", "faster_gpu:factor=4,kind=all", "amp:casts=0,grad_scaler=0",
                             "amp:casts=0,tensor_core=3"})
      check_steps(predictor, spec, no_slower(baseline));
    // With casts, a CPU-bound step may pay at most the CPU time of the casts' launches.
    Graph amp;
    check_steps(
        predictor, "amp:grad_scaler=0",
        [&](std::size_t k, const Graph& g) { return baseline.iterations[k].baseline_ns + cast_launch_ns(g, k); }, &amp);
    CHECK(cast_launch_ns(amp, 0) > 0);
  }
}

TEST_CASE("amp speeds up the GPU-bound DDP ResNet steps", "[scenario][local][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const Prediction p = predictor_of("ddp-resnet-v100-rank0").predict(parse_scenario_spec("amp"));
  REQUIRE(p.iterations.size() == 5);
  // Steps 103-105 are GPU-bound (95.7 ms); their kernels shrink 2-3x: 1.89x at the median.
  for (std::size_t k = 2; k < p.iterations.size(); ++k)
    CHECK(static_cast<double>(p.iterations[k].predicted_ns) < 0.6 * static_cast<double>(p.iterations[k].baseline_ns));
  CHECK(p.speedup() > 1.8);
}

TEST_CASE("faster_network on real traces: factor 1 is the baseline, faster never slower", "[scenario][local][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  // ddp-convnet-a100-nccl: 21 all-reduces, CPU-bound steps. dlrm rank 0: 8 collectives
  // (all-to-all, all-reduce) on the critical path of its one step (14.425 ms).
  for (const char* relative : {"ddp-convnet-a100-nccl", "dlrm-v100-8ranks/kineto"}) {
    INFO(relative);
    const Predictor predictor = predictor_of(relative);
    const Prediction none = predictor.predict(parse_scenario_spec("faster_network:factor=1"));
    CHECK(same_as_baseline(none));
    const auto faster = check_steps(predictor, "faster_network:factor=10", no_slower(none));
    CHECK_THAT(all_notes(faster.notes), Catch::Contains("communication tasks scaled by 1/10"));
    // bandwidth sizes the all-reduces ddp sizes (their record_param_comms ranges): 15 of 21 on
    // ddp-convnet, 3 of 8 collectives on dlrm; Kineto records no size on the kernels themselves.
    const Prediction sized = predictor.predict(parse_scenario_spec("faster_network:bandwidth=100Gbps"));
    CHECK_THAT(all_notes(sized.notes),
               Catch::Contains(std::string(relative) == "ddp-convnet-a100-nccl" ? "15 communication tasks set to bytes"
                                                                                 : "3 communication tasks set to bytes"));
  }
  const Prediction dlrm = predictor_of("dlrm-v100-8ranks/kineto").predict(parse_scenario_spec("faster_network"));
  CHECK(dlrm.speedup() > 1.1);  // 14.425 -> 12.840 ms
}

TEST_CASE("channels_last and pinned_memory on real traces", "[scenario][local][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const Predictor resnet = predictor_of("resnet50-v100-dataloader/workers0");
  const Prediction baseline = resnet.predict(parse_scenario_spec("faster_gpu:factor=1"));
  // 12 nchwToNhwc + 6 nhwcToNchw kernels, each with its own launch call.
  const auto channels_last = check_steps(resnet, "channels_last", no_slower(baseline));
  CHECK_THAT(all_notes(channels_last.notes),
             Catch::Contains("removed 18 layout-transform kernels") && Catch::Contains("and 18 launch calls"));
  // Each step copies its input batch (19,267,584 bytes) and labels from pageable memory; the
  // staged 2 ms copy call goes, and the batch copy takes 19267584 / 12e9 s.
  Graph pinned;
  const auto p = check_steps(
      resnet, "pinned_memory", [&](std::size_t k, const Graph&) { return baseline.iterations[k].baseline_ns - 100 * us; },
      &pinned);
  CHECK_THAT(all_notes(p.notes),
             Catch::Contains("12 host-to-device copies made pinned") && Catch::Contains("12 stream synchronisations removed"));
  std::size_t batches = 0;
  for (TaskId t : pinned.select(TaskFilter().kind(TaskKind::memcpy).name("HtoD")))
    if (pinned.task(t).bytes == 19'267'584) {
      CHECK(pinned.task(t).duration_ns == 1'605'632);
      ++batches;
    }
  CHECK(batches == 6);
}
