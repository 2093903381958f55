// build_graph(): Trace -> dependency graph, stage by stage (see docs/graph.md).
#include <algorithm>
#include <limits>

#include "daydream/error.hpp"
#include "graph/build_context.hpp"

namespace daydream {

BuildContext::Positions BuildContext::lookup(const CorrelationIndex& index, std::int64_t correlation) const {
  if (correlation == kNone) return {};
  const auto range = std::equal_range(index.begin(), index.end(), std::make_pair(correlation, std::uint32_t{0}),
                                      [](const auto& a, const auto& b) { return a.first < b.first; });
  return {index.data() + (range.first - index.begin()), index.data() + (range.second - index.begin())};
}

namespace {

bool simulated_kind(EventKind kind) { return is_cpu_range(kind) || is_api_call(kind) || is_gpu_activity(kind); }

TimeNs trace_origin(const Trace& trace) {
  TimeNs origin = std::numeric_limits<TimeNs>::max();
  for (const auto& e : trace.events)
    if (simulated_kind(e.kind)) origin = std::min(origin, e.start_ns);
  return origin == std::numeric_limits<TimeNs>::max() ? 0 : origin;
}

void set_releases(BuildContext& ctx) {
  Graph& g = ctx.graph;
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    if (g.in_degree(t) == 0) g.task(t).release_ns = ctx.times[t].start;
  }
}

}  // namespace

void index_events(BuildContext& ctx) {
  const auto& events = ctx.trace.events;
  for (std::uint32_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if (e.correlation == kNone) continue;
    if (is_gpu_activity(e.kind)) ctx.gpu_by_correlation.emplace_back(e.correlation, i);
    else if (e.kind == EventKind::cuda_sync) ctx.sync_by_correlation.emplace_back(e.correlation, i);
    else if (is_api_call(e.kind)) ctx.api_by_correlation.emplace_back(e.correlation, i);
  }
  std::sort(ctx.gpu_by_correlation.begin(), ctx.gpu_by_correlation.end());
  std::sort(ctx.sync_by_correlation.begin(), ctx.sync_by_correlation.end());
  std::sort(ctx.api_by_correlation.begin(), ctx.api_by_correlation.end());
  ctx.event_task.assign(events.size(), kNoTask);
  ctx.api_wait_task.assign(events.size(), kNoTask);
  ctx.lane_unit.assign(ctx.trace.lanes.size(), BuildContext::kNoUnit);
}

namespace {

// The record_param_comms records on threads that have tasks, for scenarios that cost collectives.
void keep_collectives(BuildContext& ctx) {
  std::vector<CollectiveRecord> records;
  for (const TraceEvent& e : ctx.trace.events) {
    if (e.collective < 0) continue;
    const UnitId unit = ctx.lane_unit[e.lane];
    if (unit == BuildContext::kNoUnit || ctx.graph.units()[unit].kind != UnitKind::cpu_thread) continue;
    records.push_back({ctx.trace.collectives[static_cast<std::size_t>(e.collective)], unit, ctx.rel(e.start_ns),
                       ctx.rel(e.end_ns())});
  }
  ctx.graph.set_collectives(std::move(records));
  ctx.graph.world_size = ctx.trace.metadata.world_size;
}

}  // namespace

Graph build_graph(const Trace& trace, const GraphOptions& options) {
  Graph graph;
  graph.report() = trace.report;
  graph.source_path = trace.path;
  BuildContext ctx(trace, options, graph);
  ctx.origin = trace_origin(trace);
  graph.origin_ns = ctx.origin;
  index_events(ctx);
  calibrate_latencies(ctx);
  build_cpu_tasks(ctx);
  build_gpu_tasks(ctx);
  build_sync_edges(ctx);
  build_cross_thread_edges(ctx);
  build_cpu_sequential_edges(ctx);
  set_releases(ctx);
  assign_iterations(ctx);
  graph.set_ranges(std::move(ctx.ranges));
  keep_collectives(ctx);
  if (auto cycle = graph.find_cycle(); !cycle.empty())
    throw Error(trace.path, Error::kNoEvent, "", "internal: the built graph has a cycle through task " +
                                                     std::to_string(cycle.front()));
  return graph;
}

}  // namespace daydream
