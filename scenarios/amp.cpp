// amp: what if the job used automatic mixed precision? As the Daydream paper estimates it:
// kernels that run on tensor cores under AMP (GEMMs and convolutions, recognised by name) take
// 1/tensor_core of their time (default 1/3), every other kernel 1/other (default 1/2); copies,
// memsets, collectives and CPU work keep their recorded times, and so do the kernels of a data
// pipeline (phase data_loading: DALI, DataLoader), which autocast, being thread-local to the
// training loop, does not reach.
// On top of the paper: autocast casts each weight a tensor-core operator uses to fp16 once per
// forward pass. Each forward operator that launches tensor-core kernels gets one cast kernel on
// the same stream just before its first tensor-core kernel, launched by one more launch call just
// before that kernel's launch call (casts=0 leaves them out). A cast costs, on the GPU, the median
// elementwise kernel of the trace after the `other` scaling (most elementwise kernels are the
// optimizer's per-weight updates, which touch as many bytes as a weight cast), and on the CPU the
// median kernel-launch call. docs/scenarios/amp.md.
#include <fmt/format.h>

#include <unordered_set>
#include <vector>

#include "builtin.hpp"
#include "daydream/analyze.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

// Matched, ignoring case, in the kernel name before its first '(' (function name and template
// arguments: parameter lists mention types such as cudnnConvolutionStruct). The lookahead leaves
// out the helper kernels of those libraries that do not run on tensor cores.
constexpr const char* kTensorCore =
    "(?i)^(?![^(]*(offsets|reduce|winogradtiles|winograd_nonfused))"
    "[^(]*(gemm|conv|wgrad|dgrad|fprop|cutlass|xmma|scudnn|[sh](884|1688|16816))";
constexpr const char* kElementwise = "(?i)elementwise";

// A cast's GPU time: the median elementwise kernel after scaling; any non-tensor-core kernel when
// there is none.
TimeNs cast_kernel_ns(Graph& graph, const std::string& tensor_core) {
  auto kernels = graph.select(TaskFilter().kind(TaskKind::kernel).name(kElementwise).name_not(tensor_core));
  if (kernels.empty()) kernels = graph.select(TaskFilter().kind(TaskKind::kernel).name_not(tensor_core));
  return kernels.median_duration_ns();
}

// One cast per forward operator, before its first tensor-core kernel on its stream, launched by
// one more call before that kernel's launch call (insert_launched: none when that call starts its
// thread). Returns the count.
std::size_t insert_casts(Graph& graph, const std::vector<TaskId>& tensor_core, TimeNs cast_ns, TimeNs launch_call_ns) {
  std::unordered_set<std::int64_t> operators_done;
  std::size_t inserted = 0;
  for (TaskId kernel : tensor_core) {
    const Task& task = graph.task(kernel);
    if (task.phase != Phase::forward) continue;
    if (task.op_event != kNone && !operators_done.insert(task.op_event).second) continue;
    const TaskId call = predecessor(graph, kernel, EdgeType::launch);
    if (call == kNoTask) continue;
    auto launch = NewTask::of("cudaLaunchKernel (amp cast)", TaskKind::runtime, launch_call_ns,
                              graph.task(call).iteration, Phase::forward);
    auto cast = NewTask::of("amp cast fp32 -> fp16", TaskKind::kernel, cast_ns, task.iteration, Phase::forward);
    if (insert_launched(graph, std::move(launch), std::move(cast), call, kernel)) ++inserted;
  }
  return inserted;
}

ScenarioOutcome apply_amp(Graph& graph, const ScenarioParams& params) {
  const double tensor_core_factor = params.number("tensor_core"), other_factor = params.number("other");
  const std::string& pattern = params.text("pattern");
  check_pattern(pattern, "amp");
  const auto launch_call_ns = median_launch_call_ns(graph);
  // Autocast is thread-local to the training loop: a data pipeline's kernels (DALI, DataLoader)
  // keep their precision and time.
  const auto model = [](const Graph& g, TaskId t) { return g.task(t).phase != Phase::data_loading; };
  auto tensor_core = graph.select(TaskFilter().kind(TaskKind::kernel).name(pattern).where(model));
  auto other = graph.select(TaskFilter().kind(TaskKind::kernel).name_not(pattern).where(model));
  const std::size_t data_loading = graph.select(TaskFilter().kind(TaskKind::kernel).phase(Phase::data_loading)).size();
  const TimeNs tensor_core_before = tensor_core.total_duration_ns(), other_before = other.total_duration_ns();
  tensor_core.scale(1.0 / tensor_core_factor);
  other.scale(1.0 / other_factor);
  ScenarioOutcome outcome;
  const auto ms = [](TimeNs ns) { return static_cast<double>(ns) / 1e6; };
  outcome.notes.push_back(fmt::format("{} tensor-core kernels scaled by 1/{:g} ({:.3f} -> {:.3f} ms), {} other kernels by "
                                      "1/{:g} ({:.3f} -> {:.3f} ms)",
                                      tensor_core.size(), tensor_core_factor, ms(tensor_core_before),
                                      ms(tensor_core.total_duration_ns()), other.size(), other_factor, ms(other_before),
                                      ms(other.total_duration_ns())));
  if (data_loading > 0)
    outcome.notes.push_back(fmt::format("{} data-loading kernels (DALI, DataLoader: outside autocast) kept", data_loading));
  if (params.integer("casts") == 0) return outcome;
  if (graph.select(TaskFilter().phase(Phase::forward)).empty()) {
    outcome.notes.push_back("no casts inserted: the graph marks no forward phase");
    return outcome;
  }
  const TimeNs cast_ns = cast_kernel_ns(graph, pattern);
  const std::size_t inserted = insert_casts(graph, tensor_core.ids(), cast_ns, launch_call_ns);
  outcome.notes.push_back(fmt::format("{} fp16 weight casts inserted (one per forward operator with tensor-core kernels): "
                                      "{} ns on the GPU, {} ns launch call each",
                                      inserted, cast_ns, launch_call_ns));
  return outcome;
}

}  // namespace

Scenario amp() {
  constexpr double inf = std::numeric_limits<double>::infinity();
  return {"amp",
          "automatic mixed precision: tensor-core kernels / tensor_core, other kernels / other, plus fp16 weight casts",
          {{"tensor_core", ParamKind::number, 3, "speed-up of tensor-core kernels (GEMM, convolution)", 0, inf, true},
           {"other", ParamKind::number, 2, "speed-up of every other kernel", 0, inf, true},
           {"casts", ParamKind::integer, 1,
            "1: insert autocast's fp32 -> fp16 weight casts in the forward pass; 0: leave them out", 0, 1},
           ScenarioParam::text("pattern", kTensorCore,
                               "regular expression naming the tensor-core kernels (GEMM, convolution)")},
          apply_amp};
}

}  // namespace daydream::scenarios
