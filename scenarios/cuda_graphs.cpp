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
//  - launch-queue waits of captured calls stay as ordering constraints on the CPU work after the
//    graph (removal bridges them), so the CPU never runs further ahead of the GPU than it did.
// A region range the trace lacks, or a region without GPU work, is an Error.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>
#include <vector>

#include "builtin.hpp"
#include "common.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"

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
  std::size_t blocking = 0, host_copies = 0, data_loading = 0;
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

auto starting_in(const Graph& graph, const std::vector<TaskId>& list, const RangeWindow& window) {
  auto begin = std::lower_bound(list.begin(), list.end(), window.start_ns,
                                [&](TaskId t, TimeNs s) { return graph.task(t).recorded_start_ns < s; });
  auto end = std::lower_bound(begin, list.end(), window.end_ns,
                              [&](TaskId t, TimeNs s) { return graph.task(t).recorded_start_ns < s; });
  return std::pair(begin, end);
}

// The region's pieces: cut on its own thread at every task left out; other operator threads'
// captured tasks join the piece running when they start.
std::vector<Piece> pieces_of(const Graph& graph, const RangeWindow& window, const std::vector<std::vector<TaskId>>& by_unit,
                             Tally& tally) {
  std::vector<Piece> pieces;
  bool open = false;
  const auto [begin, end] = starting_in(graph, by_unit[window.unit], window);
  for (auto it = begin; it != end; ++it) {
    if (left_out(graph, *it, tally)) {
      open = false;
      continue;
    }
    if (!open) pieces.push_back({{}, graph.task(*it).recorded_start_ns});
    open = true;
    pieces.back().cpu.push_back(*it);
  }
  if (pieces.empty()) return pieces;
  for (UnitId u = 0; u < graph.units().size(); ++u) {
    const Unit& unit = graph.units()[u];
    if (u == window.unit || unit.kind != UnitKind::cpu_thread || unit.background) continue;
    const auto [first, last] = starting_in(graph, by_unit[u], window);
    for (auto it = first; it != last; ++it) {
      if (left_out(graph, *it, tally)) continue;
      const TimeNs start = graph.task(*it).recorded_start_ns;
      auto piece = std::upper_bound(pieces.begin(), pieces.end(), start, [](TimeNs s, const Piece& p) { return s < p.start_ns; });
      (piece == pieces.begin() ? *piece : *std::prev(piece)).cpu.push_back(*it);
    }
  }
  return pieces;
}

// The launched GPU tasks of a piece and the first of each stream.
std::pair<std::vector<TaskId>, std::map<UnitId, TaskId>> gpu_work_of(const Graph& graph, const Piece& piece) {
  std::vector<TaskId> gpu;
  std::map<UnitId, TaskId> first;
  for (TaskId call : piece.cpu)
    for (TaskId g : launched_by(graph, call)) {
      gpu.push_back(g);
      auto [it, fresh] = first.try_emplace(graph.task(g).unit, g);
      if (!fresh && graph.task(g).recorded_start_ns < graph.task(it->second).recorded_start_ns) it->second = g;
    }
  return {gpu, first};
}

