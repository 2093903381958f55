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
// A split scenario (ScenarioSplit) in three parts: prepare_steps removes the steps' work (keeping
// each step's place), complete_steps puts `kernels` fused kernels and calls there, and
// time_fused_kernels times them, so a sweep over `factor` fuses once and one over `kernels`
// removes the steps once.
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

/// What complete_steps leaves for time_fused_kernels.
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

  /// The tasks that go: the CPU work, then each stream's kernels.
  std::vector<TaskId> block() const {
    std::vector<TaskId> tasks = cpu;
    for (const auto& [stream, launched] : kernels) tasks.insert(tasks.end(), launched.begin(), launched.end());
    return tasks;
  }
};

/// What a step's replacement is made of, read before anything changes.
struct StepShape {
  UnitId thread = 0;
  std::int32_t iteration = -1;  ///< of the step's first CPU task
  TimeNs framework_ns = 0;      ///< the step's median removed CPU segment: one ATen dispatch
  std::vector<std::pair<UnitId, std::int32_t>> streams;  ///< each stream, with its first kernel's iteration
  std::vector<TimeNs> replaced_ns;                        ///< per stream: the summed time of its kernels
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

StepShape shape_of(Graph& graph, const Step& step) {  // TaskSet reads through a mutable graph
  const Task& first = graph.task(step.cpu.front());
  StepShape shape{first.unit, first.iteration,
                  TaskSet(graph, step.cpu).filter(TaskFilter().kind(TaskKind::cpu)).median_duration_ns(), {}, {}};
  for (const auto& [stream, kernels] : step.kernels) {
    shape.streams.emplace_back(stream, graph.task(kernels.front()).iteration);
    shape.replaced_ns.push_back(TaskSet(graph, kernels).total_duration_ns());
  }
  return shape;
}

/// The units a step's replacement goes to: its thread, then each stream its kernels ran on.
std::vector<UnitId> units_of(const StepShape& shape) {
  std::vector<UnitId> units{shape.thread};
  for (const auto& stream : shape.streams) units.push_back(stream.first);
  return units;
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
std::vector<Replacement> fused_work(const Graph& graph, const StepShape& shape, const Settings& s) {
  std::vector<Replacement> work{{shape.thread, {}, 0, false}};
  for (const auto& [stream, iteration] : shape.streams) {
    Replacement fused{stream, {}, graph.calibration().gpu_gap_ns, true};
    for (std::int64_t j = 0; j < s.kernels; ++j) {
      fused.tasks.push_back(
          NewTask::of("fused_optimizer_kernel (multi_tensor_apply)", TaskKind::kernel, 0, iteration, Phase::update));
      if (shape.framework_ns > 0)
        work[0].tasks.push_back(
            NewTask::of("fused optimizer step", TaskKind::cpu, shape.framework_ns, shape.iteration, Phase::update));
      work[0].tasks.push_back(NewTask::of("cudaLaunchKernel (fused optimizer)", TaskKind::runtime, s.launch_ns,
                                          shape.iteration, Phase::update));
    }
    work.push_back(std::move(fused));
  }
  return work;
}

/// Whether every step can be removed before any replacement goes in: no edge joins two steps'
/// blocks, and no task outside them is joined to two steps' blocks. Each step's removal and
/// replacement then changes only its own block, the tasks joined to it and the new tasks, so
/// clearing every step first changes each task's edges as fusing them one after another does.
bool steps_apart(const Graph& graph, const std::vector<std::vector<TaskId>>& blocks) {
  constexpr std::uint32_t kNobody = 0xffffffffu;
  std::vector<std::uint32_t> in_step(graph.num_tasks(), kNobody), next_to(graph.num_tasks(), kNobody);
  for (std::uint32_t k = 0; k < blocks.size(); ++k)
    for (TaskId t : blocks[k]) in_step[t] = k;
  const auto apart = [&](TaskId outside, std::uint32_t k) {
    if (in_step[outside] == k) return true;  // within the block
    if (in_step[outside] != kNobody || (next_to[outside] != kNobody && next_to[outside] != k)) return false;
    next_to[outside] = k;
    return true;
  };
  for (std::uint32_t k = 0; k < blocks.size(); ++k)
    for (TaskId t : blocks[k]) {
      const bool out_apart = graph.visit_successors(t, [&](TaskId s, const Edge&) { return apart(s, k); });
      if (!out_apart || !graph.visit_predecessors(t, [&](TaskId p, const Edge&) { return apart(p, k); })) return false;
    }
  return true;
}

/// ScenarioSplit::prepare's plan: the steps cleared, each with its place kept, or (where steps
/// are not apart) the steps as found, for complete_steps to fuse one by one.
struct Prepared {
  std::vector<Step> steps;
  std::vector<StepShape> shapes;       // per step
  std::vector<ClearedBlock> cleared;   // per step, where cleared (units_of its shape)
  Tally tally;                         // all but the fused kernels, which depend on `kernels`
  std::size_t steps_traced = 0;
  TimeNs launch_ns = 0;
};

Prepared prepare_steps(Graph& graph, const ScenarioParams& params) {
  Prepared p;
  p.launch_ns = median_launch_call_ns(graph);
  const RangeTasks ranges(graph, params.text("step"));
  if (ranges.windows().empty())
    throw Error(fmt::format(
        "the trace has no optimizer step (no CPU range matches '{}'; PyTorch records "
        "'Optimizer.step#...' per optimizer.step() call while profiling; name the range your loop marks the update "
        "with, e.g. step=^optimizer$ for an NVTX range 'optimizer')",
        params.text("step")));
  for (const RangeWindow& w : ranges.windows()) p.steps.push_back(collect_step(graph, ranges.tasks(w)));
  std::erase_if(p.steps, [](const Step& step) { return step.kernels.empty(); });
  if (p.steps.empty())
    throw Error(fmt::format("none of the trace's {} optimizer steps launched a kernel (an "
                            "optimizer on the CPU?): nothing to fuse",
                            ranges.windows().size()));
  p.steps_traced = ranges.windows().size();
  Tally& tally = p.tally;
  for (const Step& step : p.steps) {  // all read before any change
    p.shapes.push_back(shape_of(graph, step));
    for (TaskId t : step.cpu) ++(graph.task(t).kind == TaskKind::cpu ? tally.cpu_segments : tally.calls);
    tally.cpu_ns += TaskSet(graph, step.cpu).total_duration_ns();
    tally.kept += step.kept;
    ++tally.steps;
    for (const auto& [stream, kernels] : step.kernels) tally.kernels += kernels.size();
    for (TimeNs ns : p.shapes.back().replaced_ns) tally.kernel_ns += ns;
  }
  std::vector<std::vector<TaskId>> blocks;
  for (const Step& step : p.steps) blocks.push_back(step.block());
  if (!steps_apart(graph, blocks)) return p;
  for (std::size_t k = 0; k < p.steps.size(); ++k) p.cleared.push_back(clear_block(graph, blocks[k], units_of(p.shapes[k]), true));
  return p;
}

// Each step's CPU work and kernels replaced by the fused calls and kernels: in the places
// prepare_steps cleared, or step by step where it cleared none.
FusePlan complete_steps(Graph& graph, const ScenarioParams& params, const Prepared& p) {
  FusePlan plan{{}, p.tally, p.steps_traced, {params.integer("kernels"), p.launch_ns}};
  for (std::size_t k = 0; k < p.steps.size(); ++k) {
    std::vector<Replacement> work = fused_work(graph, p.shapes[k], plan.settings);
    for (std::size_t s = 1; s < work.size(); ++s) plan.tally.fused += work[s].tasks.size();
    const auto inserted = p.cleared.empty() ? replace_block(graph, p.steps[k].block(), std::move(work))
                                            : fill_block(graph, p.cleared[k], std::move(work));
    std::vector<TaskId> launches;  // the launch calls, one per fused kernel, in order
    for (TaskId t : inserted[0])
      if (graph.task(t).kind == TaskKind::runtime) launches.push_back(t);
    auto launch = launches.begin();
    for (std::size_t s = 1; s < inserted.size(); ++s) {
      plan.fused.push_back({inserted[s], p.shapes[k].replaced_ns[s - 1]});
      for (TaskId kernel : inserted[s]) connect_launch(graph, *launch++, kernel);
    }
  }
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

// Retimed by `factor`; prepared once for every `kernels` (the steps go the same way).
ScenarioSplit fused_split() {
  ScenarioSplit split;
  split.retimed = {"factor"};
  split.retime = time_fused_kernels;
  split.completed = {"kernels"};
  split.prepare = [](Graph& graph, const ScenarioParams& params) { return std::any(prepare_steps(graph, params)); };
  split.complete = [](Graph& graph, const ScenarioParams& params, const std::any& prepared) {
    return std::any(complete_steps(graph, params, std::any_cast<const Prepared&>(prepared)));
  };
  return split;
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
      fused_split());
}

}  // namespace daydream::scenarios
