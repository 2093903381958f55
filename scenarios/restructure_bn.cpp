// restructure_bn: BatchNorm restructured and fused with its neighbours (Jung et al., "Restructuring
// Batch Normalization to Accelerate CNN Training", SysML 2019), as the Daydream paper models it:
// related tasks removed, empirical factors on the BatchNorm kernels. docs/scenarios/restructure_bn.md.
//
// Model, on each GPU stream:
//  - forward: the ReLU and residual-add kernels that directly follow a BatchNorm forward kernel
//    (up to kReach kernels, nothing else in between) are removed: their memory passes disappear
//    into the restructured layer;
//  - backward: likewise the ReLU-backward (threshold) kernel directly before a BatchNorm backward
//    kernel (adds there are gradient accumulations, not part of the layer: kept);
//  - with each removed kernel go its launch call and, when the operator around that call (aten::relu_,
//    aten::add_, ReluBackward0, ...) launched nothing else, the operator's CPU work: the fused layer
//    dispatches one operator instead of two or three. Gaps around removed work stay (Python);
//  - every BatchNorm forward and backward kernel is scaled by `bn_factor` (the restructured layer
//    reads its input fewer times; see the doc for the arithmetic behind the default 0.75).
// New kernels, copies or allocations the restructuring may add are not modeled (the paper's stated
// reason for predicting 12.7% where 7% was measured). No BatchNorm kernel in the trace is an Error.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "builtin.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

// Kernel names (case-insensitive): cuDNN bn_fw_* / bn_bw_*, PyTorch batch_norm_*, MIOpen BatchNorm*.
constexpr const char* kBatchNorm = "(?i)bn_fw|bn_bw|batch_?norm";
constexpr const char* kBatchNormBackward = "(?i)bn_bw|batch_?norm.*(backward|bwd)";
// ReLU forward (relu, clamp_min, clamp_scalar, threshold) and backward (threshold_backward) kernels,
// and float element-wise adds (residual connections, gradient sums).
constexpr const char* kRelu = "(?i)relu|clamp_min|clamp_scalar|threshold";
constexpr const char* kAdd = "(?i)AddFunctor|CUDAFunctor_add|add_kernel";
// cuDNN convolution kernels carry "relu" in their names; integer adds are counters
// (num_batches_tracked += 1), not passes over activations.
constexpr const char* kNotElementwise = "(?i)gemm|conv|scudnn|winograd|<(long|int|bool)";
// Operators whose CPU work goes with a removed kernel (the outermost one around its launch call).
constexpr const char* kFusedOperators = "(?i)relu|threshold|clamp|add";
constexpr std::size_t kReach = 2;  // kernels examined after a BN forward / before a BN backward kernel

// The fusable kernels next to each BatchNorm kernel on its stream: ReLU or add kernels after a
// forward one, ReLU-backward kernels before a backward one (the adds there are gradient
// accumulations, which the restructuring does not touch). A run lists its kernels in stream order;
// a kernel joins one run at most.
std::vector<std::vector<TaskId>> runs_next_to_batch_norm(Graph& graph, const TaskSet& batch_norm,
                                                         const std::vector<char>& backward) {
  const auto relu = TaskFilter().kind(TaskKind::kernel).name(kRelu).name_not(kNotElementwise);
  // Fusable and not yet in a run:
  auto free_forward = task_mask(graph, graph.select(TaskFilter(relu).name(kAdd)).ids());
  auto free_backward = task_mask(graph, graph.select(relu).ids());
  std::vector<std::vector<TaskId>> runs;
  for (TaskId bn : batch_norm) {
    const auto& free = backward[bn] ? free_backward : free_forward;
    const auto fusable = [&](TaskId t) { return free[t] != 0; };
    auto run = backward[bn] ? run_before(graph, bn, kReach, fusable) : run_after(graph, bn, kReach, fusable);
    for (TaskId t : run) free_forward[t] = free_backward[t] = 0;
    if (!run.empty()) runs.push_back(std::move(run));
  }
  return runs;
}