// One piece becomes one graph: its CPU work removed, one cudaGraphLaunch in its place.
void capture(Graph& graph, const Piece& piece, TimeNs launch_ns, Tally& tally) {
  const auto [gpu, first] = gpu_work_of(graph, piece);
  if (gpu.empty()) {
    ++tally.cpu_only;
    return;
  }
  std::vector<char> in_block(graph.num_tasks(), 0), in_graph(graph.num_tasks(), 0);
  for (TaskId t : piece.cpu) {
    in_block[t] = 1;
    tally.cpu_ns += graph.task(t).duration_ns;
    ++(graph.task(t).kind == TaskKind::runtime ? tally.calls : tally.cpu_segments);
  }
  for (TaskId g : gpu) in_graph[g] = 1;
  const TaskId anchor = piece.cpu.front();
  const ChainSpot spot = chain_spot(graph, anchor, in_block);
  NewTask launch;
  launch.name = "cudaGraphLaunch";
  launch.kind = TaskKind::runtime;
  launch.unit = graph.task(anchor).unit;
  launch.duration_ns = launch_ns;
  launch.iteration = graph.task(anchor).iteration;
  launch.phase = graph.task(anchor).phase;
  remove_block(graph, piece.cpu);
  const TaskId call = insert_between(graph, launch, spot.prev, spot.next, spot.delay_in_ns, spot.delay_out_ns, spot.release_ns);
  const auto& latency = graph.calibration().launch_latency_ns;
  for (const auto& [stream, root] : first) {
    const TaskKind kind = graph.task(root).kind;
    graph.connect(call, root, {kind == TaskKind::communication ? EdgeType::communication : EdgeType::launch,
                               Timing::start_to_start, latency[static_cast<std::size_t>(kind)], false});
  }
  for (TaskId g : gpu)  // inside the graph, a stream runs its tasks back to back
    for (const auto& p : graph.predecessors(g))
      if (p.edge.type == EdgeType::gpu_sequential && in_graph[p.task] && graph.task(p.task).unit == graph.task(g).unit)
        graph.edge(p.task, g).delay_ns = graph.calibration().gpu_gap_ns;
  ++tally.graphs;
}

std::vector<RangeWindow> regions_of(const Graph& graph, const std::string& region) {
  std::vector<RangeWindow> windows;
  try {
    windows = range_windows(graph, region);
  } catch (const Error& e) {
    throw Error(fmt::format("scenario 'cuda_graphs': parameter 'region': {}", e.what()));
  }
  if (windows.empty())
    throw Error(fmt::format("scenario 'cuda_graphs': no CPU range of the trace matches region '{}' (the default "
                            "'ProfilerStep#' needs a trace recorded with profiler.step() calls)",
                            region));
  return windows;
}

std::string describe(const Tally& t, const std::string& region, TimeNs launch_ns) {
  return fmt::format(
      "region '{}': {} occurrences captured as {} graphs (one cudaGraphLaunch of {:.1f} us each); removed {} CUDA "
      "calls and {} CPU segments ({:.3f} ms CPU); left outside the capture: {} blocking calls, {} calls launching "
      "host copies, {} data-loading tasks; {} stretches without GPU work left as they were",
      region, t.regions, t.graphs, static_cast<double>(launch_ns) / 1e3, t.calls, t.cpu_segments,
      static_cast<double>(t.cpu_ns) / 1e6, t.blocking, t.host_copies, t.data_loading, t.cpu_only);
}

ScenarioOutcome apply_cuda_graphs(Graph& graph, const ScenarioParams& params) {
  const std::string& region = params.text("region");
  const auto launch_ns = static_cast<TimeNs>(params.number("launch"));
  const auto windows = regions_of(graph, region);
  const auto by_unit = tasks_by_unit(graph);
  Tally tally;
  for (const RangeWindow& window : windows) {
    ++tally.regions;
    for (const Piece& piece : pieces_of(graph, window, by_unit, tally)) capture(graph, piece, launch_ns, tally);
  }
  if (tally.graphs == 0)
    throw Error(fmt::format("scenario 'cuda_graphs': the {} occurrences of region '{}' launch no GPU work to capture",
                            windows.size(), region));
  return {nullptr, {describe(tally, region, launch_ns)}};
}

}  // namespace

Scenario cuda_graphs() {
  ScenarioParam region;
  region.name = "region";
  region.kind = ParamKind::text;
  region.default_text = "ProfilerStep#";
  region.description = "regular expression naming the CPU range captured as a graph (data loading excluded)";
  ScenarioParam launch;
  launch.name = "launch";
  launch.kind = ParamKind::duration;
  launch.default_value = 10'000;
  launch.min = 0;
  launch.max = 1e9;
  launch.description = "CPU time of one cudaGraphLaunch call";
  return {"cuda_graphs", "the step replayed as CUDA graphs: no per-kernel launches or framework work on the CPU",
          {region, launch}, apply_cuda_graphs};
}

}  // namespace daydream::scenarios
