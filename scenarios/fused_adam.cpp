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
// A split scenario (ScenarioSplit): fuse_steps replaces the steps, time_fused_kernels times the
// fused kernels, so a sweep over `factor` fuses once.
#include <fmt/format.h>

#include <any>
#include <cmath>
#include <map>
#include <vector>

#include "builtin.hpp"
#include "daydream/analyze.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

constexpr const char* kStepPattern = "Optimizer\\.step";

struct Settings {
  std::int64_t kernels = 1;
  TimeNs launch_ns = 0;  ///< one launch call
};

struct Tally {
  std::size_t steps = 0, kernels = 0, calls = 0, cpu_segments = 0, kept = 0, fused = 0;
  TimeNs kernel_ns = 0, cpu_ns = 0;
};

/// The fused kernels of one step on one stream (0 ns until time_fused_kernels gives them factor x
/// the time of the kernels they replace).
struct FusedKernels {
  std::vector<TaskId> kernels;
  TimeNs replaced_ns = 0;
};

/// What fuse_steps leaves for time_fused_kernels.
struct FusePlan {
  std::vector<FusedKernels> fused;
  Tally tally;
  std::size_t steps_traced = 0;
  Settings settings;
};

/// The work of one optimizer step that the fused optimizer replaces: its CPU tasks on its thread
/// that launch only kernels and memsets, or nothing without waiting (gpu_use), in trace order;
/// those kernels per stream; how many of its calls stay (blocking calls, copies, collectives).
struct Step {
  std::vector<TaskId> cpu;
  std::map<UnitId, std::vector<TaskId>> kernels;
  std::size_t kept = 0;
};

Step collect_step(const Graph& graph, const std::vector<TaskId>& tasks) {
  Step step;
  for (TaskId t : tasks) {
    const GpuUse use = gpu_use(graph, t);
    if (use == GpuUse::none || use == GpuUse::kernels) step.cpu.push_back(t);
    else ++step.kept;
  }
  step.kernels = group_by_unit(graph, launched_by(graph, step.cpu));
  return step;
}

/// Part j of `total` ns split into `parts` whole-ns parts that add up to it: floor(total x k /
/// parts) - floor(total x (k-1) / parts), computed as q k + r k / parts so that no product
/// passes int64 (total x parts may).
TimeNs part(TimeNs total, std::int64_t j, std::int64_t parts) {
  const TimeNs q = total / parts, r = total % parts;
  const auto upto = [&](std::int64_t k) { return q * k + r * k / parts; };
  return upto(j + 1) - upto(j);
}

// What replaces the step: on each stream its kernels ran on, `kernels` fused kernels (timed by
// time_fused_kernels; at the calibrated stream gap, taking over their other edges); on its
// thread, per fused kernel one framework call (the step's median removed CPU segment: one ATen
// dispatch) and one launch call, back to back. Kernel i is launched by call i.
std::vector<Replacement> fused_work(Graph& graph, const Step& step, const Settings& s, Tally& tally) {
  const TimeNs framework_ns = TaskSet(graph, step.cpu).filter(TaskFilter().kind(TaskKind::cpu)).median_duration_ns();
  const Task& first = graph.task(step.cpu.front());
  std::vector<Replacement> work{{first.unit, {}, 0, false}};
  for (const auto& [stream, kernels] : step.kernels) {
    Replacement fused{stream, {}, graph.calibration().gpu_gap_ns, true};
    for (std::int64_t j = 0; j < s.kernels; ++j) {
      fused.tasks.push_back(NewTask::of("fused_optimizer_kernel (multi_tensor_apply)", TaskKind::kernel, 0,
                                        graph.task(kernels.front()).iteration, Phase::update));
      if (framework_ns > 0)
        work[0].tasks.push_back(NewTask::of("fused optimizer step", TaskKind::cpu, framework_ns, first.iteration, Phase::update));
      work[0].tasks.push_back(NewTask::of("cudaLaunchKernel (fused optimizer)", TaskKind::runtime, s.launch_ns,
                                          first.iteration, Phase::update));
    }
    tally.fused += fused.tasks.size();
    work.push_back(std::move(fused));
    tally.kernels += kernels.size();
  }
  return work;
}

