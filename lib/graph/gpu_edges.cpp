// GPU streams -> tasks, with gpu_sequential and launch edges, and the calibration of the two
// latencies a trace cannot show per edge: launch latency (call start -> GPU start on an idle
// stream) and the gap between back-to-back tasks on a stream.
//
// A GPU task starts at max(launch call start + launch latency, stream predecessor end + gap).
// When the stream is what held it back ("stream-bound"), the recorded gap is kept on its
// gpu_sequential edge: it is GPU-side overhead of that pair of tasks. Otherwise both edges get
// the calibrated medians.
#include <algorithm>
#include <limits>
#include <map>

#include "common/text.hpp"
#include "graph/build_context.hpp"

namespace daydream {
namespace {

TaskKind gpu_task_kind(const Trace& trace, const TraceEvent& e) {
  if (e.kind == EventKind::memcpy) return TaskKind::memcpy;
  if (e.kind == EventKind::memset) return TaskKind::memset;
  const auto name = trace.name_of(e);
  if (text::contains(name, "nccl") || text::contains(name, "NCCL")) return TaskKind::communication;
  return TaskKind::kernel;
}

std::vector<std::vector<std::uint32_t>> gpu_events_by_lane(const BuildContext& ctx) {
  std::vector<std::vector<std::uint32_t>> by_lane(ctx.trace.lanes.size());
  for (std::uint32_t i = 0; i < ctx.trace.events.size(); ++i)
    if (is_gpu_activity(ctx.trace.events[i].kind)) by_lane[ctx.trace.events[i].lane].push_back(i);
  for (auto& positions : by_lane) {
    std::stable_sort(positions.begin(), positions.end(), [&](std::uint32_t a, std::uint32_t b) {
      return ctx.trace.events[a].start_ns < ctx.trace.events[b].start_ns;
    });
  }
  return by_lane;
}

/// The API call that launched a GPU activity (first by correlation), if recorded.
const TraceEvent* launch_call(const BuildContext& ctx, const TraceEvent& gpu) {
  const auto calls = ctx.lookup(ctx.api_by_correlation, gpu.correlation);
  return calls.empty() ? nullptr : &ctx.event(calls.front());
}

std::size_t kind_index(TaskKind kind) { return static_cast<std::size_t>(kind); }

/// A synchronization record of a cudaStreamWaitEvent: by its call when the trace has it (some
/// Nsight versions label every record with another type), else by the record's type.
bool is_stream_wait(const BuildContext& ctx, const TraceEvent& sync) {
  const auto calls = ctx.lookup(ctx.api_by_correlation, sync.correlation);
  if (calls.empty()) return sync.sync_kind == SyncKind::stream_wait_event;
  return api_role(ctx.trace.name_of(ctx.event(calls.front()))) == ApiRole::stream_wait_event;
}

/// Per GPU lane, the CPU times (sorted) at which a cudaStreamWaitEvent made its stream wait, from
/// the trace's synchronization records.
std::vector<std::vector<TimeNs>> stream_wait_times(const BuildContext& ctx) {
  std::map<std::pair<std::int64_t, std::int64_t>, std::uint32_t> lane_of;  // (device, stream) -> lane
  for (std::uint32_t l = 0; l < ctx.trace.lanes.size(); ++l)
    if (ctx.trace.lanes[l].kind == LaneKind::gpu_stream) lane_of[{ctx.trace.lanes[l].process, ctx.trace.lanes[l].thread}] = l;
  std::vector<std::vector<TimeNs>> waits(ctx.trace.lanes.size());
  for (const TraceEvent& e : ctx.trace.events) {
    if (e.kind != EventKind::cuda_sync || e.sync_stream == kNone || !is_stream_wait(ctx, e)) continue;
    const auto it = lane_of.find({ctx.trace.lanes[e.lane].process, e.sync_stream});
    if (it != lane_of.end()) waits[it->second].push_back(e.start_ns);
  }
  for (auto& w : waits) std::sort(w.begin(), w.end());
  return waits;
}

/// Whether a stream wait was issued in (after, until]: the task launched at `until` may have been
/// held by another stream, so its start says nothing about the launch latency.
bool waited_between(const std::vector<TimeNs>& waits, TimeNs after, TimeNs until) {
  const auto it = std::upper_bound(waits.begin(), waits.end(), after);
  return it != waits.end() && *it <= until;
}

/// Per device, the recorded busy stretches of its GPU (the union over streams), by start.
using BusyIndex = std::map<std::int64_t, std::vector<std::pair<TimeNs, TimeNs>>>;

BusyIndex device_busy(const BuildContext& ctx) {
  BusyIndex busy;
  for (const TraceEvent& e : ctx.trace.events)
    if (is_gpu_activity(e.kind)) busy[ctx.trace.lanes[e.lane].process].emplace_back(ctx.rel(e.start_ns), ctx.rel(e.end_ns()));
  for (auto& [device, spans] : busy) {
    std::sort(spans.begin(), spans.end());
    std::vector<std::pair<TimeNs, TimeNs>> merged;
    for (const auto& s : spans) {
      if (!merged.empty() && s.first <= merged.back().second) merged.back().second = std::max(merged.back().second, s.second);
      else merged.push_back(s);
    }
    spans = std::move(merged);
  }
  return busy;
}

/// Whether the device ran anything in (from, to).
bool busy_between(const std::vector<std::pair<TimeNs, TimeNs>>& spans, TimeNs from, TimeNs to) {
  auto it = std::upper_bound(spans.begin(), spans.end(), from, [](TimeNs t, const auto& s) { return t < s.second; });
  return it != spans.end() && it->first < to;
}

}  // namespace

void calibrate_latencies(BuildContext& ctx) {
  Calibration& cal = ctx.graph.calibration();
  std::array<std::vector<TimeNs>, kTaskKindCount> launch_samples;
  const auto by_lane = gpu_events_by_lane(ctx);
  const auto waits = stream_wait_times(ctx);
  for (std::uint32_t l = 0; l < by_lane.size(); ++l) {
    const auto& lane = by_lane[l];
    TimeNs previous_call = std::numeric_limits<TimeNs>::min();
    for (std::size_t i = 0; i < lane.size(); ++i) {
      const TraceEvent& e = ctx.event(lane[i]);
      const TraceEvent* call = launch_call(ctx, e);
      if (!call) continue;
      const bool stream_idle = i == 0 || call->start_ns >= ctx.event(lane[i - 1]).end_ns();
      const bool held = waited_between(waits[l], previous_call, call->start_ns);
      previous_call = call->start_ns;
      if (stream_idle && !held && e.start_ns >= call->start_ns)
        launch_samples[kind_index(gpu_task_kind(ctx.trace, e))].push_back(e.start_ns - call->start_ns);
    }
  }
  // Kinds never launched onto an idle stream take the median over all kinds.
  std::vector<TimeNs> pooled;
  for (const auto& samples : launch_samples) pooled.insert(pooled.end(), samples.begin(), samples.end());
  cal.launch_samples = static_cast<std::int64_t>(pooled.size());
  // A held task (the GPU full, an unrecorded wait) only adds to its sample, never takes away:
  // the lower quartile estimates the latency of a task nothing held better than the median. A
  // kind whose samples are mostly held (copies of a data pipeline queued behind its own work)
  // is capped at the median over all kinds: launching a copy costs no more than a kernel's.
  const TimeNs pooled_latency = text::lower_quantile(pooled, 4);
  const TimeNs pooled_median = text::median(pooled);
  for (std::size_t k = 0; k < kTaskKindCount; ++k)
    cal.launch_latency_ns[k] = launch_samples[k].empty()
                                   ? pooled_latency
                                   : std::min(text::lower_quantile(launch_samples[k], 4), pooled_median);
  if (pooled.empty())
    ctx.count("no_launch_latency_samples", Severity::info,
              "no GPU task was launched onto an idle stream: launch latency taken as 0");

  std::vector<TimeNs> gaps;
  for (const auto& lane : by_lane) {
    for (std::size_t i = 1; i < lane.size(); ++i) {
      const TraceEvent& e = ctx.event(lane[i]);
      const TraceEvent& prev = ctx.event(lane[i - 1]);
      const TraceEvent* call = launch_call(ctx, e);
      const TimeNs latency = cal.launch_latency_ns[kind_index(gpu_task_kind(ctx.trace, e))];
      const bool stream_bound = !call || call->start_ns + latency <= prev.end_ns();
      if (stream_bound && e.start_ns >= prev.end_ns()) gaps.push_back(e.start_ns - prev.end_ns());
    }
  }
  cal.gap_samples = static_cast<std::int64_t>(gaps.size());
  cal.gpu_gap_ns = text::median(gaps);
}

namespace {

class StreamBuilder {
 public:
  StreamBuilder(BuildContext& ctx, UnitId unit, const BusyIndex& busy) : ctx_(ctx), unit_(unit), busy_(busy) {}

