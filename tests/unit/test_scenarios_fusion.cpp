// The fusion scenarios (fused_adam, restructure_bn, cuda_graphs): exact arithmetic on small
// hand-built traces, bad parameters, and properties on the real traces of ../shared/traces
// (skipped when absent).
//
// Hand-built traces are one thread and one stream inside ProfilerStep#0, so every CPU segment
// touches the next (no cpu_sequential delays) and the step runs from its first to its last CPU
// task. Launch latencies and the stream gap are the graph's calibration (docs/graph.md), worked
// out in each trace's comment. Times in the comments are microseconds.
#include <catch2/catch.hpp>

#include <algorithm>
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

using namespace daydream;
using test::edge_between;
using test::KinetoJson;
using test::task_named;
using test::us;
using test::apply;
using test::live_named;
using test::step_time;
using test::step_times;

namespace {

// The live task with this name (exactly one).
TaskId live_task(const Graph& graph, std::string_view name) {
  TaskId found = kNoTask;
  for (TaskId t = 0; t < graph.num_tasks(); ++t)
    if (!graph.removed(t) && graph.name(t) == name) {
      REQUIRE(found == kNoTask);
      found = t;
    }
  REQUIRE(found != kNoTask);
  return found;
}

using test::all_notes;

constexpr std::size_t kKernel = static_cast<std::size_t>(TaskKind::kernel);

}  // namespace

// ---------------------------------------------------------------------------------- fused_adam

namespace {

// A forward kernel, an SGD step with one add_ per parameter, then zero_grad and a sync.
//   cpu: step [0,5) conv2d [5,10) L0 [10,15) conv2d [15,25) step [25,30)
//        Optimizer.step [30,35) add_ [35,40) L1 [40,45) add_ [45,50) step' [50,55) add_ [55,60) L2 [60,65)
//        add_ [65,70) step' [70,75) add_ [75,78) L3 [78,83) add_ [83,88) step' [88,90)
//        step [90,95) zero_grad [95,97) zero_ [97,100) L4 [100,105) zero_ [105,108) zero_grad [108,110)
//        step [110,112) sync [112,125) step [125,200)
//   gpu: sgemm_fw [20,60) (L0), add_p1 [60,70) (L1), add_p2 [70,75) (L2), add_p3 [88,94) (L3),
//        fill_zero [110,120) (L4)
// Calibration: sgemm_fw, add_p3 and fill_zero were launched onto an idle stream 10 us after
// their calls: launch latency 10; add_p1 and add_p2 were held back by the stream and started
// right after their predecessors: gap 0. The sync waits for fill_zero (ends 120), keeps 5.
// Replay: fill_zero 110-120, sync 120-125, last segment 125-200: 200.
std::string sgd_step() {
  return KinetoJson()
      .annotation("ProfilerStep#0", 0, 200)
      .cpu_op("aten::conv2d", 5, 20)
      .runtime("cudaLaunchKernel", 10, 5, 1)
      .kernel("sgemm_fw", 20, 40, 1)
      .annotation("Optimizer.step#SGD.step", 30, 60)
      .cpu_op("aten::add_", 35, 15)
      .runtime("cudaLaunchKernel", 40, 5, 2)
      .kernel("add_p1", 60, 10, 2)
      .cpu_op("aten::add_", 55, 15)
      .runtime("cudaLaunchKernel", 60, 5, 3)
      .kernel("add_p2", 70, 5, 3)
      .cpu_op("aten::add_", 75, 13)
      .runtime("cudaLaunchKernel", 78, 5, 4)
      .kernel("add_p3", 88, 6, 4)
      .annotation("Optimizer.zero_grad#SGD.zero_grad", 95, 15)
      .cpu_op("aten::zero_", 97, 11)
      .runtime("cudaLaunchKernel", 100, 5, 5)
      .kernel("fill_zero", 110, 10, 5)
      .runtime("cudaDeviceSynchronize", 112, 13, 6)
      .str();
}

}  // namespace