// The step's CPU work and kernels replaced by the fused calls and kernels.
void fuse_step(Graph& graph, const Step& step, FusePlan& plan) {
  Tally& tally = plan.tally;
  std::vector<TaskId> block = step.cpu;
  for (const auto& [stream, kernels] : step.kernels) block.insert(block.end(), kernels.begin(), kernels.end());
  for (TaskId t : step.cpu) ++(graph.task(t).kind == TaskKind::cpu ? tally.cpu_segments : tally.calls);
  tally.cpu_ns += TaskSet(graph, step.cpu).total_duration_ns();
  tally.kept += step.kept;
  ++tally.steps;
  const std::size_t first = plan.fused.size();  // replacement s > 0: the fused kernels of stream s - 1
  for (const auto& [stream, kernels] : step.kernels) {
    plan.fused.push_back({{}, TaskSet(graph, kernels).total_duration_ns()});
    tally.kernel_ns += plan.fused.back().replaced_ns;
  }
  const auto inserted = replace_block(graph, block, fused_work(graph, step, plan.settings, tally));
  std::vector<TaskId> launches;  // the launch calls, one per fused kernel, in order
  for (TaskId t : inserted[0])
    if (graph.task(t).kind == TaskKind::runtime) launches.push_back(t);
  auto launch = launches.begin();
  for (std::size_t s = 1; s < inserted.size(); ++s) {
    plan.fused[first + s - 1].kernels = inserted[s];
    for (TaskId kernel : inserted[s]) connect_launch(graph, *launch++, kernel);
  }
}

FusePlan fuse_steps(Graph& graph, const ScenarioParams& params) {
  FusePlan plan;
  plan.settings = {params.integer("kernels"), median_launch_call_ns(graph)};
  const RangeTasks ranges(graph, params.text("step"));
  if (ranges.windows().empty())
    throw Error(fmt::format(
        "the trace has no optimizer step (no CPU range matches '{}'; PyTorch records "
        "'Optimizer.step#...' per optimizer.step() call while profiling; name the range your loop marks the update "
        "with, e.g. step=^optimizer$ for an NVTX range 'optimizer')",
        params.text("step")));
  std::vector<Step> steps;  // all read before any change
  for (const RangeWindow& w : ranges.windows()) steps.push_back(collect_step(graph, ranges.tasks(w)));
  std::erase_if(steps, [](const Step& step) { return step.kernels.empty(); });
  if (steps.empty())
    throw Error(fmt::format("none of the trace's {} optimizer steps launched a kernel (an "
                            "optimizer on the CPU?): nothing to fuse",
                            ranges.windows().size()));
  plan.steps_traced = ranges.windows().size();
  for (const Step& step : steps) fuse_step(graph, step, plan);
  return plan;
}

// Each stream's fused kernels of a step last together factor x the summed time of the kernels
// they replace, in whole-ns parts that add up to it.
ScenarioOutcome time_fused_kernels(Graph& graph, const ScenarioParams& params, const std::any& any_plan) {
  const auto& plan = std::any_cast<const FusePlan&>(any_plan);
  const double factor = params.number("factor");
  TimeNs fused_total_ns = 0;
  for (const FusedKernels& f : plan.fused) {
    const TimeNs fused_ns = std::llround(static_cast<double>(f.replaced_ns) * factor);
    const auto parts = static_cast<std::int64_t>(f.kernels.size());
    for (std::int64_t j = 0; j < parts; ++j) graph.set_duration(f.kernels[std::size_t(j)], part(fused_ns, j, parts));
    fused_total_ns += fused_ns;
  }
  const Tally& t = plan.tally;
  return {nullptr,
          {fmt::format("{} of {} optimizer steps fused: removed {} kernels/memsets ({:.3f} ms GPU), {} CUDA calls and "
                       "{} CPU segments ({:.3f} ms CPU); inserted {} fused kernels ({} per step and stream, factor "
                       "{:g}: {:.3f} ms GPU) with their launch calls ({:.1f} us each); kept {} blocking or copy calls",
                       t.steps, plan.steps_traced, t.kernels, static_cast<double>(t.kernel_ns) / 1e6, t.calls,
                       t.cpu_segments, static_cast<double>(t.cpu_ns) / 1e6, t.fused, plan.settings.kernels, factor,
                       static_cast<double>(fused_total_ns) / 1e6, static_cast<double>(plan.settings.launch_ns) / 1e3,
                       t.kept)}};
}

}  // namespace

Scenario fused_adam() {
  return split_scenario(
      "fused_adam", "the optimizer step's per-parameter kernels and their CPU launches replaced by a few fused kernels",
      {{"factor", ParamKind::number, 1,
        "fused kernel time / summed time of the kernels it replaces (1 = the paper's estimate)", 0, 100, true},
       {"kernels", ParamKind::integer, 1, "fused kernels (and launches) per optimizer step and stream", 1, 4096},
       ScenarioParam::text("step", kStepPattern,
                           "regular expression naming the CPU range of one optimizer step (NVTX or "
                           "record_function ranges too)")},
      {{"factor"}, [](Graph& graph, const ScenarioParams& params) { return std::any(fuse_steps(graph, params)); },
       time_fused_kernels});
}

}  // namespace daydream::scenarios
