// amp: what if the job used automatic mixed precision (torch.autocast to fp16 or bf16)?
// By default on the GPU model (amp_device.cpp, docs/gpu_model.md): the traced GPU is identified
// from the trace (or named with `device`); each kernel outside the optimizer step (fp32 master
// weights) and a data pipeline (autocast is thread-local to the training loop) runs as autocast
// runs it (autocast_time_ratio: GEMMs and convolutions on the tensor cores at dtype by the ratio
// of peaks, memory-bound kernels with half the bytes), never below the trace's shortest kernel;
// with fp16, GradScaler's step waits for the backward pass on the GPU.
// With tensor_core, other, pattern or exclude given, or a GPU the catalogue does not know: the
// Daydream paper's fixed factors, kernels named by `pattern` and not by `exclude` / tensor_core
// and every other / other.
// On top of both: autocast casts each weight a GEMM or convolution uses once per forward pass.
// Each run of such kernels that a forward operator launches gets one cast kernel on the same
// stream just before its first one, launched by one more launch call just before that kernel's
// launch call (casts=0 leaves them out). A cast costs, on the GPU, the median elementwise kernel of the trace
// after the scaling, and on the CPU the median kernel-launch call. docs/scenarios/amp.md.
// A split scenario (ScenarioSplit): restructure_amp selects and classifies the kernels and inserts
// the casts, time_amp applies the fixed factors and times the casts, so a sweep over `tensor_core`
// and `other` selects once.
#include <fmt/format.h>

#include <any>
#include <optional>
#include <vector>

#include "amp_device.hpp"
#include "builtin.hpp"
#include "common/text.hpp"
#include "daydream/analyze.hpp"
#include "daydream/device.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

constexpr auto ms = text::milliseconds;  // the notes' "{:.3f} ms"

// Matched, ignoring case, in the kernel name before its first '(' (function name and template
// arguments: parameter lists mention types such as cudnnConvolutionStruct). kNotTensorCore names
// the helper kernels of those libraries that do not run on tensor cores.
constexpr const char* kTensorCore = "(?i)^[^(]*(gemm|conv|wgrad|dgrad|fprop|cutlass|xmma|scudnn|[sh](884|1688|16816))";
constexpr const char* kNotTensorCore = "(?i)^[^(]*(offsets|reduce|winogradtiles|winograd_nonfused)";
constexpr const char* kElementwise = "(?i)elementwise";

/// Kernels `include` names and `exclude` (when not empty) does not.
TaskFilter tensor_core_kernels(const std::string& include, const std::string& exclude) {
  TaskFilter filter = TaskFilter().kind(TaskKind::kernel).name(include);
  if (!exclude.empty()) filter.name_not(exclude);
  return filter;
}

/// The tasks `among` selects that are not in `tensor_core`.
TaskSet all_but(Graph& graph, TaskFilter among, const TaskSet& tensor_core) {
  std::vector<char> in_set(graph.num_tasks(), 0);
  for (TaskId t : tensor_core.ids()) in_set[t] = 1;
  return graph.select(among.where([in_set = std::move(in_set)](const Graph&, TaskId t) { return !in_set[t]; }));
}

/// Whether some live task is in a forward phase (stops at the first: a select would read every task).
bool marks_forward(const Graph& graph) {
  for (TaskId t = 0; t < graph.num_tasks(); ++t)
    if (!graph.removed(t) && graph.task(t).phase == Phase::forward) return true;
  return false;
}

/// Kernels autocast reaches: not a data pipeline's (autocast is thread-local to the loop).
bool in_model(const Graph& g, TaskId t) { return g.task(t).phase != Phase::data_loading; }

// --- the paper's fixed factors ---

/// The kernels the fixed factors scale, chosen before any is scaled or a cast is inserted.
struct FixedFactorKernels {
  std::vector<TaskId> tensor_core, other;
};

FixedFactorKernels fixed_factor_kernels(Graph& graph, const ScenarioParams& params) {
  auto tensor_core = graph.select(tensor_core_kernels(params.text("pattern"), params.text("exclude")).where(in_model));
  auto other = all_but(graph, TaskFilter().kind(TaskKind::kernel).where(in_model), tensor_core);
  return {tensor_core.ids(), other.ids()};
}

std::string scale_by_factors(Graph& graph, const FixedFactorKernels& kernels, const ScenarioParams& params) {
  const double tensor_core_factor = params.number("tensor_core"), other_factor = params.number("other");
  TaskSet tensor_core(graph, kernels.tensor_core), other(graph, kernels.other);
  const TimeNs tensor_core_before = tensor_core.total_duration_ns(), other_before = other.total_duration_ns();
  tensor_core.scale(1.0 / tensor_core_factor);
  other.scale(1.0 / other_factor);
  return fmt::format("{} tensor-core kernels scaled by 1/{:g} ({:.3f} -> {:.3f} ms), {} other kernels by "
                     "1/{:g} ({:.3f} -> {:.3f} ms)",
                     tensor_core.size(), tensor_core_factor, ms(tensor_core_before),
                     ms(tensor_core.total_duration_ns()), other.size(), other_factor, ms(other_before),
                     ms(other.total_duration_ns()));
}