  void run(const std::vector<std::uint32_t>& positions) {
    for (std::uint32_t p : positions) add(p);
  }

 private:
  void add(std::uint32_t position) {
    const TraceEvent& e = ctx_.event(position);
    Task task;
    task.kind = gpu_task_kind(ctx_.trace, e);
    task.unit = unit_;
    task.name = ctx_.graph.intern(ctx_.trace.name_of(e));
    task.duration_ns = e.duration_ns;
    task.recorded_start_ns = ctx_.rel(e.start_ns);
    task.correlation = e.correlation;
    task.source_event = e.source_index;
    task.bytes = e.bytes;
    const TaskId launcher = launching_task(e);
    if (launcher != kNoTask) {
      const Task& call = ctx_.graph.task(launcher);
      task.op_event = call.op_event;
      task.op_name = call.op_name;
      task.phase = call.phase;
      task.layer = call.layer;
    }
    const TaskId id = ctx_.graph.add_task(task);
    ctx_.add_task_times(ctx_.rel(e.start_ns), ctx_.rel(e.end_ns()), position);
    ctx_.unit_tasks[unit_].push_back(id);
    ctx_.event_task[position] = id;
    ctx_.launched_by.resize(ctx_.graph.num_tasks(), kNoTask);
    ctx_.launched_by[id] = launcher;
    connect(id, e, launcher);
    previous_ = id;
  }

