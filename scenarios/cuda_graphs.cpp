// cuda_graphs: the training step captured once and replayed as a CUDA graph (torch.cuda.graph,
// CUDAGraph.replay()): the CPU no longer runs the framework code and launches every kernel, it
// launches one graph. docs/scenarios/cuda_graphs.md.
//
// Per occurrence of the `region` range (default "ProfilerStep#": the whole training step) on its
// thread:
//  - captured: the CPU work inside the region's time on every operator thread (the autograd
//    thread's too), except data loading (phase data_loading) and what a capture cannot hold:
//    calls that wait for the GPU without launching (synchronizations, waits for copies) and calls
//    launching copies to or from host memory, which stay with their copies. Captured CPU tasks are
//    removed: a replayed graph runs no Python/ATen code and makes no launch calls;
//  - the region is cut at each task of its thread that is not captured (a program captures the
//    stretches between them); each stretch with GPU work becomes one graph: one cudaGraphLaunch
//    call (`launch` long) in its place on the thread, launching the first GPU task of each stream
//    (calibrated launch latency). Inside a graph, GPU tasks follow each other on their stream at
//    the calibrated stream gap; cross-stream edges stay;
//  - the launch queue is finite: a graph launch waits until the graph launched `in_flight`
//    launches earlier has finished (default 1: as with one synchronization per step). Captured
//    calls that waited for a full launch queue stay as zero-time ordering points, so the CPU never
//    runs further ahead of the GPU than it did in the trace either.
// A region range the trace lacks, or a region without GPU work, is an Error.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "builtin.hpp"
#include "daydream/analyze.hpp"
#include "daydream/transform.hpp"
#include "daydream/error.hpp"

