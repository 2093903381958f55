// fused_adam: the optimizer step's many small per-parameter kernels, and the CPU work that
// launches them, replaced by a few fused kernels (apex FusedAdam, torch.optim.Adam(fused=True)),
// as the Daydream paper models FusedAdam. docs/scenarios/fused_adam.md.
//
// Per optimizer step (each CPU range matching "Optimizer\.step", PyTorch's annotation of
// optimizer.step(); zero_grad is not part of it):
//  - removed: the kernels and memsets launched inside the step, their launch calls, and the rest
//    of the step's CPU work on its thread (the Python/ATen overhead of the per-parameter loop).
//    Blocking calls, copies and collectives stay, with their calls;
//  - inserted, per stream the removed kernels ran on: `kernels` fused kernels lasting together
//    factor x (summed duration of the removed kernels), in the place of the first removed one:
//    after the backward's last kernel, before whatever followed the step's kernels. Other GPU
//    dependencies of the removed kernels (waits of later calls, other streams) move to them;
//  - on the step's thread, in the place of the removed work: per fused kernel one framework call
//    (the step's median removed CPU segment: one ATen dispatch) and one launch call (the trace's
//    median launch call). The gaps before and after the step stay; those inside it go with it.
// A trace without an optimizer step, or whose steps launch no kernel, is an Error.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "builtin.hpp"
#include "common/text.hpp"
#include "daydream/analyze.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

constexpr const char* kStepPattern = "Optimizer\\.step";

/// The work of one optimizer step that the fused optimizer replaces.
struct Step {
  std::vector<TaskId> cpu;  ///< CPU segments and CUDA calls, in trace order
  std::map<UnitId, std::vector<TaskId>> kernels;  ///< kernels and memsets per stream, in trace order
  std::size_t kept = 0;     ///< blocking calls and calls launching copies or collectives
};

bool fusable(const Graph& graph, TaskId gpu_task) {
  const TaskKind kind = graph.task(gpu_task).kind;
  return kind == TaskKind::kernel || kind == TaskKind::memset;
}

// The step's CPU tasks on its thread, and the kernels its calls launched.
Step collect_step(const Graph& graph, const RangeWindow& window, const std::vector<TaskId>& thread_tasks) {
  Step step;
  for (TaskId t : tasks_in(graph, thread_tasks, window)) {
    const auto launched = launched_by(graph, t);
    const bool only_kernels =
        std::all_of(launched.begin(), launched.end(), [&](TaskId g) { return fusable(graph, g); });
    if (!only_kernels || (launched.empty() && graph.task(t).blocking)) {
      ++step.kept;
      continue;
    }
    step.cpu.push_back(t);
    for (TaskId g : launched) step.kernels[graph.task(g).unit].push_back(g);
  }
  for (auto& [stream, list] : step.kernels)
    std::sort(list.begin(), list.end(), [&](TaskId a, TaskId b) {
      return std::pair(graph.task(a).recorded_start_ns, a) < std::pair(graph.task(b).recorded_start_ns, b);
    });
  return step;
}

struct Settings {
  double factor = 1;
  std::int64_t kernels = 1;
  TimeNs launch_ns = 0;  ///< one launch call
};

struct Tally {
  std::size_t steps = 0, kernels = 0, calls = 0, cpu_segments = 0, kept = 0, fused = 0;
  TimeNs kernel_ns = 0, cpu_ns = 0, fused_ns = 0;
};

NewTask update_task(const char* name, TaskKind kind, TimeNs duration_ns, std::int32_t iteration) {
  NewTask task;
  task.name = name;
  task.kind = kind;
  task.duration_ns = duration_ns;
  task.iteration = iteration;
  task.phase = Phase::update;
  return task;
}

// What replaces the step on its thread: per fused kernel, one framework call (the step's median
// removed CPU segment: one ATen dispatch) and one launch call, back to back.
Replacement fused_calls(const Graph& graph, const Step& step, std::size_t count, const Settings& settings) {
  std::vector<TimeNs> segments;
  for (TaskId t : step.cpu)
    if (graph.task(t).kind == TaskKind::cpu) segments.push_back(graph.task(t).duration_ns);
  const TimeNs framework_ns = text::median(segments, text::EvenCount::upper);
  const Task& first = graph.task(step.cpu.front());
  Replacement calls{first.unit, {}, 0, false};
  for (std::size_t i = 0; i < count; ++i) {
    if (framework_ns > 0) calls.tasks.push_back(update_task("fused optimizer step", TaskKind::cpu, framework_ns, first.iteration));
    calls.tasks.push_back(
        update_task("cudaLaunchKernel (fused optimizer)", TaskKind::runtime, settings.launch_ns, first.iteration));
  }
  return calls;
}

