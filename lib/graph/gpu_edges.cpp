// GPU streams -> tasks, with gpu_sequential and launch edges, and the calibration of the two
// latencies a trace cannot show per edge: launch latency (call start -> GPU start on an idle
// stream) and the gap between back-to-back tasks on a stream.
//
// A GPU task starts at max(launch call start + launch latency, stream predecessor end + gap).
// When the stream is what held it back ("stream-bound"), the recorded gap is kept on its
// gpu_sequential edge: it is GPU-side overhead of that pair of tasks. Otherwise both edges get
// the calibrated medians.
//
// SM work held back on an idle stream by another stream's kernel (gpu_holds.hpp) is left to the
// simulator's occupancy model where the trace records launch configurations; where it does not,
// the recorded hold is kept as a launch delay. Neither kind of held task is a calibration sample.
#include <algorithm>
#include <limits>
#include <map>

#include "common/nearly_sorted.hpp"
#include "common/text.hpp"
#include "graph/build_context.hpp"
#include "graph/gpu_holds.hpp"
#include "graph/graph_access.hpp"

namespace daydream {

bool BuildContext::names_collective(std::uint32_t name) const {
  if (collective_name.size() <= name) collective_name.resize(trace.strings.size(), -1);
  std::int8_t& known = collective_name[name];
  if (known < 0) {
    const std::string_view text = trace.strings[name];
    known = text::contains(text, "nccl") || text::contains(text, "NCCL") ? 1 : 0;
  }
  return known == 1;
}

namespace {

TaskKind gpu_task_kind(const BuildContext& ctx, const TraceEvent& e) {
  if (e.kind == EventKind::memcpy) return TaskKind::memcpy;
  if (e.kind == EventKind::memset) return TaskKind::memset;
  return ctx.names_collective(e.name) ? TaskKind::communication : TaskKind::kernel;
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
  return ctx.role_of(ctx.event(calls.front())) == ApiRole::stream_wait_event;
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
  for (auto& w : waits) sort_nearly_sorted(w);
  return waits;
}

/// Whether a stream wait was issued in (after, until]: the task launched at `until` may have been
/// held by another stream, so its start says nothing about the launch latency.
bool waited_between(const std::vector<TimeNs>& waits, TimeNs after, TimeNs until) {
  const auto it = std::upper_bound(waits.begin(), waits.end(), after);
  return it != waits.end() && *it <= until;
}

}  // namespace

namespace {

/// Launch-latency samples per task kind: call start -> GPU start of tasks launched onto an idle
/// stream that nothing held back: no stream wait issued to their stream since its previous
/// launch, no kernel of another stream holding their SMs (DeviceTimelines::holder).
std::array<std::vector<TimeNs>, kTaskKindCount> launch_samples(const BuildContext& ctx, const DeviceTimelines& timelines) {
  std::array<std::vector<TimeNs>, kTaskKindCount> samples;
  const auto& by_lane = timelines.by_lane();
  const auto waits = stream_wait_times(ctx);
  for (std::uint32_t l = 0; l < by_lane.size(); ++l) {
    const auto& lane = by_lane[l];
    TimeNs previous_call = std::numeric_limits<TimeNs>::min();
    for (std::size_t i = 0; i < lane.size(); ++i) {
      const TraceEvent& e = ctx.event(lane[i]);
      const TraceEvent* call = launch_call(ctx, e);
      if (!call) continue;
      const bool stream_idle = i == 0 || call->start_ns >= ctx.event(lane[i - 1]).end_ns();
      const bool waited = waited_between(waits[l], previous_call, call->start_ns);
      previous_call = call->start_ns;
      if (!stream_idle || waited || e.start_ns < call->start_ns) continue;
      if (timelines.use(lane[i]).on_sms && timelines.holder(l, call->start_ns, e.start_ns)) continue;
      samples[kind_index(gpu_task_kind(ctx, e))].push_back(e.start_ns - call->start_ns);
    }
  }
  return samples;
}

/// Stream-gap samples: start - predecessor end of tasks their stream held back (call start +
/// launch latency <= predecessor end), unless a GPU-filling kernel of another stream may have
/// held them after the predecessor ended (only the occupancy model can tell: without it, any
/// kernel running beside would count).
std::vector<TimeNs> gap_samples(const BuildContext& ctx, const DeviceTimelines& timelines) {
  std::vector<TimeNs> gaps;
  const auto& by_lane = timelines.by_lane();
  for (std::uint32_t l = 0; l < by_lane.size(); ++l) {
    const auto& lane = by_lane[l];
    for (std::size_t i = 1; i < lane.size(); ++i) {
      const TraceEvent& e = ctx.event(lane[i]);
      const TraceEvent& prev = ctx.event(lane[i - 1]);
      const TraceEvent* call = launch_call(ctx, e);
      const TimeNs latency = ctx.graph.calibration().launch_latency_ns[kind_index(gpu_task_kind(ctx, e))];
      const bool stream_bound = !call || call->start_ns + latency <= prev.end_ns();
      if (!stream_bound || e.start_ns < prev.end_ns()) continue;
      if (timelines.use(lane[i]).on_sms && timelines.modelled(l) && timelines.holder(l, prev.end_ns(), e.start_ns)) continue;
      gaps.push_back(e.start_ns - prev.end_ns());
    }
  }
  return gaps;
}

}  // namespace

void calibrate_latencies(BuildContext& ctx) {
  Calibration& cal = ctx.graph.calibration();
  const DeviceTimelines& timelines = ctx.device_timelines();
  auto samples = launch_samples(ctx, timelines);
  // Kinds never launched onto an idle stream take the median over all kinds.
  std::vector<TimeNs> pooled;
  for (const auto& kind : samples) pooled.insert(pooled.end(), kind.begin(), kind.end());
  cal.launch_samples = static_cast<std::int64_t>(pooled.size());
  // A held task (the GPU full, an unrecorded wait) only adds to its sample, never takes away:
  // the lower quartile estimates the latency of a task nothing held better than the median. A
  // kind whose samples are mostly held (copies of a data pipeline queued behind its own work)
  // is capped at the median over all kinds: launching a copy costs no more than a kernel's.
  const TimeNs pooled_latency = text::lower_quantile(pooled, 4);
  const TimeNs pooled_median = text::median(pooled);
  for (std::size_t k = 0; k < kTaskKindCount; ++k)
    cal.launch_latency_ns[k] =
        samples[k].empty() ? pooled_latency : std::min(text::lower_quantile(samples[k], 4), pooled_median);
  if (pooled.empty()) ctx.count(stats::no_launch_latency_samples);
  std::vector<TimeNs> gaps = gap_samples(ctx, timelines);
  cal.gap_samples = static_cast<std::int64_t>(gaps.size());
  cal.gpu_gap_ns = text::median(gaps);
}

namespace {

/// Why a GPU task started later than its launch and its stream allowed (see classify_hold).
enum class Hold : std::uint8_t { none, occupancy, kept };

class StreamBuilder {
 public:
  /// A held task and the event position of the filling kernel that held it.
  using Holds = std::vector<std::pair<TaskId, std::uint32_t>>;

