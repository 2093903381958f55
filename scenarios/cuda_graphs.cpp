// cuda_graphs: the training step captured once and replayed as a CUDA graph (torch.cuda.graph,
// CUDAGraph.replay()): the CPU no longer runs the framework code and launches every kernel, it
// launches one graph. docs/scenarios/cuda_graphs.md.
//
// Per occurrence of the `region` range (default "ProfilerStep#": the whole training step) on its
// thread:
//  - captured: the CPU work inside the region's time on every operator thread of its process
//    (the autograd thread's too; not another process's, not another rank's in a job), except
//    data loading (phase data_loading) and what a capture cannot hold: calls that wait for the
//    GPU without launching (synchronizations, waits for copies) and calls launching copies to or
//    from host memory, which stay with their copies. Captured CPU tasks are removed: a replayed
//    graph runs no Python/ATen code and makes no launch calls;
//  - the region is cut at each task of its thread that is not captured (a program captures the
//    stretches between them); each stretch with GPU work becomes one graph: one cudaGraphLaunch
//    call (`launch` long) in its place on the thread, launching the first GPU task of each stream
//    (calibrated launch latency). Inside a graph, GPU tasks follow each other on their stream at
//    the calibrated stream gap; cross-stream edges stay;
//  - the launch queue is finite: a graph launch waits until the graph its thread launched
//    `in_flight` launches earlier has finished (default 1: as with one synchronization per
//    step). Captured calls that waited for a full launch queue stay as zero-time ordering points,
//    so the CPU never runs further ahead of the GPU than it did in the trace either.
// A split scenario (ScenarioSplit): capture_regions makes the graphs, time_launches gives their
// launch calls the `launch` time, so a sweep over `launch` captures once.
#include <fmt/format.h>

#include <algorithm>
#include <any>
#include <map>
#include <optional>
#include <vector>

#include "builtin.hpp"
#include "daydream/analyze.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

struct Tally {
  std::size_t regions = 0, graphs = 0, calls = 0, cpu_segments = 0, cpu_only = 0, blocking = 0, host_copies = 0;
  std::size_t data_loading = 0, queue_waits = 0;
  TimeNs cpu_ns = 0;
};

// Outside the capture: data loading, waits without a launch, launches of host copies (counted).
bool left_out(const Graph& graph, TaskId t, Tally& tally) {
  if (graph.task(t).phase == Phase::data_loading) return ++tally.data_loading, true;
  const GpuUse use = gpu_use(graph, t);
  if (use == GpuUse::wait) return ++tally.blocking, true;
  if (use == GpuUse::host_copy) return ++tally.host_copies, true;
  return false;
}

// The stretches of a region that become one graph each (the model above). RangeTasks skips what an
// overlapping region on another thread already captured (removed).
std::vector<std::vector<TaskId>> pieces_of(const Graph& graph, const RangeTasks& regions, const RangeWindow& window,
                                           Tally& tally) {
  std::vector<std::vector<TaskId>> pieces;
  std::vector<TimeNs> starts;  // of each piece on the region's thread
  bool open = false;
  for (TaskId t : regions.tasks(window)) {
    const bool cut = left_out(graph, t, tally);
    if (!cut && !open) pieces.emplace_back(), starts.push_back(graph.task(t).recorded_start_ns);
    if (!cut) pieces.back().push_back(t);
    open = !cut;
  }
  const Unit& home = graph.units()[window.unit];
  for (UnitId u = 0; u < graph.units().size() && !pieces.empty(); ++u) {
    const Unit& unit = graph.units()[u];
    if (u == window.unit || unit.kind != UnitKind::cpu_thread || unit.background) continue;
    if (unit.rank != home.rank || unit.process != home.process) continue;  // a graph holds one process's work
    for (TaskId t : regions.tasks(window, u)) {
      const auto after = std::upper_bound(starts.begin(), starts.end(), graph.task(t).recorded_start_ns);
      if (!left_out(graph, t, tally)) pieces[std::max<std::ptrdiff_t>(after - starts.begin() - 1, 0)].push_back(t);
    }
  }
  return pieces;
}

/// A captured piece: its graph's launch call and the last GPU task of each stream of the graph.
struct Captured {
  TaskId launch = kNoTask;
  std::vector<TaskId> tails;
};

// One piece becomes one graph: one cudaGraphLaunch in the place of its CPU work (before a kept
// queue wait that heads it). Queue waits (waits_for_gpu) stay: removing one would bridge its wait
// onto every later launch of the piece; kept, it keeps the CPU as far behind the GPU as it was.
std::optional<Captured> capture(Graph& graph, const std::vector<TaskId>& piece, Tally& tally) {
  const auto streams = group_by_unit(graph, launched_by(graph, piece));
  if (streams.empty()) return ++tally.cpu_only, std::nullopt;
  std::vector<TaskId> block, waits;
  for (TaskId t : piece) (waits_for_gpu(graph, t) ? waits : block).push_back(t);
  for (TaskId t : block) ++(graph.task(t).kind == TaskKind::runtime ? tally.calls : tally.cpu_segments);
  tally.cpu_ns += TaskSet(graph, piece).total_duration_ns();
  tally.queue_waits += waits.size();
  const Task& anchor = graph.task(piece.front());
  // 0 ns until time_launches gives it the `launch` parameter's time.
  NewTask call = NewTask::of("cudaGraphLaunch", TaskKind::runtime, 0, anchor.iteration, anchor.phase);
  call.unit = anchor.unit;
  // Edges inside the piece lose their delays; remove_block does so for the block itself, so only
  // a piece with kept queue waits needs the pass over all of it.
  if (!waits.empty()) zero_inner_delays(graph, piece);
  const ChainSpot at = chain_spot(graph, piece.front(), task_mask(graph, block));
  remove_block(graph, block);
  for (TaskId t : waits) graph.set_duration(t, 0), graph.rename(t, "launch-queue wait (captured by cuda_graphs)");
  const TaskId launch = insert_between(graph, call, at.prev, at.next, at.delay_in_ns, at.delay_out_ns, at.release_ns);
  return Captured{launch, launch_graph(graph, launch, streams)};
}

