// build_graph(): Trace -> dependency graph, stage by stage (see docs/graph.md).
#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "common/nearly_sorted.hpp"
#include "daydream/error.hpp"
#include "graph/build_context.hpp"
#include "graph/gpu_holds.hpp"
#include "graph/graph_access.hpp"

namespace daydream {

BuildContext::BuildContext(const Trace& t, const GraphOptions& o, Graph& g) : trace(t), options(o), graph(g) {}

BuildContext::~BuildContext() = default;

const DeviceTimelines& BuildContext::device_timelines() {
  if (!timelines) timelines = std::make_unique<const DeviceTimelines>(*this);
  return *timelines;
}

void CorrelationIndex::seal() {
  sort_nearly_sorted(pairs);
  starts.clear();
  if (pairs.empty()) return;
  first_id = pairs.front().first;
  const auto span = static_cast<std::uint64_t>(pairs.back().first) - static_cast<std::uint64_t>(first_id);
  if (span >= 16 * pairs.size() + (1 << 16)) return;  // sparse ids (a trace's run 5-13 ids per pair): the binary search
  starts.resize(span + 2);
  std::size_t at = 0;
  for (std::size_t slot = 0; slot < starts.size(); ++slot) {
    const std::int64_t id = first_id + static_cast<std::int64_t>(slot);
    while (at < pairs.size() && pairs[at].first < id) ++at;
    starts[slot] = static_cast<std::uint32_t>(at);
  }
}

BuildContext::Positions BuildContext::lookup(const CorrelationIndex& index, std::int64_t correlation) const {
  const auto& pairs = index.pairs;
  if (correlation == kNone) return {};
  if (!index.starts.empty()) {
    // An id below first_id wraps around to a slot past the end too.
    const auto slot = static_cast<std::uint64_t>(correlation) - static_cast<std::uint64_t>(index.first_id);
    if (slot >= index.starts.size() - 1) return {};
    return {pairs.data() + index.starts[slot], pairs.data() + index.starts[slot + 1]};
  }
  const auto range = std::equal_range(pairs.begin(), pairs.end(), std::make_pair(correlation, std::uint32_t{0}),
                                      [](const auto& a, const auto& b) { return a.first < b.first; });
  return {pairs.data() + (range.first - pairs.begin()), pairs.data() + (range.second - pairs.begin())};
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
    if (g.in_degree(t) == 0) g.set_release(t, ctx.times[t].start);  // the columns too: the cycle check built them
  }
}

}  // namespace

void index_events(BuildContext& ctx) {
  const auto& events = ctx.trace.events;
  if (events.size() > static_cast<std::size_t>(kMaxTraceEvents))
    throw Error(ctx.trace.path, Error::kNoEvent, "",
                fmt::format("{} events: a trace holds at most {}", events.size(), kMaxTraceEvents));
  for (std::uint32_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if (e.source_index > kMaxTraceEvents) [[unlikely]]  // tasks name their events by 32-bit indices
      throw Error(ctx.trace.path, e.source_index, "source_index",
                  fmt::format("past the {} events a trace may hold", kMaxTraceEvents));
    if (e.correlation == kNone) continue;
    if (is_gpu_activity(e.kind)) ctx.gpu_by_correlation.add(e.correlation, i);
    else if (e.kind == EventKind::cuda_sync) ctx.sync_by_correlation.add(e.correlation, i);
    else if (is_api_call(e.kind)) ctx.api_by_correlation.add(e.correlation, i);
  }
  ctx.gpu_by_correlation.seal();
  ctx.sync_by_correlation.seal();
  ctx.api_by_correlation.seal();
  ctx.event_task.assign(events.size(), kNoTask);
  ctx.api_wait_task.assign(events.size(), kNoTask);
  ctx.lane_unit.assign(ctx.trace.lanes.size(), BuildContext::kNoUnit);
}