/// The traced GPU, or nullptr (with the reason in `notes`) when the catalogue cannot say.
const DeviceSpec* model_device(const DeviceCatalog& catalog, const Graph& graph, const ScenarioParams& params,
                               std::vector<std::string>& notes) {
  if (params.given("device")) return &catalog.at(params.text("device"));
  try {
    return &traced_device(catalog, graph.gpus(), graph.source_path);
  } catch (const Error&) {
    const std::string recorded = graph.gpus().empty() ? "none recorded" : "'" + graph.gpus().front().name + "'";
    notes.push_back(fmt::format("the GPU model does not know the trace's GPU ({}): the paper's fixed factors are used "
                                "(name a known GPU with device=, or add it with devices=)",
                                recorded));
    return nullptr;
  }
}

// --- the casts ---

// The kernels whose median time a cast takes: the elementwise ones; any non-tensor-core kernel
// when there is none.
std::vector<TaskId> cast_like_kernels(Graph& graph) {
  const TaskSet tensor_core = graph.select(tensor_core_kernels(kTensorCore, kNotTensorCore));
  auto kernels = all_but(graph, TaskFilter().kind(TaskKind::kernel).name(kElementwise), tensor_core);
  if (kernels.empty()) kernels = all_but(graph, TaskFilter().kind(TaskKind::kernel), tensor_core);
  return kernels.ids();
}

// One cast per run of GEMM or convolution kernels of one forward operator: before the run's first
// kernel on its stream, launched by one more call before that kernel's launch call
// (insert_launched: none when that call starts its thread). A run ends at any other task on the
// stream, so where the innermost range is no operator (an Nsight trace whose only range around a
// U-Net's convolutions is NVTX `forward`), each convolution still gets its weight's cast, while a
// convolution's helper kernels (cuDNN's strided dgrad stages) count once. Returns the count.
std::vector<TaskId> insert_casts(Graph& graph, const std::vector<TaskId>& weighted, Precision dtype,
                                 TimeNs launch_call_ns) {
  std::vector<char> is_weighted(graph.num_tasks(), 0);
  for (TaskId kernel : weighted) is_weighted[kernel] = 1;
  std::vector<TaskId> inserted;
  const std::string cast_name = fmt::format("amp cast fp32 -> {}", to_string(dtype));
  for (TaskId kernel : weighted) {
    const Task& task = graph.task(kernel);
    if (task.phase != Phase::forward) continue;
    const TaskId before = chain_prev(graph, kernel);
    const bool continues_run = before != kNoTask && is_weighted[before] && graph.task(before).op_event == task.op_event;
    if (continues_run) continue;
    const TaskId call = predecessor(graph, kernel, EdgeType::launch);
    if (call == kNoTask) continue;
    auto launch = NewTask::of("cudaLaunchKernel (amp cast)", TaskKind::runtime, launch_call_ns,
                              graph.task(call).iteration, Phase::forward);
    auto cast = NewTask::of(cast_name, TaskKind::kernel, 0, task.iteration, Phase::forward);  // timed by time_amp
    if (const auto ids = insert_launched(graph, std::move(launch), std::move(cast), call, kernel))
      inserted.push_back(ids->second);
  }
  return inserted;
}

Precision autocast_dtype(const ScenarioParams& params) {
  const auto dtype = parse_precision(params.text("dtype"));
  if (!dtype || (*dtype != Precision::fp16 && *dtype != Precision::bf16))
    throw Error(fmt::format("amp: dtype '{}' is not one autocast runs in (valid: fp16, bf16)", params.text("dtype")));
  return *dtype;
}

/// What restructure_amp leaves for time_amp: on the GPU model every kernel is scaled already;
/// with the fixed factors, the kernels to scale. Either way the casts, inserted at 0 ns.
struct AmpPlan {
  std::optional<FixedFactorKernels> fixed;
  std::vector<std::string> notes_before, notes_after;  // around the scaling's note
  std::vector<TaskId> casts;
  std::vector<TaskId> cast_like;  // a cast takes their median time once they are scaled
  bool casts_wanted = false;
  Precision dtype = Precision::fp16;
  TimeNs launch_call_ns = 0;
};