  StreamBuilder(BuildContext& ctx, UnitId unit, const DeviceTimelines& timelines, Holds& holds)
      : ctx_(ctx), unit_(unit), timelines_(timelines), holds_(holds) {}

  void run(const std::vector<std::uint32_t>& positions) {
    for (std::uint32_t p : positions) add(p);
  }

 private:
  void add(std::uint32_t position) {
    const TraceEvent& e = ctx_.event(position);
    Task task;
    task.kind = gpu_task_kind(ctx_, e);
    task.unit = unit_;
    task.name = ctx_.name_of(e);
    task.duration_ns = e.duration_ns;
    task.recorded_start_ns = ctx_.rel(e.start_ns);
    task.correlation = e.correlation;
    task.source_event = e.source_index;
    task.bytes = e.bytes;
    task.launch = e.launch;
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
    connect(id, position, launcher);
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

  void connect(TaskId id, std::uint32_t position, TaskId launcher) {
    const TraceEvent& e = ctx_.event(position);
    const Calibration& cal = ctx_.graph.calibration();
    const TaskKind kind = ctx_.graph.task(id).kind;
    const TimeNs latency = cal.launch_latency_ns[kind_index(kind)];
    const TimeNs start = ctx_.rel(e.start_ns);
    const TimeNs launch_ready = launcher == kNoTask ? std::numeric_limits<TimeNs>::min()
                                                    : ctx_.times[launcher].start + latency;
    const bool stream_bound = previous_ != kNoTask && ctx_.times[previous_].end + cal.gpu_gap_ns >= launch_ready;
    const Hold hold = classify_hold(id, position, launcher, launch_ready);
    if (launcher == kNoTask) {
      ctx_.count(stats::gpu_task_without_launch, e.source_index);
    } else {
      TimeNs delay = staged_copy(e) ? std::clamp(start - ctx_.times[launcher].start, TimeNs{0},
                                                   ctx_.times[launcher].end - ctx_.times[launcher].start)
                                    : latency;
      if (const TimeNs held = unexplained_hold(e, launch_ready, ctx_.times[launcher].start); held > delay) delay = held;
      if (hold == Hold::kept && !stream_bound) delay = std::max(delay, start - ctx_.times[launcher].start);
      if (start < ctx_.times[launcher].start) {
        ctx_.count(stats::gpu_start_before_launch, e.source_index);
        delay = 0;
      }
      const EdgeType type = kind == TaskKind::communication ? EdgeType::communication : EdgeType::launch;
      ctx_.graph.add_edge(launcher, id, {type, Timing::start_to_start, delay, false});
    }
    if (previous_ == kNoTask) return;
    const TimeNs prev_end = ctx_.times[previous_].end;
    if (start < prev_end - ctx_.options.contradiction_tolerance_ns)
      ctx_.count(stats::overlapping_gpu_tasks, e.source_index);
    const TimeNs gap = stream_bound ? std::max<TimeNs>(0, start - prev_end) : cal.gpu_gap_ns;
    ctx_.graph.add_edge(previous_, id, {EdgeType::gpu_sequential, Timing::finish_to_start, gap, false});
  }

  /// Whether SM work that started later than its launch call and its stream allowed was held
  /// back by another stream's kernel running across that time (DeviceTimelines::holder). Where
  /// the trace records launch configurations, the occupancy model explains it (counted, with the
  /// held time, and the pair noted for TaskHolds::sm_held_by); where it does not, a hold longer than
  /// `thread_idle_ns` is kept as recorded.
  Hold classify_hold(TaskId id, std::uint32_t position, TaskId launcher, TimeNs launch_ready) {
    const TraceEvent& e = ctx_.event(position);
    if (launcher == kNoTask || !timelines_.use(position).on_sms) return Hold::none;
    const TimeNs ready = previous_ == kNoTask ? launch_ready
                                              : std::max(launch_ready, ctx_.times[previous_].end + ctx_.graph.calibration().gpu_gap_ns);
    const TimeNs start = ctx_.rel(e.start_ns), late = start - ready;
    if (late <= ctx_.options.contradiction_tolerance_ns) return Hold::none;
    const auto holder = timelines_.holder(e.lane, ready + ctx_.origin, e.start_ns);
    if (!holder) return Hold::none;
    if (timelines_.modelled(e.lane)) {
      const TimeNs held = start - std::max(ready, ctx_.rel(ctx_.event(*holder).start_ns));
      ctx_.graph.report().count_time(stats::gpu_holds_by_occupancy, held, e.source_index);
      holds_.emplace_back(id, *holder);
      return Hold::occupancy;
    }
    if (late <= ctx_.options.thread_idle_ns) return Hold::none;
    ctx_.graph.report().count_time(stats::gpu_holds_kept, late, e.source_index);
    return Hold::kept;
  }

  /// A task that started long after its launch on a stream and a device that were both idle:
  /// neither its stream, nor another stream filling the GPU, nor a recorded wait held it, so the
  /// trace does not say what did. Its recorded launch delay is kept, and counted.
  TimeNs unexplained_hold(const TraceEvent& e, TimeNs launch_ready, TimeNs call_start) {
    const TimeNs start = ctx_.rel(e.start_ns);
    if (start - launch_ready <= ctx_.options.thread_idle_ns) return -1;
    if (previous_ != kNoTask && ctx_.times[previous_].end > launch_ready) return -1;
    if (timelines_.device_busy_between(e.lane, launch_ready + ctx_.origin, e.start_ns)) return -1;
    ctx_.graph.report().count_time(stats::gpu_holds_unexplained, start - launch_ready, e.source_index);
    return start - call_start;
  }

  BuildContext& ctx_;
  UnitId unit_;
  const DeviceTimelines& timelines_;
  Holds& holds_;
  TaskId previous_ = kNoTask;
};

/// Each held task's holder and let-in share (TaskHolds::sm_held_by, sm_let_in), once every stream's
/// tasks exist; and the check of the last-wave model in Calibration: per filling kernel that
/// held work, how many of its block times before its end it let the first of it in (median).
void link_holds(BuildContext& ctx, const StreamBuilder::Holds& holds, const DeviceTimelines& timelines) {
  std::map<std::uint32_t, double> first_let_in;  // holder position -> earliest let-in share
  for (const auto& [held, position] : holds) {
    const TraceEvent& big = ctx.event(position);
    const TaskId holder = ctx.event_task[position];
    if (holder == kNoTask || big.duration_ns <= 0) continue;
    const TimeNs start = ctx.graph.task(held).recorded_start_ns + ctx.origin;
    const double share = std::clamp(static_cast<double>(start - big.start_ns) / static_cast<double>(big.duration_ns), 0.0, 1.0);
    TaskHolds held_back = ctx.graph.holds(held);
    held_back.sm_held_by = holder;
    held_back.sm_let_in = share;
    GraphAccess::set_holds(ctx.graph, held, held_back);
    const auto [it, inserted] = first_let_in.try_emplace(position, share);
    if (!inserted) it->second = std::min(it->second, share);
  }
  std::vector<double> waves_before_end;
  for (const auto& [position, share] : first_let_in) waves_before_end.push_back((1.0 - share) * timelines.use(position).waves);
  Calibration& cal = ctx.graph.calibration();
  cal.occupancy_holders = static_cast<std::int64_t>(waves_before_end.size());
  if (waves_before_end.empty()) return;
  const auto middle = waves_before_end.begin() + static_cast<std::ptrdiff_t>((waves_before_end.size() - 1) / 2);
  std::nth_element(waves_before_end.begin(), middle, waves_before_end.end());
  cal.occupancy_let_in_waves = *middle;
}

}  // namespace

namespace {

bool launches_gpu_work(const BuildContext& ctx, const TraceEvent& call) {
  if (ctx.role_of(call) == ApiRole::memcpy) return true;
  const std::string_view name = ctx.trace.name_of(call);
  return text::contains(name, "LaunchKernel") || text::contains(name, "Memset");
}

/// Launch calls whose GPU activity the trace lacks: CUPTI dropped or never flushed the records
/// (seen at the end of some Nsight captures), so the GPU side of that stretch is missing.
void count_lost_gpu_records(BuildContext& ctx) {
  for (std::uint32_t i = 0; i < ctx.trace.events.size(); ++i) {
    const TraceEvent& e = ctx.trace.events[i];
    if (!is_api_call(e.kind) || e.correlation == kNone || !launches_gpu_work(ctx, e)) continue;
    if (ctx.lookup(ctx.gpu_by_correlation, e.correlation).empty())
      ctx.count(stats::launches_without_gpu_record, e.source_index);
  }
}

}  // namespace

void build_gpu_tasks(BuildContext& ctx) {
  count_lost_gpu_records(ctx);
  const DeviceTimelines& timelines = ctx.device_timelines();
  const auto& by_lane = timelines.by_lane();
  StreamBuilder::Holds holds;
  for (std::uint32_t lane = 0; lane < by_lane.size(); ++lane) {
    if (!by_lane[lane].empty())
      StreamBuilder(ctx, ctx.unit_for_lane(lane, UnitKind::gpu_stream), timelines, holds).run(by_lane[lane]);
  }
  link_holds(ctx, holds, timelines);
  ctx.launched_by.resize(ctx.graph.num_tasks(), kNoTask);
  ctx.woken.assign(ctx.graph.num_tasks(), 0);
}

}  // namespace daydream