namespace {

/// Fills what a record_param_comms record lacks (older PyTorch: name and size) from an
/// `nccl:<op>` annotation it contains on its thread.
void complete_record(CollectiveRecord& record, const CollectiveRecord& annotation) {
  if (record.info.name.empty()) record.info.name = annotation.info.name;
  if (record.info.in_elements == kNone) record.info.in_elements = annotation.info.in_elements;
  if (record.info.dtype.empty()) record.info.dtype = annotation.info.dtype;
}

/// An annotation inside a record completes it and is dropped; one outside any record stands
/// for its collective itself. Records are by thread and start, so the enclosing record of an
/// annotation is the latest earlier-starting record on its thread.
std::vector<CollectiveRecord> fold_annotations(std::vector<CollectiveRecord> all) {
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return std::tie(a.unit, a.start_ns) < std::tie(b.unit, b.start_ns);
  });
  std::vector<CollectiveRecord> kept;
  std::optional<std::size_t> open;  // index in `kept` of the last record_param_comms
  for (auto& record : all) {
    if (open && kept[*open].unit != record.unit) open.reset();
    if (!record.info.from_annotation) {
      open = kept.size();
      kept.push_back(std::move(record));
      continue;
    }
    CollectiveRecord* outer = open ? &kept[*open] : nullptr;
    if (outer && outer->end_ns >= record.end_ns) complete_record(*outer, record);
    else kept.push_back(std::move(record));
  }
  std::stable_sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  return kept;
}

// The collectives recorded on threads that have tasks, for scenarios that cost collectives.
void keep_collectives(BuildContext& ctx) {
  std::vector<CollectiveRecord> records;
  for (const TraceEvent& e : ctx.trace.events) {
    if (e.collective < 0) continue;
    const UnitId unit = ctx.lane_unit[e.lane];
    if (unit == BuildContext::kNoUnit || ctx.graph.units()[unit].kind != UnitKind::cpu_thread) continue;
    records.push_back({ctx.trace.collectives[static_cast<std::size_t>(e.collective)], unit, ctx.rel(e.start_ns),
                       ctx.rel(e.end_ns())});
  }
  ctx.graph.set_collectives(fold_annotations(std::move(records)));
  ctx.graph.world_size = ctx.trace.metadata.world_size;
  ctx.graph.rank = ctx.trace.metadata.rank;
}

}  // namespace

Graph build_graph(const Trace& trace, const GraphOptions& options) {
  Graph graph;
  graph.report() = trace.report;
  graph.source_path = trace.path;
  BuildContext ctx(trace, options, graph);
  ctx.origin = trace_origin(trace);
  graph.origin_ns = ctx.origin;
  // Real traces give 1.5-1.8 tasks and about 2 edges per event; capacity never touched costs
  // address space only. The task records take room for the fewest tasks, and pages past it one
  // by one; the columns are brought to their exact size at the end.
  GraphAccess::reserve(graph, 2 * trace.events.size() + 64, 3 * trace.events.size() / 2 + 64,
                       5 * trace.events.size() / 2 + 64);
  index_events(ctx);
  calibrate_latencies(ctx);
  build_cpu_tasks(ctx);
  build_gpu_tasks(ctx);
  build_sync_edges(ctx);
  build_cross_thread_edges(ctx);
  build_cpu_sequential_edges(ctx);
  break_cycles(ctx);  // before releases: a dropped edge can leave a task without predecessors
  set_releases(ctx);
  assign_iterations(ctx);
  // The edges are complete: their editable store's memory goes (until a what-if changes them)
  // before what the graph keeps besides is copied into exact sizes.
  GraphAccess::settle(graph);
  graph.set_ranges(std::move(ctx.ranges));
  graph.set_gpus(trace.metadata.gpus);
  graph.set_launch_configs(trace.launches);
  keep_operators(ctx);
  keep_collectives(ctx);
  return graph;
}

}  // namespace daydream
