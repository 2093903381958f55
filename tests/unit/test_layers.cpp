// Layer attribution: nested layer paths, daydream.layer marks, backward work mapped to its
// forward layer by autograd sequence number, and the per-layer report.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "daydream/layers.hpp"
#include "daydream/report/layers.hpp"
#include "daydream/transform.hpp"
#include "unit/graph_helpers.hpp"
#include "unit/trace_builder.hpp"

using namespace daydream;
using test::task_named;
using test::us;

namespace {

// A cpu_op carrying an autograd sequence number (forward ops and their backward share one).
std::string op_with_sequence(const char* name, double ts, double dur, int tid, int sequence) {
  return fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 100, "tid": {}, "ts": {}, "dur": {}, "args": {{"Sequence number": {}}}}})",
                     name, tid, ts, dur, sequence);
}

std::string python_frame(const char* name, double ts, double dur, int tid) {
  return fmt::format(R"({{"ph": "X", "cat": "python_function", "name": "{}", "pid": 100, "tid": {}, "ts": {}, "dur": {}, "args": {{}}}})",
                     name, tid, ts, dur);
}

// main thread: step > nn.Module: Net > nn.Module: Conv > aten::conv2d (seq 7) launching k_fwd;
// autograd thread: ConvolutionBackward0 (seq 7) launching k_bwd; the optimizer marked by hand.
std::string model_trace() {
  return test::KinetoJson()
      .annotation("ProfilerStep#1", 0, 1000, 1)
      .raw(python_frame("nn.Module: Net", 10, 200, 1))
      .raw(python_frame("nn.Module: Conv", 20, 100, 1))
      .raw(op_with_sequence("aten::conv2d", 30, 60, 1, 7))
      .runtime("cudaLaunchKernel", 40, 10, 1, 1)
      .kernel("k_fwd", 55, 100, 1)
      .raw(op_with_sequence("autograd::engine::evaluate_function: ConvolutionBackward0", 300, 100, 2, 7))
      .runtime("cudaLaunchKernel", 310, 10, 2, 2)
      .kernel("k_bwd", 330, 200, 2)
      .annotation("daydream.layer:optimizer:update", 600, 100, 1)
      .runtime("cudaLaunchKernel", 610, 10, 3, 1)
      .kernel("k_update", 640, 50, 3)
      .kernel("k_orphan", 700, 50, 99)
      .str();
}

}  // namespace

TEST_CASE("nested layers form a path, backward follows its forward op, marks set phase", "[layers]") {
  Graph g = test::graph_of(model_trace());
  const auto layer = [&](const char* task) { return std::string(g.string(g.task(task_named(g, task)).layer)); };
  CHECK(layer("k_fwd") == "Net/Conv");
  CHECK(g.task(task_named(g, "k_fwd")).phase == Phase::forward);
  CHECK(layer("k_bwd") == "Net/Conv");  // sequence number 7 links it to aten::conv2d
  CHECK(g.task(task_named(g, "k_bwd")).phase == Phase::backward);
  CHECK(layer("k_update") == "optimizer");
  CHECK(g.task(task_named(g, "k_update")).phase == Phase::update);
  CHECK(g.task(task_named(g, "k_orphan")).layer == 0);
  CHECK(g.report().get("layers_from_forward_ops") == 3);  // the backward op's two pieces and its launch call
  CHECK(g.select(TaskFilter().layer("^Net/Conv$").kind(TaskKind::kernel)).size() == 2);
}

TEST_CASE("the layer report sums time per layer and phase and measures coverage", "[layers]") {
  const Graph g = test::graph_of(model_trace());
  const LayerReport full = make_layer_report(g);
  CHECK(full.gpu_total_ns == 400 * us);
  CHECK(full.gpu_attributed_ns == 350 * us);  // all but k_orphan
  CHECK(full.gpu_coverage() == Approx(0.875));
  REQUIRE(full.rows.size() >= 3);
  CHECK(full.rows[0].layer == "Net/Conv");  // by GPU time: the backward kernel first
  CHECK(full.rows[0].phase == Phase::backward);
  CHECK(full.rows[0].gpu_ns == 200 * us);
  CHECK(full.rows[0].kernels == 1);
  const LayerReport top = make_layer_report(g, /*depth=*/1);
  TimeNs net_gpu = 0;
  for (const auto& row : top.rows)
    if (row.layer == "Net") net_gpu += row.gpu_ns;
  CHECK(net_gpu == 300 * us);
  CHECK(to_json(top).find("\"gpu_coverage\": 0.875000") != std::string::npos);
}