  // A host-to-device copy from pageable memory starts only once the CPU has staged (part of)
  // the data inside the call: that wait is CPU work recorded in the call, not GPU latency.
  bool staged_copy(const TraceEvent& e) const {
    const auto name = ctx_.trace.name_of(e);
    return e.kind == EventKind::memcpy && text::contains(name, "HtoD") && text::contains(name, "Pageable");
  }

  TaskId launching_task(const TraceEvent& e) const {
    const auto calls = ctx_.lookup(ctx_.api_by_correlation, e.correlation);
    for (std::uint32_t call : calls)
      if (ctx_.event_task[call] != kNoTask) return ctx_.event_task[call];
    return kNoTask;
  }

  void connect(TaskId id, const TraceEvent& e, TaskId launcher) {
    const Calibration& cal = ctx_.graph.calibration();
    const TaskKind kind = ctx_.graph.task(id).kind;
    const TimeNs latency = cal.launch_latency_ns[kind_index(kind)];
    const TimeNs start = ctx_.rel(e.start_ns);
    const TimeNs launch_ready = launcher == kNoTask ? std::numeric_limits<TimeNs>::min()
                                                    : ctx_.times[launcher].start + latency;
    if (launcher == kNoTask) {
      ctx_.count("gpu_task_without_launch", Severity::info,
                 "GPU tasks whose launch call is not in the trace (launched before profiling began): "
                 "they start at their recorded time or after their stream predecessor",
                 e.source_index);
    } else {
      TimeNs delay = staged_copy(e) ? std::clamp(start - ctx_.times[launcher].start, TimeNs{0},
                                                   ctx_.times[launcher].end - ctx_.times[launcher].start)
                                    : latency;
      if (const TimeNs held = unexplained_hold(e, launch_ready, ctx_.times[launcher].start); held > delay) delay = held;
      if (start < ctx_.times[launcher].start) {
        ctx_.count("gpu_start_before_launch", Severity::error,
                   "GPU tasks recorded as starting before their launch call (clock skew): launch delay set to 0",
                   e.source_index);
        delay = 0;
      }
      const EdgeType type = kind == TaskKind::communication ? EdgeType::communication : EdgeType::launch;
      ctx_.graph.add_edge(launcher, id, {type, Timing::start_to_start, delay, false});
    }
    if (previous_ == kNoTask) return;
    const TimeNs prev_end = ctx_.times[previous_].end;
    if (start < prev_end - ctx_.options.contradiction_tolerance_ns)
      ctx_.count("overlapping_gpu_tasks", Severity::error,
                 "GPU tasks starting before the previous task on their stream ended: simulated one after the other",
                 e.source_index);
    const bool stream_bound = prev_end + cal.gpu_gap_ns >= launch_ready;
    const TimeNs gap = stream_bound ? std::max<TimeNs>(0, start - prev_end) : cal.gpu_gap_ns;
    ctx_.graph.add_edge(previous_, id, {EdgeType::gpu_sequential, Timing::finish_to_start, gap, false});
  }