// The CPU tasks to remove with the kernels: for each launch call, the outermost fused operator
// around it when that operator launched only removed kernels and waits for nothing, else the
// call alone (a call that launched anything else stays).
std::vector<std::vector<TaskId>> cpu_work_of(const Graph& graph, const std::vector<char>& removed) {
  const RangeTasks operators(graph, kFusedOperators);
  std::vector<char> taken(graph.num_tasks(), 0);
  auto launches_only_removed = [&](TaskId t) {
    const auto launched = launched_by(graph, t);
    return std::all_of(launched.begin(), launched.end(), [&](TaskId g) { return removed[g] != 0; });
  };
  std::vector<std::vector<TaskId>> blocks;
  for (TaskId k = 0; k < removed.size(); ++k) {
    const TaskId call = removed[k] ? predecessor(graph, k, EdgeType::launch) : kNoTask;
    if (call == kNoTask || taken[call] || !launches_only_removed(call)) continue;
    const RangeWindow* op = operators.around(call);
    std::vector<TaskId> block = op ? operators.tasks(*op) : std::vector<TaskId>{};
    const bool clean = std::all_of(block.begin(), block.end(), [&](TaskId t) {
      return !taken[t] && !graph.task(t).blocking && launches_only_removed(t);
    });
    if (block.empty() || !clean) block = {call};
    for (TaskId t : block) taken[t] = 1;
    blocks.push_back(std::move(block));
  }
  return blocks;
}

ScenarioOutcome apply_restructure_bn(Graph& graph, const ScenarioParams& params) {
  auto batch_norm = graph.select(TaskFilter().kind(TaskKind::kernel).name(kBatchNorm));
  if (batch_norm.empty())
    throw Error(fmt::format("the trace has no BatchNorm kernel (no kernel name matches '{}')", kBatchNorm));
  const auto backward = task_mask(graph, batch_norm.filter(TaskFilter().name(kBatchNormBackward)).ids());
  const auto runs = runs_next_to_batch_norm(graph, batch_norm, backward);
  std::vector<TaskId> kernels;
  for (const auto& run : runs) kernels.insert(kernels.end(), run.begin(), run.end());
  const TimeNs kernel_ns = TaskSet(graph, kernels).total_duration_ns();
  std::size_t cpu_tasks = 0;
  TimeNs cpu_ns = 0;
  for (const auto& block : cpu_work_of(graph, task_mask(graph, kernels))) {
    cpu_tasks += block.size();
    cpu_ns += TaskSet(graph, block).total_duration_ns();
    remove_block(graph, block);
  }
  for (const auto& run : runs) remove_run(graph, run);  // fused into the BatchNorm kernel: no gap of their own
  const TimeNs bn_before_ns = batch_norm.total_duration_ns();
  batch_norm.scale(params.number("bn_factor"));
  const auto bn_backward = static_cast<std::size_t>(std::count(backward.begin(), backward.end(), 1));
  return {nullptr,
          {fmt::format("{} BatchNorm forward and {} backward kernels scaled by {:g} ({:.3f} -> {:.3f} ms); removed {} "
                       "ReLU/add kernels next to them ({:.3f} ms GPU) and {} CPU tasks of their operators and launches "
                       "({:.3f} ms CPU)",
                       batch_norm.size() - bn_backward, bn_backward, params.number("bn_factor"),
                       static_cast<double>(bn_before_ns) / 1e6, static_cast<double>(batch_norm.total_duration_ns()) / 1e6,
                       kernels.size(), static_cast<double>(kernel_ns) / 1e6, cpu_tasks,
                       static_cast<double>(cpu_ns) / 1e6)}};
}

}  // namespace

Scenario restructure_bn() {
  return {"restructure_bn",
          "BatchNorm restructured: adjacent ReLU/add kernels fused away, BatchNorm kernels scaled by bn_factor",
          {{"bn_factor", ParamKind::number, 0.75,
            "duration factor of the restructured BatchNorm kernels (forward and backward)", 0, 10, true}},
          apply_restructure_bn};
}

}  // namespace daydream::scenarios