// What replaces the step's kernels on one stream: `kernels` fused kernels lasting together
// factor x their summed time, at the calibrated stream gap, taking over their other edges.
Replacement fused_kernels(const Graph& graph, UnitId stream, const std::vector<TaskId>& kernels,
                          const Settings& settings, Tally& tally) {
  TimeNs total = 0;
  for (TaskId k : kernels) total += graph.task(k).duration_ns;
  tally.kernels += kernels.size();
  tally.kernel_ns += total;
  Replacement fused{stream, {}, graph.calibration().gpu_gap_ns, true};
  const TimeNs fused_ns = std::llround(static_cast<double>(total) * settings.factor);
  for (std::int64_t j = 0; j < settings.kernels; ++j) {  // parts that add up to fused_ns
    const TimeNs part = fused_ns * (j + 1) / settings.kernels - fused_ns * j / settings.kernels;
    fused.tasks.push_back(update_task("fused_optimizer_kernel (multi_tensor_apply)", TaskKind::kernel, part,
                                      graph.task(kernels.front()).iteration));
    tally.fused_ns += part;
    ++tally.fused;
  }
  return fused;
}

void fuse_step(Graph& graph, const Step& step, const Settings& settings, Tally& tally) {
  std::vector<TaskId> block = step.cpu;
  for (TaskId t : step.cpu) {
    tally.cpu_ns += graph.task(t).duration_ns;
    ++(graph.task(t).kind == TaskKind::cpu ? tally.cpu_segments : tally.calls);
  }
  std::vector<Replacement> replacements{fused_calls(graph, step, step.kernels.size() * settings.kernels, settings)};
  for (const auto& [stream, kernels] : step.kernels) {
    block.insert(block.end(), kernels.begin(), kernels.end());
    replacements.push_back(fused_kernels(graph, stream, kernels, settings, tally));
  }
  const auto inserted = replace_block(graph, block, std::move(replacements));
  const Edge launch{EdgeType::launch, Timing::start_to_start,
                    graph.calibration().launch_latency_ns[static_cast<std::size_t>(TaskKind::kernel)], false};
  // The new CPU tasks come in groups (framework call, launch call) or (launch call): kernel i is
  // launched by the last task of group i.
  const std::size_t group = inserted[0].size() / (step.kernels.size() * settings.kernels);
  std::size_t call = group - 1;
  for (std::size_t s = 1; s < inserted.size(); ++s)
    for (TaskId kernel : inserted[s]) graph.connect(inserted[0][call], kernel, launch), call += group;
  tally.kept += step.kept;
  ++tally.steps;
}

std::string describe(const Tally& t, const Settings& s, std::size_t windows) {
  return fmt::format(
      "{} of {} optimizer steps fused: removed {} kernels/memsets ({:.3f} ms GPU), {} CUDA calls and {} CPU "
      "segments ({:.3f} ms CPU); inserted {} fused kernels ({} per step and stream, factor {:g}: {:.3f} ms GPU) with "
      "their launch calls ({:.1f} us each); kept {} blocking or copy calls",
      t.steps, windows, t.kernels, static_cast<double>(t.kernel_ns) / 1e6, t.calls, t.cpu_segments,
      static_cast<double>(t.cpu_ns) / 1e6, t.fused, s.kernels, s.factor, static_cast<double>(t.fused_ns) / 1e6,
      static_cast<double>(s.launch_ns) / 1e3, t.kept);
}

ScenarioOutcome apply_fused_adam(Graph& graph, const ScenarioParams& params) {
  const Settings settings{params.number("factor"), params.integer("kernels"), median_launch_call_ns(graph)};
  const std::string& step_pattern = params.text("step");
  const auto windows = range_windows(graph, step_pattern);
  if (windows.empty())
    throw Error(fmt::format(
        "the trace has no optimizer step (no CPU range matches '{}'; PyTorch records "
        "'Optimizer.step#...' per optimizer.step() call while profiling; name the range your loop marks the update "
        "with, e.g. step=^optimizer$ for an NVTX range 'optimizer')",
        step_pattern));
  const auto by_unit = tasks_by_unit(graph);
  std::vector<Step> steps;
  for (const RangeWindow& w : windows) {
    Step step = collect_step(graph, w, by_unit[w.unit]);
    if (!step.kernels.empty()) steps.push_back(std::move(step));
  }
  if (steps.empty())
    throw Error(fmt::format("none of the trace's {} optimizer steps launched a kernel (an "
                            "optimizer on the CPU?): nothing to fuse",
                            windows.size()));
  Tally tally;
  for (const Step& step : steps) fuse_step(graph, step, settings, tally);
  return {nullptr, {describe(tally, settings, windows.size())}};
}

}  // namespace

Scenario fused_adam() {
  return {"fused_adam",
          "the optimizer step's per-parameter kernels and their CPU launches replaced by a few fused kernels",
          {{"factor", ParamKind::number, 1,
            "fused kernel time / summed time of the kernels it replaces (1 = the paper's estimate)", 0, 100, true},
           {"kernels", ParamKind::integer, 1, "fused kernels (and launches) per optimizer step and stream", 1, 4096},
           ScenarioParam::text("step", kStepPattern,
                               "regular expression naming the CPU range of one optimizer step (NVTX or "
                               "record_function ranges too)")},
          apply_fused_adam};
}

}  // namespace daydream::scenarios