  /// A task that started long after its launch on a stream and a device that were both idle:
  /// neither its stream, nor another stream filling the GPU, nor a recorded wait held it, so the
  /// trace does not say what did. Its recorded launch delay is kept, and counted.
  TimeNs unexplained_hold(const TraceEvent& e, TimeNs launch_ready, TimeNs call_start) {
    const TimeNs start = ctx_.rel(e.start_ns);
    if (start - launch_ready <= ctx_.options.thread_idle_ns) return -1;
    if (previous_ != kNoTask && ctx_.times[previous_].end > launch_ready) return -1;
    const auto device = busy_.find(ctx_.trace.lanes[e.lane].process);
    if (device == busy_.end() || busy_between(device->second, launch_ready, start)) return -1;
    ctx_.graph.report().count_time("gpu_holds_unexplained", Severity::info,
                                   "GPU tasks that started long after their launch while the whole device was idle "
                                   "(nothing in the trace held them): the recorded launch delay is kept",
                                   start - launch_ready, e.source_index);
    return start - call_start;
  }

  BuildContext& ctx_;
  UnitId unit_;
  const BusyIndex& busy_;
  TaskId previous_ = kNoTask;
};

}  // namespace

namespace {

bool launches_gpu_work(std::string_view call) {
  return api_role(call) == ApiRole::memcpy || text::contains(call, "LaunchKernel") || text::contains(call, "Memset");
}

/// Launch calls whose GPU activity the trace lacks: CUPTI dropped or never flushed the records
/// (seen at the end of some Nsight captures), so the GPU side of that stretch is missing.
void count_lost_gpu_records(BuildContext& ctx) {
  for (std::uint32_t i = 0; i < ctx.trace.events.size(); ++i) {
    const TraceEvent& e = ctx.trace.events[i];
    if (!is_api_call(e.kind) || e.correlation == kNone || !launches_gpu_work(ctx.trace.name_of(e))) continue;
    if (ctx.lookup(ctx.gpu_by_correlation, e.correlation).empty())
      ctx.count("launches_without_gpu_record", Severity::data_loss,
                "launch and copy calls whose GPU activity is not in the trace (records dropped or not flushed): "
                "the GPU work they started is missing from the graph",
                e.source_index);
  }
}

}  // namespace

void build_gpu_tasks(BuildContext& ctx) {
  count_lost_gpu_records(ctx);
  const auto by_lane = gpu_events_by_lane(ctx);
  const BusyIndex busy = device_busy(ctx);
  for (std::uint32_t lane = 0; lane < by_lane.size(); ++lane) {
    if (!by_lane[lane].empty())
      StreamBuilder(ctx, ctx.unit_for_lane(lane, UnitKind::gpu_stream), busy).run(by_lane[lane]);
  }
  ctx.launched_by.resize(ctx.graph.num_tasks(), kNoTask);
  ctx.woken.assign(ctx.graph.num_tasks(), 0);
}

}  // namespace daydream