TEST_CASE("fused_adam replaces the optimizer step's kernels and CPU work with one fused kernel", "[scenario][fusion]") {
  const Graph base = test::graph_of(sgd_step());
  REQUIRE(base.calibration().launch_latency_ns[kKernel] == 10 * us);
  REQUIRE(base.calibration().gpu_gap_ns == 0);
  REQUIRE(step_time(base) == 200 * us);
  const TaskId before_step = task_named(base, "ProfilerStep#0", 1);  // [25,30)
  const TaskId after_step = task_named(base, "ProfilerStep#0", 2);   // [90,95)
  REQUIRE(base.task(before_step).recorded_start_ns == 25 * us);
  REQUIRE(base.task(after_step).recorded_start_ns == 90 * us);

  Graph g = base;
  const auto out = apply(g, "fused_adam");
  // Removed: 3 kernels (21 us), their 3 calls and the step's 10 CPU segments; zero_grad stays.
  CHECK(live_named(g, "add_p1") + live_named(g, "add_p2") + live_named(g, "add_p3") == 0);
  CHECK(live_named(g, "aten::add_") == 0);
  CHECK(live_named(g, "Optimizer.step#SGD.step") == 0);
  CHECK(live_named(g, "fill_zero") == 1);
  CHECK(live_named(g, "aten::zero_") == 2);
  CHECK(g.num_live_tasks() == base.num_live_tasks() - 16 + 3);
  // Inserted: the framework call (median removed segment: 5), the launch (median launch call: 5)
  // and the fused kernel (1 x 21 = 21).
  const TaskId framework = live_task(g, "fused optimizer step");
  const TaskId launch = live_task(g, "cudaLaunchKernel (fused optimizer)");
  const TaskId fused = live_task(g, "fused_optimizer_kernel (multi_tensor_apply)");
  CHECK(g.task(framework).duration_ns == 5 * us);
  CHECK(g.task(launch).duration_ns == 5 * us);
  CHECK(g.task(fused).duration_ns == 21 * us);
  CHECK(g.task(fused).phase == Phase::update);
  CHECK(g.task(fused).iteration == 0);
  // In the place of the removed work: step [25,30) -> framework -> launch -> step [90,95) on the
  // thread; sgemm_fw -> fused -> fill_zero on the stream; launch -> fused start-to-start.
  CHECK(edge_between(g, before_step, framework)->type == EdgeType::cpu_sequential);
  CHECK(edge_between(g, framework, launch)->delay_ns == 0);
  CHECK(edge_between(g, launch, after_step)->type == EdgeType::cpu_sequential);
  const auto launch_edge = edge_between(g, launch, fused);
  REQUIRE(launch_edge);
  CHECK(launch_edge->type == EdgeType::launch);
  CHECK(launch_edge->timing == Timing::start_to_start);
  CHECK(launch_edge->delay_ns == 10 * us);
  CHECK(edge_between(g, task_named(g, "sgemm_fw"), fused)->type == EdgeType::gpu_sequential);
  CHECK(edge_between(g, fused, task_named(g, "fill_zero"))->type == EdgeType::gpu_sequential);
  // cpu: framework [30,35), launch [35,40), then the rest 60 us earlier: L4 [50,55), sync from 62.
  // gpu: fused max(35 + 10, sgemm end 60) = 60-81; fill_zero max(50 + 10, 81) = 81-91;
  // sync 91-96, last segment 96-171.
  const auto result = simulate(g);
  CHECK(result.start_ns[framework] == 30 * us);
  CHECK(result.start_ns[launch] == 35 * us);
  CHECK(result.start_ns[fused] == 60 * us);
  CHECK(result.end_ns[task_named(g, "fill_zero")] == 91 * us);
  CHECK(step_time(g) == 171 * us);
  CHECK_THAT(all_notes(out), Catch::Contains("1 of 1 optimizer steps fused: removed 3 kernels/memsets (0.021 ms GPU), "
                                             "3 CUDA calls and 10 CPU segments (0.060 ms CPU)") &&
                                 Catch::Contains("inserted 1 fused kernels (1 per step and stream, factor 1: 0.021 ms"));
  CHECK(g.find_cycle().empty());
}