// The finite launch queue: a graph launch waits for the graph its thread launched `in_flight`
// launches earlier. Each thread has its own queue: in a job graph, one rank's launches never wait
// for another rank's graphs (they meet only at their collectives). `graphs` is in launch order on
// each thread.
void throttle(Graph& graph, const std::vector<Captured>& graphs, std::size_t in_flight) {
  std::map<UnitId, std::vector<const Captured*>> by_thread;
  for (const Captured& g : graphs) by_thread[graph.task(g.launch).unit].push_back(&g);
  for (const auto& [thread, launched] : by_thread) {
    for (std::size_t j = in_flight; j < launched.size(); ++j) {
      for (TaskId tail : launched[j - in_flight]->tails)
        graph.connect(tail, launched[j]->launch, {EdgeType::sync, Timing::finish_to_start, 0, false});
      graph.set_blocking(launched[j]->launch, true);
    }
  }
}

RangeTasks regions_of(const Graph& graph, const std::string& region) {
  try {
    RangeTasks regions(graph, region);
    if (!regions.windows().empty()) return regions;
  } catch (const Error& e) {
    throw Error(fmt::format("parameter 'region': {}", e.what()));
  }
  throw Error(fmt::format("no CPU range of the trace matches region '{}' (the default "
                          "'ProfilerStep#' needs a trace recorded with profiler.step() calls)",
                          region));
}

std::string describe(const Tally& t, const std::string& region, TimeNs launch_ns) {
  return fmt::format(
      "region '{}': {} occurrences captured as {} graphs (one cudaGraphLaunch of {:.1f} us each); removed {} CUDA "
      "calls and {} CPU segments ({:.3f} ms CPU); left outside the capture: {} blocking calls, {} calls launching "
      "host copies, {} data-loading tasks; {} stretches without GPU work left as they were; {} captured launch calls "
      "that waited for a full launch queue kept as zero-time ordering points",
      region, t.regions, t.graphs, static_cast<double>(launch_ns) / 1e3, t.calls, t.cpu_segments,
      static_cast<double>(t.cpu_ns) / 1e6, t.blocking, t.host_copies, t.data_loading, t.cpu_only, t.queue_waits);
}

/// What restructure leaves for retime: the graph launches it inserted (0 ns until retimed).
struct CapturePlan {
  std::vector<TaskId> launches;
  Tally tally;
};

CapturePlan capture_regions(Graph& graph, const ScenarioParams& params) {
  const std::string& region = params.text("region");
  const RangeTasks regions = regions_of(graph, region);
  CapturePlan plan;
  std::vector<Captured> graphs;
  for (const RangeWindow& window : regions.windows())
    for (const auto& piece : pieces_of(graph, regions, window, plan.tally))
      if (auto captured = capture(graph, piece, plan.tally)) graphs.push_back(std::move(*captured));
  plan.tally.regions = regions.windows().size();
  plan.tally.graphs = graphs.size();
  if (graphs.empty())
    throw Error(fmt::format("the {} occurrences of region '{}' launch no GPU work to capture",
                            regions.windows().size(), region));
  throttle(graph, graphs, static_cast<std::size_t>(params.integer("in_flight")));
  for (const Captured& g : graphs) plan.launches.push_back(g.launch);
  return plan;
}

ScenarioOutcome time_launches(Graph& graph, const ScenarioParams& params, const std::any& plan) {
  const auto& capture = std::any_cast<const CapturePlan&>(plan);
  const auto launch_ns = static_cast<TimeNs>(params.number("launch"));
  for (TaskId launch : capture.launches) graph.set_duration(launch, launch_ns);
  return {nullptr, {describe(capture.tally, params.text("region"), launch_ns)}};
}

}  // namespace

Scenario cuda_graphs() {
  return split_scenario(
      "cuda_graphs", "the step replayed as CUDA graphs: no per-kernel launches or framework work on the CPU",
      {ScenarioParam::text("region", "ProfilerStep#",
                           "regular expression naming the CPU range captured as a graph (data loading excluded)"),
       {"launch", ParamKind::duration, 10'000, "CPU time of one cudaGraphLaunch call", 0, 1e9},
       {"in_flight", ParamKind::integer, 1,
        "graphs launched and not yet finished when a cudaGraphLaunch blocks (1: one sync per step)", 1, 1024}},
      {{"launch"}, capture_regions, time_launches});
}

}  // namespace daydream::scenarios