namespace daydream::scenarios {
namespace {

/// A stretch of the region that becomes one graph: its captured CPU tasks (the region thread's
/// first, in trace order, then other threads').
struct Piece {
  std::vector<TaskId> cpu;
  TimeNs start_ns = 0;  ///< recorded start of its first task on the region's thread
};

struct Tally {
  std::size_t regions = 0, graphs = 0, calls = 0, cpu_segments = 0, cpu_only = 0;
  std::size_t blocking = 0, host_copies = 0, data_loading = 0, queue_waits = 0;
  TimeNs cpu_ns = 0;
};

bool device_copy(std::string_view name) {
  return name.find("DtoD") != std::string_view::npos || name.find("Device -> Device") != std::string_view::npos ||
         name.find("PtoP") != std::string_view::npos;
}

// Outside the capture: data loading, waits without a launch, launches of host copies (counted).
bool left_out(const Graph& graph, TaskId t, Tally& tally) {
  if (graph.task(t).phase == Phase::data_loading) {
    ++tally.data_loading;
    return true;
  }
  const auto launched = launched_by(graph, t);
  if (launched.empty() && graph.task(t).blocking) {
    ++tally.blocking;
    return true;
  }
  const bool host_copy = std::any_of(launched.begin(), launched.end(), [&](TaskId g) {
    return graph.task(g).kind == TaskKind::memcpy && !device_copy(graph.name(g));
  });
  if (host_copy) ++tally.host_copies;
  return host_copy;
}

// The pieces of the region's own thread: cut at every task left out.
std::vector<Piece> own_pieces(const Graph& graph, const RangeWindow& window, const std::vector<TaskId>& thread_tasks,
                              Tally& tally) {
  std::vector<Piece> pieces;
  bool open = false;
  // tasks_in skips those an overlapping region on another thread already captured (removed).
  for (TaskId t : tasks_in(graph, thread_tasks, window)) {
    if (left_out(graph, t, tally)) {
      open = false;
      continue;
    }
    if (!open) pieces.push_back({{}, graph.task(t).recorded_start_ns});
    open = true;
    pieces.back().cpu.push_back(t);
  }
  return pieces;
}

// The region's pieces; other operator threads' captured tasks join the piece running when they
// start (the first one when they start before it).
std::vector<Piece> pieces_of(const Graph& graph, const RangeWindow& window,
                             const std::vector<std::vector<TaskId>>& by_unit, Tally& tally) {
  std::vector<Piece> pieces = own_pieces(graph, window, by_unit[window.unit], tally);
  if (pieces.empty()) return pieces;
  auto running_at = [&](TimeNs start) -> Piece& {
    auto next = std::upper_bound(pieces.begin(), pieces.end(), start,
                                 [](TimeNs s, const Piece& p) { return s < p.start_ns; });
    return next == pieces.begin() ? *next : *std::prev(next);
  };
  for (UnitId u = 0; u < graph.units().size(); ++u) {
    const Unit& unit = graph.units()[u];
    if (u == window.unit || unit.kind != UnitKind::cpu_thread || unit.background) continue;
    for (TaskId t : tasks_in(graph, by_unit[u], window))
      if (!left_out(graph, t, tally)) running_at(graph.task(t).recorded_start_ns).cpu.push_back(t);
  }
  return pieces;
}

/// The GPU work of a piece: its tasks, and the first and last of each stream (trace order).
struct GpuWork {
  std::vector<TaskId> tasks;
  std::map<UnitId, TaskId> first, last;
};

GpuWork gpu_work_of(const Graph& graph, const Piece& piece) {
  GpuWork work;
  auto start = [&](TaskId t) { return std::pair(graph.task(t).recorded_start_ns, t); };
  for (TaskId call : piece.cpu)
    for (TaskId g : launched_by(graph, call)) {
      work.tasks.push_back(g);
      const UnitId stream = graph.task(g).unit;
      auto [first, fresh] = work.first.try_emplace(stream, g);
      if (!fresh && start(g) < start(first->second)) first->second = g;
      auto [last, new_stream] = work.last.try_emplace(stream, g);
      if (!new_stream && start(last->second) < start(g)) last->second = g;
    }
  return work;
}

/// A captured piece: its graph's launch call and the last GPU task of each stream of the graph.
struct Captured {
  TaskId launch = kNoTask;
  std::vector<TaskId> tails;
};

// A captured call that waited for a full launch queue (a sync edge from a GPU task, see
// docs/graph.md). It stays as a zero-time ordering point: removing it would bridge its wait onto
// every later launch of the piece (as many edges as launches), and keeping the wait keeps the
// CPU after the graph as far behind the GPU as it was.
bool waited_for_queue(const Graph& graph, TaskId t) {
  for (const auto& p : graph.predecessors(t))
    if (graph.units()[graph.task(p.task).unit].kind == UnitKind::gpu_stream) return true;
  return false;
}

// Edges among the piece's CPU tasks lose their delays: the gaps inside the captured work go with it.
void zero_inner_delays(Graph& graph, const std::vector<TaskId>& tasks, const std::vector<char>& member) {
  for (TaskId t : tasks)
    for (const auto& s : graph.successors(t))
      if (member[s.task]) graph.edge(t, s.task).delay_ns = 0;
}

// Where the graph launch goes: in the place of the piece's first task on the region's thread.
ChainSpot launch_spot(const Graph& graph, TaskId anchor, const std::vector<char>& in_block) {
  if (in_block[anchor]) return chain_spot(graph, anchor, in_block);
  ChainSpot spot;  // the anchor is a kept queue wait: the launch goes right before it
  spot.next = anchor;
  spot.release_ns = graph.task(anchor).release_ns;
  for (const auto& p : graph.predecessors(anchor))
    if (p.edge.type == EdgeType::cpu_sequential) spot.prev = p.task, spot.delay_in_ns = p.edge.delay_ns;
  return spot;
}

// The graph's launch call, launching the first task of each stream (calibrated latency); inside
// the graph a stream runs its tasks back to back (calibrated gap).
void launch_graph(Graph& graph, TaskId call, const GpuWork& work) {
  const auto& latency = graph.calibration().launch_latency_ns;
  for (const auto& [stream, root] : work.first) {
    const TaskKind kind = graph.task(root).kind;
    graph.connect(call, root, {kind == TaskKind::communication ? EdgeType::communication : EdgeType::launch,
                               Timing::start_to_start, latency[static_cast<std::size_t>(kind)], false});
  }
  std::vector<char> in_graph(graph.num_tasks(), 0);
  for (TaskId g : work.tasks) in_graph[g] = 1;
  for (TaskId g : work.tasks)
    for (const auto& p : graph.predecessors(g))
      if (p.edge.type == EdgeType::gpu_sequential && in_graph[p.task] && graph.task(p.task).unit == graph.task(g).unit)
        graph.edge(p.task, g).delay_ns = graph.calibration().gpu_gap_ns;
}

// Removes the piece's CPU work, except its queue waits, which become zero-time ordering points;
// edges among all of it lose their delays. Returns where the graph launch goes.
ChainSpot strip(Graph& graph, const Piece& piece, Tally& tally) {
  std::vector<char> member(graph.num_tasks(), 0), in_block(graph.num_tasks(), 0);
  std::vector<TaskId> block, waits;
  for (TaskId t : piece.cpu) {
    member[t] = 1;
    tally.cpu_ns += graph.task(t).duration_ns;
    if (waited_for_queue(graph, t)) {
      waits.push_back(t);
      continue;
    }
    in_block[t] = 1;
    block.push_back(t);
    ++(graph.task(t).kind == TaskKind::runtime ? tally.calls : tally.cpu_segments);
  }
  zero_inner_delays(graph, piece.cpu, member);
  const ChainSpot spot = launch_spot(graph, piece.cpu.front(), in_block);
  remove_block(graph, block);
  for (TaskId t : waits) {
    graph.set_duration(t, 0);
    graph.rename(t, "launch-queue wait (captured by cuda_graphs)");
  }
  tally.queue_waits += waits.size();
  return spot;
}

// One piece becomes one graph: its CPU work removed, one cudaGraphLaunch in its place.
std::optional<Captured> capture(Graph& graph, const Piece& piece, TimeNs launch_ns, Tally& tally) {
  const GpuWork work = gpu_work_of(graph, piece);
  if (work.tasks.empty()) {
    ++tally.cpu_only;
    return std::nullopt;
  }
  const Task& anchor = graph.task(piece.cpu.front());
  NewTask launch;
  launch.name = "cudaGraphLaunch";
  launch.kind = TaskKind::runtime;
  launch.unit = anchor.unit;
  launch.duration_ns = launch_ns;
  launch.iteration = anchor.iteration;
  launch.phase = anchor.phase;
  const ChainSpot spot = strip(graph, piece, tally);
  const TaskId call =
      insert_between(graph, launch, spot.prev, spot.next, spot.delay_in_ns, spot.delay_out_ns, spot.release_ns);
  launch_graph(graph, call, work);
  ++tally.graphs;
  Captured captured{call, {}};
  for (const auto& [stream, tail] : work.last) captured.tails.push_back(tail);
  return captured;
}

// The launch queue is finite: the CPU cannot run ahead of the GPU without limit. Each graph
// launch waits until the graph launched `in_flight` launches earlier has finished on the GPU.
void throttle(Graph& graph, const std::vector<Captured>& graphs, std::size_t in_flight) {
  for (std::size_t j = in_flight; j < graphs.size(); ++j) {
    for (TaskId tail : graphs[j - in_flight].tails)
      graph.connect(tail, graphs[j].launch, {EdgeType::sync, Timing::finish_to_start, 0, false});
    graph.set_blocking(graphs[j].launch, true);
  }
}

std::vector<RangeWindow> regions_of(const Graph& graph, const std::string& region) {
  std::vector<RangeWindow> windows;
  try {
    windows = range_windows(graph, region);
  } catch (const Error& e) {
    throw Error(fmt::format("parameter 'region': {}", e.what()));
  }
  if (windows.empty())
    throw Error(fmt::format("no CPU range of the trace matches region '{}' (the default "
                            "'ProfilerStep#' needs a trace recorded with profiler.step() calls)",
                            region));
  return windows;
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

ScenarioOutcome apply_cuda_graphs(Graph& graph, const ScenarioParams& params) {
  const std::string& region = params.text("region");
  const auto launch_ns = static_cast<TimeNs>(params.number("launch"));
  const auto windows = regions_of(graph, region);
  const auto by_unit = tasks_by_unit(graph);
  Tally tally;
  std::vector<Captured> graphs;
  for (const RangeWindow& window : windows) {
    ++tally.regions;
    for (const Piece& piece : pieces_of(graph, window, by_unit, tally))
      if (auto captured = capture(graph, piece, launch_ns, tally)) graphs.push_back(std::move(*captured));
  }
  if (graphs.empty())
    throw Error(fmt::format("the {} occurrences of region '{}' launch no GPU work to capture",
                            windows.size(), region));
  throttle(graph, graphs, static_cast<std::size_t>(params.integer("in_flight")));
  return {nullptr, {describe(tally, region, launch_ns)}};
}

}  // namespace

Scenario cuda_graphs() {
  return {"cuda_graphs", "the step replayed as CUDA graphs: no per-kernel launches or framework work on the CPU",
          {ScenarioParam::text("region", "ProfilerStep#",
                               "regular expression naming the CPU range captured as a graph (data loading excluded)"),
           {"launch", ParamKind::duration, 10'000, "CPU time of one cudaGraphLaunch call", 0, 1e9},
           {"in_flight", ParamKind::integer, 1,
            "graphs launched and not yet finished when a cudaGraphLaunch blocks (1: one sync per step)", 1, 1024}},
          apply_cuda_graphs};
}

}  // namespace daydream::scenarios