TEST_CASE("fused_adam: factor and kernels set the fused kernels' time and count", "[scenario][fusion]") {
  const Graph base = test::graph_of(sgd_step());
  SECTION("factor 0.5: fused kernel 10.5 us, 60-70.5; fill_zero 70.5-80.5; sync 80.5-85.5; segment to 160.5") {
    Graph g = base;
    apply(g, "fused_adam:factor=0.5");
    CHECK(g.task(live_task(g, "fused_optimizer_kernel (multi_tensor_apply)")).duration_ns == 10'500);
    CHECK(step_time(g) == 160'500);
  }
  SECTION("kernels 3: three 7 us kernels, each after its own framework call and launch") {
    // cpu: (framework 5, launch 5) x 3 = [30,60), then step [60,65) ... L4 [70,75), sync from 82.
    // gpu: F1 max(35 + 10, 60) = 60-67, F2 max(45 + 10, 67) = 67-74, F3 max(55 + 10, 74) = 74-81,
    //      fill_zero max(70 + 10, 81) = 81-91; sync 91-96, segment 96-171.
    Graph g = base;
    apply(g, "fused_adam:kernels=3");
    CHECK(live_named(g, "fused_optimizer_kernel (multi_tensor_apply)") == 3);
    CHECK(live_named(g, "cudaLaunchKernel (fused optimizer)") == 3);
    const auto result = simulate(g);
    std::vector<TimeNs> starts;
    for (TaskId t = 0; t < g.num_tasks(); ++t)
      if (!g.removed(t) && g.name(t) == "fused_optimizer_kernel (multi_tensor_apply)") {
        CHECK(g.task(t).duration_ns == 7 * us);
        starts.push_back(result.start_ns[t]);
      }
    CHECK(starts == std::vector<TimeNs>{60 * us, 67 * us, 74 * us});
    CHECK(step_time(g) == 171 * us);
  }
  SECTION("factor 1 and a GPU-bound step: still faster, by the removed CPU work only") {
    // Stretch the optimizer kernels 10x: add_p1..3 = 100 + 50 + 60 = 210 us of GPU work.
    Graph slow = base;
    for (const char* name : {"add_p1", "add_p2", "add_p3"}) slow.set_duration(task_named(slow, name), slow.task(task_named(slow, name)).duration_ns * 10);
    const TimeNs before = step_time(slow);
    Graph g = slow;
    apply(g, "fused_adam");
    CHECK(g.task(live_task(g, "fused_optimizer_kernel (multi_tensor_apply)")).duration_ns == 210 * us);
    CHECK(step_time(g) <= before);
  }
}

TEST_CASE("fused_adam moves the removed kernels' other GPU dependencies to the fused kernel", "[scenario][fusion]") {
  // A cudaStreamSynchronize inside the step waits for add_p2 (the thread's last launch): it
  // stays (a blocking call) and now waits for the fused kernel.
  //   cpu: step [0,5) Optimizer.step [5,10) L1 [10,15) step' [15,20) L2 [20,25) step' [25,30)
  //        S [30,60) step' [60,70) step [70,100)
  //   gpu: add_p1 [20,40) (L1), add_p2 [40,55) (L2): latency 10, gap 0; S keeps 60 - 55 = 5.
  const Graph base = test::graph_of(KinetoJson()
                                        .annotation("ProfilerStep#0", 0, 100)
                                        .annotation("Optimizer.step#Adam.step", 5, 65)
                                        .runtime("cudaLaunchKernel", 10, 5, 1)
                                        .kernel("add_p1", 20, 20, 1)
                                        .runtime("cudaLaunchKernel", 20, 5, 2)
                                        .kernel("add_p2", 40, 15, 2)
                                        .runtime("cudaStreamSynchronize", 30, 30, 3)
                                        .str());
  const TaskId sync = task_named(base, "cudaStreamSynchronize");
  REQUIRE(base.task(sync).blocking);
  REQUIRE(step_time(base) == 100 * us);
  Graph g = base;
  const auto out = apply(g, "fused_adam");
  CHECK(!g.removed(sync));
  const TaskId fused = live_task(g, "fused_optimizer_kernel (multi_tensor_apply)");
  CHECK(g.task(fused).duration_ns == 35 * us);
  CHECK(edge_between(g, fused, sync)->type == EdgeType::sync);
  // cpu: step [0,5) framework (median removed segment of 5, 5, 5, 10 = 5) [5,10) launch [10,15),
  // then S from 15; gpu: fused 20-55; S waits until 55 and keeps 5: 55-60; step' [60,70) is
  // gone: step 60-90.
  CHECK(step_time(g) == 90 * us);
  CHECK(simulate(g).start_ns[sync] == 55 * us);
  CHECK_THAT(all_notes(out), Catch::Contains("kept 1 blocking or copy calls"));
}

TEST_CASE("fused_adam fuses steps that touch one after another: the second step's kernel follows the first's",
          "[scenario][fusion]") {
  // Two optimizer steps back to back, their kernels back to back on the stream (a2 -> b1): the
  // steps cannot all be removed before their replacements go in, so each is fused in turn and
  // the second step's fused kernel follows the first's on the stream.
  //   cpu: Optimizer.step A [10,30): launches [12,17) [20,25); B [30,50): launches [32,37) [40,45)
  //   gpu: a1 [25,30) a2 [30,35) b1 [40,45) b2 [45,50)
  const Graph base = test::graph_of(KinetoJson()
                                        .annotation("ProfilerStep#0", 0, 100)
                                        .annotation("Optimizer.step#Adam.step", 10, 20)
                                        .runtime("cudaLaunchKernel", 12, 5, 1)
                                        .kernel("a1", 25, 5, 1)
                                        .runtime("cudaLaunchKernel", 20, 5, 2)
                                        .kernel("a2", 30, 5, 2)
                                        .annotation("Optimizer.step#Adam.step", 30, 20)
                                        .runtime("cudaLaunchKernel", 32, 5, 3)
                                        .kernel("b1", 40, 5, 3)
                                        .runtime("cudaLaunchKernel", 40, 5, 4)
                                        .kernel("b2", 45, 5, 4)
                                        .str());
  Graph g = base;
  const auto out = apply(g, "fused_adam");
  CHECK_THAT(all_notes(out), Catch::Contains("2 of 2 optimizer steps fused: removed 4 kernels/memsets"));
  std::vector<TaskId> fused;
  for (TaskId t = 0; t < g.num_tasks(); ++t)
    if (!g.removed(t) && g.name(t) == "fused_optimizer_kernel (multi_tensor_apply)") fused.push_back(t);
  REQUIRE(fused.size() == 2);
  REQUIRE(edge_between(g, fused[0], fused[1]));
  CHECK(edge_between(g, fused[0], fused[1])->type == EdgeType::gpu_sequential);
  CHECK(g.find_cycle().empty());

  // Through a Predictor, which keeps what fused_adam prepares across values of `kernels`, the
  // same as applying each spec to a copy of the base.
  const Predictor predictor(base);
  for (int round = 0; round < 2; ++round)
    for (const char* spec : {"fused_adam:kernels=1", "fused_adam:kernels=2", "fused_adam:kernels=3,factor=0.5"}) {
      INFO(spec);
      Graph direct = base;
      apply(direct, spec);
      Graph changed;
      SimulationResult result;
      (void)predictor.predict(parse_scenario_spec(spec), changed, result);
      CHECK(changed.fingerprint() == direct.fingerprint());
      CHECK(result.end_ns == simulate(direct).end_ns);
    }
}

TEST_CASE("fused_adam refuses a trace without an optimizer step, and bad parameters", "[scenario][fusion]") {
  const std::string no_step = KinetoJson()
                                  .annotation("ProfilerStep#0", 0, 50)
                                  .runtime("cudaLaunchKernel", 10, 5, 1)
                                  .kernel("sgemm", 20, 10, 1)
                                  .str();
  Graph g = test::graph_of(no_step);
  CHECK_THROWS_WITH(apply(g, "fused_adam"), Catch::Contains("scenario 'fused_adam': the trace has no optimizer step") &&
                                                Catch::Contains("Optimizer\\.step"));
  Graph cpu_only = test::graph_of(KinetoJson()
                                      .annotation("ProfilerStep#0", 0, 50)
                                      .annotation("Optimizer.step#SGD.step", 5, 20)
                                      .cpu_op("aten::add_", 10, 5)
                                      .str());
  CHECK_THROWS_WITH(apply(cpu_only, "fused_adam"),
                    Catch::Contains("none of the trace's 1 optimizer steps launched a kernel"));
  Graph s = test::graph_of(sgd_step());
  CHECK_THROWS_WITH(apply(s, "fused_adam:factor=0"), Catch::Contains("'factor' = '0' is out of range (valid: > 0"));
  CHECK_THROWS_WITH(apply(s, "fused_adam:factor=nan"), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(apply(s, "fused_adam:factor=-1"), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(apply(s, "fused_adam:kernels=0"), Catch::Contains("'kernels' = '0' is out of range"));
  CHECK_THROWS_WITH(apply(s, "fused_adam:kernels=1.5"), Catch::Contains("kernels"));
  CHECK_THROWS_WITH(apply(s, "fused_adam:speed=2"),
                    Catch::Contains("has no parameter 'speed'") && Catch::Contains("factor") && Catch::Contains("kernels"));
  CHECK(step_time(s) == 200 * us);  // refused: nothing changed
}

// ------------------------------------------------------------------------------ restructure_bn

namespace {

// BatchNorm forward + ReLU, a convolution, then ReLU backward + BatchNorm backward.
//   cpu: step [0,5) batch_norm [5,10) L1 [10,15) batch_norm [15,20) step [20,25)
//        relu_ [25,30) L2 [30,35) relu_ [35,40) step [40,45) conv2d [45,50) L3 [50,55) conv2d [55,60)
//        step [60,65) threshold_backward [65,70) L4 [70,75) threshold_backward [75,80) step [80,85)
//        bn_backward [85,90) L5 [90,95) bn_backward [95,100) step [100,105) sync [105,145) step [145,200)
//   gpu: bn_fw [20,50) (L1), relu [50,60) (L2), conv [60,90) (L3), threshold [90,100) (L4),
//        bn_bw [100,140) (L5)
// Calibration: bn_fw is the only kernel launched onto an idle stream: latency 10; the others were
// held back and started at their predecessor's end: gap 0. The sync keeps 145 - 140 = 5.
// Replay: bn_bw 100-140, sync 140-145, last segment 145-200: 200.
constexpr const char* kBnFw = "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>(cudnnTensorStruct)";
constexpr const char* kBnBw = "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float)";
constexpr const char* kReluFw =
    "void at::native::vectorized_elementwise_kernel<4, at::native::clamp_min_scalar_kernel_impl(at::TensorIterator&)>";
constexpr const char* kReluBw = "void at::native::vectorized_elementwise_kernel<4, at::native::threshold_kernel_impl<float>>";
constexpr const char* kConv = "volta_scudnn_128x64_relu_interior_nn_v1";  // a convolution, despite "relu"

std::string bn_relu_block() {
  return KinetoJson()
      .annotation("ProfilerStep#0", 0, 200)
      .cpu_op("aten::batch_norm", 5, 15)
      .runtime("cudaLaunchKernel", 10, 5, 1)
      .kernel(kBnFw, 20, 30, 1)
      .cpu_op("aten::relu_", 25, 15)
      .runtime("cudaLaunchKernel", 30, 5, 2)
      .kernel(kReluFw, 50, 10, 2)
      .cpu_op("aten::conv2d", 45, 15)
      .runtime("cudaLaunchKernel", 50, 5, 3)
      .kernel(kConv, 60, 30, 3)
      .cpu_op("aten::threshold_backward", 65, 15)
      .runtime("cudaLaunchKernel", 70, 5, 4)
      .kernel(kReluBw, 90, 10, 4)
      .cpu_op("aten::native_batch_norm_backward", 85, 15)
      .runtime("cudaLaunchKernel", 90, 5, 5)
      .kernel(kBnBw, 100, 40, 5)
      .runtime("cudaDeviceSynchronize", 105, 40, 6)
      .str();
}

}  // namespace

TEST_CASE("restructure_bn removes the ReLU kernels next to BatchNorm and scales BatchNorm", "[scenario][fusion]") {
  const Graph base = test::graph_of(bn_relu_block());
  REQUIRE(base.calibration().launch_latency_ns[kKernel] == 10 * us);
  REQUIRE(base.calibration().gpu_gap_ns == 0);
  REQUIRE(step_time(base) == 200 * us);

  SECTION("default bn_factor 0.75") {
    Graph g = base;
    const auto out = apply(g, "restructure_bn");
    // Both ReLU kernels go, with their operators' CPU work (3 tasks each); the convolution stays.
    CHECK(live_named(g, kReluFw) + live_named(g, kReluBw) == 0);
    CHECK(live_named(g, "aten::relu_") + live_named(g, "aten::threshold_backward") == 0);
    CHECK(live_named(g, kConv) == 1);
    CHECK(live_named(g, "cudaLaunchKernel") == 3);
    CHECK(g.num_live_tasks() == base.num_live_tasks() - 8);
    const TaskId bn_fw = task_named(g, kBnFw), conv = task_named(g, kConv), bn_bw = task_named(g, kBnBw);
    CHECK(g.task(bn_fw).duration_ns == 22'500);  // 30 x 0.75
    CHECK(g.task(bn_bw).duration_ns == 30 * us);  // 40 x 0.75
    CHECK(edge_between(g, bn_fw, conv)->delay_ns == 0);  // one gap, the one conv had
    CHECK(edge_between(g, conv, bn_bw)->type == EdgeType::gpu_sequential);
    // cpu: the removed operators take 15 us each: L3 [35,40), L5 [60,65), sync from 75.
    // gpu: bn_fw 20-42.5; conv max(35 + 10, 42.5) = 45-75; bn_bw max(60 + 10, 75) = 75-105;
    // sync 105-110, last segment 110-165.
    const auto result = simulate(g);
    CHECK(result.start_ns[conv] == 45 * us);
    CHECK(result.end_ns[bn_bw] == 105 * us);
    CHECK(step_time(g) == 165 * us);
    CHECK_THAT(all_notes(out), Catch::Contains("1 BatchNorm forward and 1 backward kernels scaled by 0.75 (0.070 -> 0.05") &&
                                   Catch::Contains("removed 2 ReLU/add kernels next to them (0.020 ms GPU) and 6 CPU tasks"));
    CHECK(g.find_cycle().empty());
  }
  SECTION("bn_factor 1: the fusion alone; bn_fw 20-50, conv 50-80, bn_bw 80-120, sync 120-125, segment to 180") {
    Graph g = base;
    apply(g, "restructure_bn:bn_factor=1");
    CHECK(step_time(g) == 180 * us);
  }
  SECTION("bad parameters are refused") {
    Graph g = base;
    CHECK_THROWS_WITH(apply(g, "restructure_bn:bn_factor=0"), Catch::Contains("'bn_factor' = '0' is out of range"));
    CHECK_THROWS_WITH(apply(g, "restructure_bn:bn_factor=nan"), Catch::Contains("out of range"));
    CHECK_THROWS_WITH(apply(g, "restructure_bn:relu=0"),
                      Catch::Contains("has no parameter 'relu'") && Catch::Contains("bn_factor"));
    CHECK(step_time(g) == 200 * us);
  }
}

TEST_CASE("restructure_bn: which kernels count as next to a BatchNorm", "[scenario][fusion]") {
  // Stream order: counter add (long) | bn_fw | residual add | relu | conv | bn_fw | sgemm | relu |
  // add | relu backward | bn_bw. Removed: the residual add and relu after the first bn_fw (2
  // within reach) and the relu backward before bn_bw; not the integer counter, not the relu after
  // the sgemm, not the add before the relu backward (a gradient accumulation). All back to back
  // on stream 7, one call each.
  const std::string add_float =
      "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, at::detail::Array<char*, 3> >";
  const std::vector<std::string> kernels = {
      "void at::native::vectorized_elementwise_kernel<4, at::native::BUnaryFunctor<at::native::AddFunctor<long> >>",
      kBnFw, add_float, kReluFw, kConv, kBnFw, "volta_sgemm_64x64_nt", kReluFw, add_float, kReluBw, kBnBw};
  KinetoJson trace;
  trace.annotation("ProfilerStep#0", 0, 1000);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const double call = 10.0 + 20.0 * static_cast<double>(i);
    const auto id = static_cast<std::int64_t>(i + 1);
    trace.runtime("cudaLaunchKernel", call, 5, id).kernel(kernels[i], 300.0 + 10.0 * static_cast<double>(i), 10, id);
  }
  Graph g = test::graph_of(trace.str());
  const auto out = apply(g, "restructure_bn");
  CHECK(live_named(g, kernels[0]) == 1);
  CHECK(live_named(g, add_float) == 1);  // the gradient accumulation
  CHECK(live_named(g, kReluFw) == 1);    // the one after the sgemm
  CHECK(live_named(g, kReluBw) == 0);
  CHECK(live_named(g, kConv) == 1);
  CHECK(live_named(g, "cudaLaunchKernel") == 8);
  CHECK_THAT(all_notes(out), Catch::Contains("2 BatchNorm forward and 1 backward kernels") &&
                                 Catch::Contains("removed 3 ReLU/add kernels"));
  Graph none = test::graph_of(KinetoJson()
                                  .annotation("ProfilerStep#0", 0, 50)
                                  .runtime("cudaLaunchKernel", 10, 5, 1)
                                  .kernel("sgemm", 20, 10, 1)
                                  .str());
  CHECK_THROWS_WITH(apply(none, "restructure_bn"), Catch::Contains("scenario 'restructure_bn': the trace has no BatchNorm kernel"));
}

// --------------------------------------------------------------------------------- cuda_graphs

namespace {

// Data loading, three kernels launched one by one, and a sync at the end of the step.
//   cpu: step [0,5) DataLoader [5,50) step [50,55) conv2d [55,60) L1 [60,65) conv2d [65,75)
//        step [75,80) relu [80,85) L2 [85,90) relu [90,100) step [100,105) add [105,110)
//        L3 [110,115) add [115,125) step [125,130) sync [130,140) step [140,150)
//   gpu: sgemm_k1 [70,100) (L1), relu_k2 [100,110) (L2), add_k3 [120,125) (L3)
// Calibration: sgemm_k1 and add_k3 were launched onto an idle stream, 10 us after their calls:
// latency 10; relu_k2 was held back and started at sgemm_k1's end: gap 0. The sync waits for
// add_k3 (ends 125) and keeps its whole 10 us. Replay: sync 130-140, segment 140-150: 150.
std::string launch_bound_step() {
  return KinetoJson()
      .annotation("ProfilerStep#0", 0, 150)
      .annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 5, 45)
      .cpu_op("aten::conv2d", 55, 20)
      .runtime("cudaLaunchKernel", 60, 5, 1)
      .kernel("sgemm_k1", 70, 30, 1)
      .cpu_op("aten::relu", 80, 20)
      .runtime("cudaLaunchKernel", 85, 5, 2)
      .kernel("relu_k2", 100, 10, 2)
      .cpu_op("aten::add", 105, 20)
      .runtime("cudaLaunchKernel", 110, 5, 3)
      .kernel("add_k3", 120, 5, 3)
      .runtime("cudaDeviceSynchronize", 130, 10, 4)
      .str();
}

}  // namespace

TEST_CASE("cuda_graphs replaces the step's launches and framework work with one graph launch", "[scenario][fusion]") {
  const Graph base = test::graph_of(launch_bound_step());
  REQUIRE(base.calibration().launch_latency_ns[kKernel] == 10 * us);
  REQUIRE(base.calibration().gpu_gap_ns == 0);
  REQUIRE(step_time(base) == 150 * us);
  const TaskId loader = task_named(base, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  const TaskId sync = task_named(base, "cudaDeviceSynchronize");
  REQUIRE(base.task(loader).phase == Phase::data_loading);

  SECTION("default: one graph between the data loading and the sync") {
    Graph g = base;
    const auto out = apply(g, "cuda_graphs");
    // Captured and removed: step [50,55) ... step [125,130): 3 calls and 10 segments. Left out:
    // step [0,5) and step [140,150) (no GPU work), the DataLoader, the sync.
    CHECK(live_named(g, "cudaLaunchKernel") == 0);
    CHECK(live_named(g, "aten::conv2d") + live_named(g, "aten::relu") + live_named(g, "aten::add") == 0);
    CHECK(live_named(g, "ProfilerStep#0") == 2);
    CHECK(!g.removed(loader));
    CHECK(!g.removed(sync));
    CHECK(g.num_live_tasks() == base.num_live_tasks() - 13 + 1);
    const TaskId launch = live_task(g, "cudaGraphLaunch");
    CHECK(g.task(launch).duration_ns == 10 * us);
    CHECK(g.task(launch).kind == TaskKind::runtime);
    CHECK(g.task(launch).iteration == 0);
    CHECK(edge_between(g, loader, launch)->type == EdgeType::cpu_sequential);
    CHECK(edge_between(g, launch, sync)->type == EdgeType::cpu_sequential);
    const TaskId k1 = task_named(g, "sgemm_k1"), k2 = task_named(g, "relu_k2"), k3 = task_named(g, "add_k3");
    const auto root = edge_between(g, launch, k1);
    REQUIRE(root);
    CHECK(root->type == EdgeType::launch);
    CHECK(root->timing == Timing::start_to_start);
    CHECK(root->delay_ns == 10 * us);
    CHECK(!edge_between(g, launch, k2));  // only the stream's first task is launched
    CHECK(edge_between(g, k2, k3)->delay_ns == 0);  // the calibrated gap, not the 10 us k3 waited
    // cpu: DataLoader [5,50), graph launch [50,60); gpu: k1 60-90, k2 90-100, k3 100-105;
    // sync waits until 105, keeps 10: 105-115; last segment 115-125.
    const auto result = simulate(g);
    CHECK(result.start_ns[k1] == 60 * us);
    CHECK(result.end_ns[k3] == 105 * us);
    CHECK(result.start_ns[sync] == 105 * us);
    CHECK(step_time(g) == 125 * us);
    CHECK_THAT(all_notes(out), Catch::Contains("region 'ProfilerStep#': 1 occurrences captured as 1 graphs") &&
                                   Catch::Contains("removed 3 CUDA calls and 10 CPU segments (0.080 ms CPU)") &&
                                   Catch::Contains("1 blocking calls") && Catch::Contains("1 data-loading tasks") &&
                                   Catch::Contains("2 stretches without GPU work"));
    CHECK(g.find_cycle().empty());
  }
  SECTION("a slow graph launch: launch=100us holds the sync until 150; segment 160-170") {
    Graph g = base;
    apply(g, "cuda_graphs:launch=100us");
    CHECK(step_time(g) == 170 * us);
  }
  SECTION("a region naming one operator captures only it") {
    // aten::relu [80,100) becomes a graph launch [80,90); relu_k2 starts max(80 + 10, 100) = 100:
    // nothing on the critical path changes, the step is 20 - 10 = 10 us shorter on the CPU:
    // L3 [100,105), add_k3 at 110-115, sync 120-130, segment 130-140.
    Graph g = base;
    apply(g, "cuda_graphs:region=^aten::relu$");
    CHECK(live_named(g, "cudaLaunchKernel") == 2);
    CHECK(live_named(g, "aten::relu") == 0);
    CHECK(step_time(g) == 140 * us);
  }
  SECTION("bad regions and launch costs are refused") {
    Graph g = base;
    CHECK_THROWS_WITH(apply(g, "cuda_graphs:region=Nope"),
                      Catch::Contains("scenario 'cuda_graphs': no CPU range of the trace matches region 'Nope'"));
    CHECK_THROWS_WITH(apply(g, "cuda_graphs:region=("), Catch::Contains("scenario 'cuda_graphs': parameter 'region'"));
    CHECK_THROWS_WITH(apply(g, "cuda_graphs:region=enumerate"),
                      Catch::Contains("launch no GPU work to capture"));
    CHECK_THROWS_WITH(apply(g, "cuda_graphs:launch=-1us"), Catch::Contains("'launch' = '-1us' is out of range"));
    CHECK_THROWS_WITH(apply(g, "cuda_graphs:graphs=2"),
                      Catch::Contains("has no parameter 'graphs'") && Catch::Contains("region") && Catch::Contains("launch"));
    CHECK(step_time(g) == 150 * us);
  }
}

TEST_CASE("cuda_graphs captures the autograd thread's launches into the step's graph", "[scenario][fusion]") {
  // Thread 2 (the autograd engine) launches bw_k2 while the main thread waits in backward().
  //   thread 1: step [0,5) forward [5,10) L1 [10,15) forward [15,20) backward [20,60) step [60,70)
  //   thread 2: evaluate_function [25,30) L2 [30,35) evaluate_function [35,45)
  //   gpu: fw_k1 [25,45) (L1), bw_k2 [45,55) (L2)
  const Graph base = test::graph_of(KinetoJson()
                                        .annotation("ProfilerStep#0", 0, 70)
                                        .cpu_op("aten::conv2d", 5, 15)
                                        .runtime("cudaLaunchKernel", 10, 5, 1)
                                        .kernel("fw_k1", 25, 20, 1)
                                        .cpu_op("autograd::engine::evaluate_function: ReluBackward0", 25, 20, 2)
                                        .runtime("cudaLaunchKernel", 30, 5, 2, 2)
                                        .kernel("bw_k2", 45, 10, 2)
                                        .str());
  Graph g = base;
  apply(g, "cuda_graphs");
  CHECK(live_named(g, "cudaLaunchKernel") == 0);
  CHECK(live_named(g, "autograd::engine::evaluate_function: ReluBackward0") == 0);
  const TaskId launch = live_task(g, "cudaGraphLaunch");
  CHECK(edge_between(g, launch, task_named(g, "fw_k1")));
  CHECK(g.find_cycle().empty());
  const auto result = simulate(g);
  CHECK(result.end_ns[task_named(g, "bw_k2")] <= simulate(base).end_ns[task_named(base, "bw_k2")]);
  // Regions on both threads that overlap in time: each task is captured once.
  Graph both = base;
  apply(both, "cuda_graphs:region=ProfilerStep#|evaluate_function");
  CHECK(live_named(both, "cudaLaunchKernel") == 0);
  CHECK(live_named(both, "cudaGraphLaunch") == 1);
  CHECK(both.find_cycle().empty());
}

TEST_CASE("cuda_graphs captures only the region's own process", "[scenario][fusion]") {
  // Process 100 (the builder's) runs the step; process 200 launches other_k on another stream
  // during it. A graph holds one process's work: process 200's op and launch stay, with its kernel.
  const std::string other_op =
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 200, "tid": 5, "ts": 11, "dur": 8, "args": {}})";
  const std::string other_launch =
      R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 200, "tid": 5, "ts": 12, "dur": 4, )"
      R"("args": {"cbid": 211, "correlation": 9, "External id": 9}})";
  const Graph base = test::graph_of(KinetoJson()
                                        .annotation("ProfilerStep#0", 0, 50)
                                        .cpu_op("aten::conv2d", 5, 20)
                                        .runtime("cudaLaunchKernel", 10, 5, 1)
                                        .kernel("k_a", 20, 100, 1)
                                        .raw(other_op)
                                        .raw(other_launch)
                                        .kernel("other_k", 30, 10, 9, 8)
                                        .str());
  Graph g = base;
  apply(g, "cuda_graphs");
  CHECK(live_named(g, "cudaGraphLaunch") == 1);
  CHECK(live_named(g, "aten::conv2d") == 0);
  CHECK(live_named(g, "aten::mul") == live_named(base, "aten::mul"));  // its segments around the launch
  CHECK(live_named(g, "cudaLaunchKernel") == 1);  // process 200's
  const TaskId launch = live_task(g, "cudaGraphLaunch");
  CHECK(edge_between(g, launch, task_named(g, "k_a")));
  CHECK(!edge_between(g, launch, task_named(g, "other_k")));
  CHECK(edge_between(g, live_task(g, "cudaLaunchKernel"), task_named(g, "other_k")));
}

TEST_CASE("cuda_graphs: a graph launch waits for the graph in_flight launches earlier", "[scenario][fusion]") {
  // Two steps, one long kernel each, no synchronization.
  //   cpu: step [0,5) op [5,10) L1 [10,15) op [15,25) step [25,50) | the same 50 us later (L2 [60,65))
  //   gpu: k_a [20,120) (L1, idle stream: latency 10), k_b [120,220) (L2, held back: gap 0)
  // Each step becomes one graph: G0 [0,10) at the thread's start, G1 right after it.
  const Graph base = test::graph_of(KinetoJson()
                                        .annotation("ProfilerStep#0", 0, 50)
                                        .cpu_op("aten::conv2d", 5, 20)
                                        .runtime("cudaLaunchKernel", 10, 5, 1)
                                        .kernel("k_a", 20, 100, 1)
                                        .annotation("ProfilerStep#1", 50, 50)
                                        .cpu_op("aten::conv2d", 55, 20)
                                        .runtime("cudaLaunchKernel", 60, 5, 2)
                                        .kernel("k_b", 120, 100, 2)
                                        .str());
  REQUIRE(base.calibration().launch_latency_ns[kKernel] == 10 * us);
  REQUIRE(base.calibration().gpu_gap_ns == 0);
  SECTION("in_flight 1 (default): G1 waits for k_a (ends 110): G1 [110,120), k_b 120-220") {
    Graph g = base;
    apply(g, "cuda_graphs");
    TaskId second = kNoTask;
    for (TaskId t = 0; t < g.num_tasks(); ++t)
      if (!g.removed(t) && g.name(t) == "cudaGraphLaunch" && g.task(t).iteration == 1) second = t;
    REQUIRE(second != kNoTask);
    CHECK(edge_between(g, task_named(g, "k_a"), second)->type == EdgeType::sync);
    CHECK(g.task(second).blocking);
    const auto result = simulate(g);
    CHECK(result.end_ns[task_named(g, "k_a")] == 110 * us);  // launched by G0 at 0 + 10
    CHECK(result.start_ns[second] == 110 * us);
    CHECK(result.end_ns[task_named(g, "k_b")] == 220 * us);
  }
  SECTION("in_flight 2: G1 [10,20) does not wait; k_b follows k_a at once: 110-210") {
    Graph g = base;
    apply(g, "cuda_graphs:in_flight=2");
    CHECK(simulate(g).end_ns[task_named(g, "k_b")] == 210 * us);
  }
  SECTION("in_flight 0 is refused") {
    Graph g = base;
    CHECK_THROWS_WITH(apply(g, "cuda_graphs:in_flight=0"), Catch::Contains("'in_flight' = '0' is out of range"));
  }
}

TEST_CASE("cuda_graphs keeps a launch that waited for a full launch queue as a zero-time wait", "[scenario][fusion]") {
  // L3 lasted 200 us (> 20 x the median launch call of 5 us) and returned 5 us after k1 ended:
  // a launch-queue wait (docs/graph.md), with a sync edge from k1; it keeps 230 - 225 = 5 us.
  //   cpu: step [0,10) L1 [10,15) step [15,20) L2 [20,25) step [25,30) L3 [30,230) step [230,300)
  //   gpu: k1 [20,225) (L1, latency 10), k2 [225,235) (L2), k3 [235,245) (L3): gap 0.
  const Graph base = test::graph_of(KinetoJson()
                                        .annotation("ProfilerStep#0", 0, 300)
                                        .runtime("cudaLaunchKernel", 10, 5, 1)
                                        .kernel("k1", 20, 205, 1)
                                        .runtime("cudaLaunchKernel", 20, 5, 2)
                                        .kernel("k2", 225, 10, 2)
                                        .runtime("cudaLaunchKernel", 30, 200, 3)
                                        .kernel("k3", 235, 10, 3)
                                        .str());
  const TaskId l3 = task_named(base, "cudaLaunchKernel", 2);
  REQUIRE(base.task(l3).blocking);
  REQUIRE(edge_between(base, task_named(base, "k1"), l3));
  REQUIRE(step_time(base) == 300 * us);
  Graph g = base;
  const auto out = apply(g, "cuda_graphs");
  // G [0,10) launches k1 at 10 (10-215); the wait (0 us) follows G and k1: at 215. The step's
  // segments are all captured (the wait does not cut the piece), so the step ends at 215.
  // gpu: k2 215-225, k3 (launched by the wait) 225-235.
  CHECK(!g.removed(l3));
  CHECK(g.name(l3) == "launch-queue wait (captured by cuda_graphs)");
  CHECK(g.task(l3).duration_ns == 0);
  CHECK(edge_between(g, live_task(g, "cudaGraphLaunch"), l3)->type == EdgeType::cpu_sequential);
  CHECK(live_named(g, "cudaLaunchKernel") == 0);
  const auto result = simulate(g);
  CHECK(result.start_ns[l3] == 215 * us);
  CHECK(result.end_ns[task_named(g, "k3")] == 235 * us);
  CHECK(step_time(g) == 215 * us);
  CHECK_THAT(all_notes(out), Catch::Contains("1 captured launch calls that waited for a full launch queue kept"));
}

// ------------------------------------------------------------------------- real shared traces

namespace {

struct RealTrace {
  Graph graph;
  std::vector<TimeNs> steps;
};

RealTrace real(const std::string& relative) {
  const auto files = test::traces_at(relative);
  REQUIRE(files.size() >= 1);
  RealTrace r{build_graph(load_trace(files.front())), {}};
  r.steps = step_times(r.graph);
  REQUIRE(r.steps.size() >= 5);
  return r;
}

TimeNs median(std::vector<TimeNs> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// The simulated end of each step: its last task on the thread that holds the steps.
std::vector<TimeNs> step_ends(const Graph& graph, const SimulationResult& result) {
  std::vector<TimeNs> ends(graph.iterations().size(), -1);
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (task.removed || task.iteration < 0) continue;
    const Iteration& it = graph.iterations()[static_cast<std::size_t>(task.iteration)];
    if (task.unit == graph.task(it.first_task).unit)
      ends[static_cast<std::size_t>(task.iteration)] = std::max(ends[static_cast<std::size_t>(task.iteration)], result.end_ns[t]);
  }
  return ends;
}

}  // namespace

// When the CPU gets ahead, work moves across step boundaries (a step may start earlier and wait
// longer), so a single step's span can grow while everything finishes earlier. The property is
// therefore on end times: no step, and not the run, ends later than in the baseline.
TEST_CASE("fusion scenarios never make a real step end later, are acyclic and deterministic", "[scenario][fusion][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  for (const char* relative : {"resnet50-v100-dataloader/workers0", "ddp-resnet-v100-rank0"}) {
    const RealTrace base = real(relative);
    const auto base_ends = step_ends(base.graph, simulate(base.graph));
    for (const char* spec : {"fused_adam", "fused_adam:factor=0.5,kernels=4", "restructure_bn", "restructure_bn:bn_factor=1",
                             "cuda_graphs", "cuda_graphs:launch=50us"}) {
      INFO(relative << ": " << spec);
      Graph g = base.graph;
      const auto out = apply(g, spec);
      CHECK(g.find_cycle().empty());
      const auto result = simulate(g);
      const auto ends = step_ends(g, result);
      REQUIRE(ends.size() == base_ends.size());
      for (std::size_t k = 0; k < ends.size(); ++k) {
        INFO("step " << k << ": baseline ends at " << base_ends[k] << " ns, predicted at " << ends[k] << " ns");
        CHECK(ends[k] <= base_ends[k]);
      }
      CHECK(result.makespan_ns <= simulate(base.graph).makespan_ns);
      const auto steps = step_times(g);
      CHECK(median(steps) <= median(base.steps));
      Graph again = base.graph;
      const auto out_again = apply(again, spec);
      CHECK(step_times(again) == steps);
      CHECK(again.num_live_tasks() == g.num_live_tasks());
      CHECK(again.num_edges() == g.num_edges());
      CHECK(out_again.notes == out.notes);
      WARN(relative << " " << spec << ": median step " << median(base.steps) << " -> " << median(steps) << " ns ("
                    << static_cast<double>(median(base.steps)) / static_cast<double>(median(steps)) << "x); "
                    << all_notes(out));
    }
  }
}