TEST_CASE("daydream.layer marks apply by interval, across operator boundaries", "[layers]") {
  // A backward mark opens inside one autograd node and closes inside a later one (tensor hooks).
  const Graph g = test::graph_of(test::KinetoJson()
                                     .annotation("ProfilerStep#1", 0, 500, 1)
                                     .annotation("daydream.layer:Net:forward", 10, 100, 1)
                                     .cpu_op("aten::linear", 20, 50, 1)
                                     .cpu_op("autograd::engine::evaluate_function: AddmmBackward0", 200, 50, 1)
                                     .annotation("daydream.layer:Net/fc:backward", 230, 80, 1)
                                     .cpu_op("autograd::engine::evaluate_function: AccumulateGrad", 260, 40, 1)
                                     .runtime("cudaLaunchKernel", 270, 5, 1, 1)
                                     .kernel("grad_kernel", 280, 10, 1)
                                     .str());
  const Task& grad = g.task(task_named(g, "grad_kernel"));
  CHECK(g.string(grad.layer) == "Net/fc");
  CHECK(grad.phase == Phase::backward);
  CHECK(g.string(g.task(task_named(g, "aten::linear")).layer) == "Net");
  CHECK(g.task(task_named(g, "autograd::engine::evaluate_function: AccumulateGrad")).layer != 0);
  CHECK(g.report().get("overlapping_cpu_events") == 0);  // marks are not cut into the nesting
}

TEST_CASE("ranges named forward and optimizer (NVTX, record_function) set the phase without a ProfilerStep",
          "[layers]") {
  // A loop marked as NVIDIA's examples and the NERSC tutorials mark it: `step 0` > `forward`,
  // then `optimizer`; a `## forward ##` range is a layer name, not a phase.
  Graph g = test::graph_of(test::KinetoJson()
                               .annotation("step 0", 0, 1000, 1)
                               .annotation("Forward", 10, 100, 1)
                               .runtime("cudaLaunchKernel", 20, 10, 1, 1)
                               .kernel("k_fwd", 40, 50, 1)
                               .annotation("OPTIMIZER", 200, 100, 1)
                               .runtime("cudaLaunchKernel", 210, 10, 2, 1)
                               .kernel("k_update", 240, 50, 2)
                               .annotation("## forward ##", 400, 100, 1)
                               .runtime("cudaLaunchKernel", 410, 10, 3, 1)
                               .kernel("k_other", 440, 50, 3)
                               .str());
  CHECK(g.task(task_named(g, "k_fwd")).phase == Phase::forward);
  CHECK(g.task(task_named(g, "k_update")).phase == Phase::update);
  CHECK(g.task(task_named(g, "k_other")).phase == Phase::unknown);
}

TEST_CASE("an operator with an autograd sequence number is forward work without a ProfilerStep", "[layers]") {
  // No ProfilerStep and no `forward` range: aten::linear (seq 3, recorded with gradients on) is
  // forward, its backward node (same seq) backward, aten::add_ without a number (the optimizer
  // runs under no_grad) stays unknown.
  Graph g = test::graph_of(test::KinetoJson()
                               .raw(op_with_sequence("aten::linear", 10, 50, 1, 3))
                               .runtime("cudaLaunchKernel", 20, 10, 1, 1)
                               .kernel("k_fwd", 40, 50, 1)
                               .raw(op_with_sequence("autograd::engine::evaluate_function: AddmmBackward0", 100, 50, 2, 3))
                               .runtime("cudaLaunchKernel", 110, 10, 2, 2)
                               .kernel("k_bwd", 130, 50, 2)
                               .cpu_op("aten::add_", 200, 50, 1)
                               .runtime("cudaLaunchKernel", 210, 10, 3, 1)
                               .kernel("k_add", 240, 50, 3)
                               .str());
  CHECK(g.task(task_named(g, "k_fwd")).phase == Phase::forward);
  CHECK(g.task(task_named(g, "k_bwd")).phase == Phase::backward);
  CHECK(g.task(task_named(g, "k_add")).phase == Phase::unknown);
}
