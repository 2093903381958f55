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
#include <utility>
#include <vector>

#include "builtin.hpp"
#include "common.hpp"
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
  auto it = std::lower_bound(thread_tasks.begin(), thread_tasks.end(), window.start_ns,
                             [&](TaskId t, TimeNs start) { return graph.task(t).recorded_start_ns < start; });
  for (; it != thread_tasks.end() && window.contains(graph.task(*it).recorded_start_ns); ++it) {
    const TaskId t = *it;
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

/// One stream's fused kernels: where they go and how long each lasts.
struct StreamPlan {
  UnitId stream = 0;
  ChainSpot spot;
  std::vector<TimeNs> durations;
  std::int32_t iteration = -1;
};

// factor x total split into `parts` durations that add up to round(factor x total).
std::vector<TimeNs> split(TimeNs total_ns, double factor, std::int64_t parts) {
  const TimeNs fused = std::llround(static_cast<double>(total_ns) * factor);
  std::vector<TimeNs> out;
  for (std::int64_t j = 0; j < parts; ++j) out.push_back(fused * (j + 1) / parts - fused * j / parts);
  return out;
}

// The framework call and launch call of each fused kernel, in the place of the removed CPU work.
std::vector<TaskId> insert_launches(Graph& graph, const ChainSpot& spot, UnitId thread, std::size_t count,
                                    TimeNs framework_ns, const Settings& settings, std::int32_t iteration) {
  std::vector<TaskId> launches;
  TaskId prev = spot.prev;
  TimeNs delay = spot.delay_in_ns;
  auto add = [&](const char* name, TaskKind kind, TimeNs duration) {
    NewTask task;
    task.name = name;
    task.kind = kind;
    task.unit = thread;
    task.duration_ns = duration;
    task.iteration = iteration;
    task.phase = Phase::update;
    prev = insert_between(graph, task, prev, spot.next, delay, spot.delay_out_ns, spot.release_ns);
    delay = 0;  // the fused calls follow each other back to back
  };
  for (std::size_t i = 0; i < count; ++i) {
    if (framework_ns > 0) add("fused optimizer step", TaskKind::cpu, framework_ns);
    add("cudaLaunchKernel (fused optimizer)", TaskKind::runtime, settings.launch_ns);
    launches.push_back(prev);
  }
  return launches;
}

// GPU edges of the removed kernels other than their stream chain and launches, moved to the
// fused kernels of their stream: into the first, out of the last (the strongest of each kind).
void reattach(Graph& graph, const CrossingEdges& crossing,
              const std::map<UnitId, std::pair<TaskId, TaskId>>& fused) {
  std::map<std::pair<TaskId, TaskId>, Edge> edges;
  auto keep = [&](TaskId from, TaskId to, const Edge& e) {
    auto [it, fresh] = edges.try_emplace({from, to}, e);
    if (!fresh) it->second.delay_ns = std::max(it->second.delay_ns, e.delay_ns);
  };
  auto chain_or_launch = [&](const Graph::EdgeRecord& r) {
    const bool same_unit = graph.task(r.from).unit == graph.task(r.to).unit;
    return r.edge.type == EdgeType::launch || (same_unit && r.edge.type == EdgeType::gpu_sequential);
  };
  for (const auto& r : crossing.in) {
    const auto f = fused.find(graph.task(r.to).unit);
    if (f != fused.end() && is_gpu(graph.task(r.to).kind) && !chain_or_launch(r))
      keep(r.from, f->second.first, r.edge);
  }
  for (const auto& r : crossing.out) {
    const auto f = fused.find(graph.task(r.from).unit);
    if (f != fused.end() && is_gpu(graph.task(r.from).kind) && !chain_or_launch(r))
      keep(f->second.second, r.to, r.edge);
  }
  for (const auto& [ends, edge] : edges) graph.connect(ends.first, ends.second, edge);
}

// The fused kernels of each stream, each launched by its call; returns stream -> (first, last).
std::map<UnitId, std::pair<TaskId, TaskId>> insert_kernels(Graph& graph, const std::vector<StreamPlan>& plans,
                                                           const std::vector<TaskId>& launches, Tally& tally) {
  const Edge launch{EdgeType::launch, Timing::start_to_start,
                    graph.calibration().launch_latency_ns[static_cast<std::size_t>(TaskKind::kernel)], false};
  std::map<UnitId, std::pair<TaskId, TaskId>> fused;
  auto call = launches.begin();
  for (const auto& plan : plans) {
    TaskId prev = plan.spot.prev;
    TimeNs delay = plan.spot.delay_in_ns;
    for (TimeNs duration : plan.durations) {
      NewTask kernel;
      kernel.name = "fused_optimizer_kernel (multi_tensor_apply)";
      kernel.kind = TaskKind::kernel;
      kernel.unit = plan.stream;
      kernel.duration_ns = duration;
      kernel.iteration = plan.iteration;
      kernel.phase = Phase::update;
      const TaskId k = insert_between(graph, kernel, prev, plan.spot.next, delay, plan.spot.delay_out_ns,
                                      plan.spot.release_ns);
      graph.connect(*call++, k, launch);
      if (!fused.count(plan.stream)) fused[plan.stream].first = k;
      fused[plan.stream].second = k;
      prev = k;
      delay = graph.calibration().gpu_gap_ns;  // fused kernels run back to back
      tally.fused_ns += duration;
      ++tally.fused;
    }
  }
  return fused;
}

// Marks the step's work as one block and plans each stream's fused kernels.
std::vector<StreamPlan> plan_step(const Graph& graph, const Step& step, const Settings& settings,
                                  std::vector<char>& in_block, Tally& tally) {
  for (TaskId t : step.cpu) {
    in_block[t] = 1;
    tally.cpu_ns += graph.task(t).duration_ns;
    ++(graph.task(t).kind == TaskKind::cpu ? tally.cpu_segments : tally.calls);
  }
  std::vector<StreamPlan> plans;
  for (const auto& [stream, list] : step.kernels) {
    TimeNs total = 0;
    for (TaskId k : list) {
      in_block[k] = 1;
      total += graph.task(k).duration_ns;
    }
    plans.push_back({stream, {}, split(total, settings.factor, settings.kernels), graph.task(list.front()).iteration});
    tally.kernels += list.size();
    tally.kernel_ns += total;
  }
  for (auto& plan : plans) plan.spot = chain_spot(graph, step.kernels.at(plan.stream).front(), in_block);
  return plans;
}

void fuse_step(Graph& graph, const Step& step, const Settings& settings, Tally& tally) {
  std::vector<char> in_block(graph.num_tasks(), 0);
  const auto plans = plan_step(graph, step, settings, in_block, tally);
  const Task& first = graph.task(step.cpu.front());
  const ChainSpot cpu_spot = chain_spot(graph, step.cpu.front(), in_block);
  const UnitId thread = first.unit;
  const std::int32_t iteration = first.iteration;
  std::vector<TimeNs> segments;  // the step's own CPU segments: one is one ATen dispatch
  for (TaskId t : step.cpu)
    if (graph.task(t).kind == TaskKind::cpu) segments.push_back(graph.task(t).duration_ns);

  std::vector<TaskId> block = step.cpu;
  for (const auto& [stream, list] : step.kernels) block.insert(block.end(), list.begin(), list.end());
  const CrossingEdges crossing = remove_block(graph, block);
  const auto count = plans.size() * static_cast<std::size_t>(settings.kernels);
  const auto launches = insert_launches(graph, cpu_spot, thread, count, median_ns(segments), settings, iteration);
  reattach(graph, crossing, insert_kernels(graph, plans, launches, tally));
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