AmpPlan restructure_amp(Graph& graph, const ScenarioParams& params) {
  check_pattern(params.text("pattern"), "amp");
  if (!params.text("exclude").empty()) check_pattern(params.text("exclude"), "amp exclude");
  AmpPlan plan;
  plan.dtype = autocast_dtype(params);
  plan.launch_call_ns = median_launch_call_ns(graph);
  const DeviceCatalog catalog = DeviceCatalog::with_file(params.text("devices"));
  const bool fixed =
      params.given("tensor_core") || params.given("other") || params.given("pattern") || params.given("exclude");
  const DeviceSpec* device = fixed ? nullptr : model_device(catalog, graph, params, plan.notes_before);
  std::vector<TaskId> weighted;
  if (device != nullptr) {
    weighted = scale_on_device(graph, *device, plan.dtype, plan.notes_before);
  } else {
    plan.fixed = fixed_factor_kernels(graph, params);
    weighted = plan.fixed->tensor_core;
  }
  if (params.integer("grad_scaler") == 1 || (device != nullptr && !params.given("grad_scaler") && plan.dtype == Precision::fp16))
    plan.notes_after.push_back(fmt::format("GradScaler: {} optimizer steps wait for the GPU's backward pass (found_inf.item())",
                                           insert_scaler_syncs(graph)));
  const std::size_t data_loading = graph.select(TaskFilter().kind(TaskKind::kernel).phase(Phase::data_loading)).size();
  if (data_loading > 0)
    plan.notes_after.push_back(fmt::format("{} data-loading kernels (DALI, DataLoader: outside autocast) kept", data_loading));
  if (params.integer("casts") == 0) return plan;
  if (!marks_forward(graph)) {
    plan.notes_after.push_back("no casts inserted: the graph marks no forward phase");
    return plan;
  }
  plan.casts_wanted = true;
  plan.cast_like = cast_like_kernels(graph);
  plan.casts = insert_casts(graph, weighted, plan.dtype, plan.launch_call_ns);
  return plan;
}

ScenarioOutcome time_amp(Graph& graph, const ScenarioParams& params, const std::any& any_plan) {
  const auto& plan = std::any_cast<const AmpPlan&>(any_plan);
  ScenarioOutcome outcome;
  outcome.notes = plan.notes_before;
  if (plan.fixed) outcome.notes.push_back(scale_by_factors(graph, *plan.fixed, params));
  outcome.notes.insert(outcome.notes.end(), plan.notes_after.begin(), plan.notes_after.end());
  if (!plan.casts_wanted) return outcome;
  const TimeNs cast_ns = TaskSet(graph, plan.cast_like).median_duration_ns();
  for (TaskId cast : plan.casts) graph.set_duration(cast, cast_ns);
  outcome.notes.push_back(fmt::format("{} {} weight casts inserted (one per run of GEMM or convolution kernels of a "
                                      "forward operator): {} ns on the GPU, {} ns launch call each",
                                      plan.casts.size(), to_string(plan.dtype), cast_ns, plan.launch_call_ns));
  return outcome;
}

}  // namespace

Scenario amp() {
  constexpr double inf = std::numeric_limits<double>::infinity();
  return split_scenario(
      "amp",
      "automatic mixed precision: each kernel as autocast runs it on the traced GPU (peak ratios, half the "
      "bytes), plus weight casts; or the paper's fixed factors",
      {ScenarioParam::text("dtype", "fp16", "the precision autocast runs in: fp16 or bf16"),
       traced_gpu_param("device"),
       ScenarioParam{"grad_scaler", ParamKind::integer, 0,
                     "1: torch.cuda.amp.GradScaler's step waits for the GPU (found_inf.item()) before the "
                     "optimizer step; 0: no scaler",
                     0, 1}
           .automatic("1 for fp16 on the GPU model, else 0"),
       {"casts", ParamKind::integer, 1,
        "1: insert autocast's fp32 -> dtype weight casts in the forward pass; 0: leave them out", 0, 1},
       ScenarioParam{"tensor_core", ParamKind::number, 3,
                     "fixed speed-up of tensor-core kernels (GEMM, convolution): the paper's estimate instead of "
                     "the GPU model",
                     0, inf, true}
           .automatic("from the GPU model (3 when the GPU is unknown)"),
       ScenarioParam{"other", ParamKind::number, 2,
                     "fixed speed-up of every other kernel: the paper's estimate instead of the GPU model", 0, inf,
                     true}
           .automatic("from the GPU model (2 when the GPU is unknown)"),
       ScenarioParam::text("pattern", kTensorCore,
                           "regular expression (RE2) naming the tensor-core kernels of the fixed factors (GEMM, "
                           "convolution)"),
       ScenarioParam::text("exclude", kNotTensorCore,
                           "regular expression (RE2) naming kernels `pattern` matches that are no tensor-core "
                           "kernels (library helpers); empty: none"),
       devices_param()},
      {{"tensor_core", "other"},
       [](Graph& graph, const ScenarioParams& params) { return std::any(restructure_amp(graph, params)); },
       time_amp});
}

}  // namespace daydream::scenarios
