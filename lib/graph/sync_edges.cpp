// sync and cross-stream edges: which GPU work a blocking CUDA call waits for, and which GPU task
// a cudaStreamWaitEvent holds back. Where the trace has CUPTI synchronization records
// (`cuda_sync`), they name the stream and the awaited cudaEventRecord; otherwise the stream is
// inferred from the calling thread's launches (the last launch before the call, or before the
// last cudaEventRecord) and the edge is marked inferred. An inferred edge the timestamps
// contradict (the CPU returned before the GPU work ended) is dropped and counted.
//
// A blocking call's task keeps only the CPU time after the awaited work ended (its return
// latency); the wait itself becomes the sync edge.
//
// Launch calls block too when the GPU's queue of pending work is full (a GPU-bound job): such
// a call lasts far longer than the trace's usual launch and returns right after some GPU task
// ends, which freed a slot. It gets an inferred sync edge from that task. A long call that
// returns right after another thread's long call of the same process waited for the driver that
// call held (driver_lock_waits): it is marked as held by that call instead (TaskHolds::lock_held_by),
// a mutual exclusion the simulator applies, not an edge.
#include <algorithm>
#include <limits>
#include <map>

#include "common/cuda_api.hpp"
#include "common/nearly_sorted.hpp"
#include "common/text.hpp"
#include "graph/build_context.hpp"
#include "graph/graph_access.hpp"

namespace daydream {
namespace {

constexpr TimeNs kNever = std::numeric_limits<TimeNs>::min();

/// (end, task) pairs sorted by end.
using EndIndex = std::vector<std::pair<TimeNs, TaskId>>;

/// The latest-ending task of `ends` that ended in [earliest, last] and that `accept(end, task)`
/// takes, or kNoTask: the "returned right after X ended" search of the rules below.
template <typename Accept>
TaskId latest_end_within(const EndIndex& ends, TimeNs earliest, TimeNs last, Accept accept) {
  for (auto it = std::upper_bound(ends.begin(), ends.end(), std::make_pair(last, kNoTask)); it != ends.begin(); --it) {
    const auto [end, task] = *std::prev(it);
    if (end < earliest) break;
    if (accept(end, task)) return task;
  }
  return kNoTask;
}

/// Where on a stream an event was recorded: work launched before `time` on `unit`.
struct RecordPoint {
  TimeNs time = kNever;
  UnitId unit = BuildContext::kNoUnit;
  bool inferred = true;
};

class SyncBuilder {
 public:
  explicit SyncBuilder(BuildContext& ctx) : ctx_(ctx) {
    index_streams();
    index_launches();
    index_gpu_ends();
    index_long_calls();
    index_event_records();
  }

  void run() {
    for (UnitId u = 0; u < ctx_.graph.units().size(); ++u)
      if (ctx_.graph.units()[u].kind == UnitKind::cpu_thread) walk_thread(ctx_.unit_tasks[u]);
  }

 private:
  // Per GPU unit: the launch time of each task in stream order, made non-decreasing (streams are
  // FIFO in launch order), so "last task launched before t" is a binary search.
  void index_streams() {
    launch_times_.resize(ctx_.graph.units().size());
    for (UnitId u = 0; u < ctx_.graph.units().size(); ++u) {
      const Unit& unit = ctx_.graph.units()[u];
      if (unit.kind != UnitKind::gpu_stream) continue;
      gpu_streams_.push_back(u);
      stream_unit_[{unit.process, unit.thread}] = u;
      TimeNs running = kNever;
      for (TaskId t : ctx_.unit_tasks[u]) {
        const TaskId launcher = ctx_.launched_by[t];
        if (launcher != kNoTask) running = std::max(running, ctx_.times[launcher].start);
        launch_times_[u].push_back(running);
      }
    }
  }

  // All GPU tasks by end time, and the median duration of calls that launch GPU work.
  void index_gpu_ends() {
    std::vector<TimeNs> launch_durations;
    for (TaskId t = 0; t < ctx_.graph.num_tasks(); ++t) {
      const Task& task = ctx_.graph.task(t);
      if (ctx_.graph.units()[task.unit].kind == UnitKind::gpu_stream) gpu_ends_.emplace_back(ctx_.times[t].end, t);
      if (launched_unit_[t] != BuildContext::kNoUnit)
        launch_durations.push_back(ctx_.times[t].end - ctx_.times[t].start);
    }
    sort_nearly_sorted(gpu_ends_);
    median_launch_ns_ = text::median(launch_durations);
  }

  /// A call this long did not just launch: it waited (launch_queue_factor x the median launch).
  TimeNs long_call_ns() const {
    return std::max<TimeNs>(ctx_.options.launch_queue_min_ns,
                            static_cast<TimeNs>(ctx_.options.launch_queue_factor * static_cast<double>(median_launch_ns_)));
  }

  // Long CUDA calls by end, for the driver-lock rule.
  void index_long_calls() {
    for (TaskId t = 0; t < ctx_.graph.num_tasks(); ++t) {
      const Task& task = ctx_.graph.task(t);
      if (task.kind == TaskKind::runtime && ctx_.times[t].end - ctx_.times[t].start > long_call_ns())
        long_call_ends_.emplace_back(ctx_.times[t].end, t);
    }
    sort_nearly_sorted(long_call_ends_);
  }

  /// The CUDA driver serialises calls from several threads of one process: while one thread's
  /// call holds it (a pageable copy staging its data, say), another thread's call blocks and
  /// returns right after. The holder: a long call on another thread of the same process that
  /// began first and ended within launch_queue_window_ns before this call returned.
  TaskId lock_holder(TaskId t) const {
    const TaskTimes& call = ctx_.times[t];
    const UnitId unit = ctx_.graph.task(t).unit;
    return latest_end_within(long_call_ends_, call.end - ctx_.options.launch_queue_window_ns, returned_by(call),
                             [&](TimeNs, TaskId holder) {
                               const UnitId other = ctx_.graph.task(holder).unit;
                               return other != unit && same_process(other, unit) && ctx_.times[holder].start < call.start;
                             });
  }

  /// The latest end a call that returned at `call.end` can have waited for (clock tolerance).
  TimeNs returned_by(const TaskTimes& call) const { return call.end + ctx_.options.contradiction_tolerance_ns; }

  bool same_process(UnitId a, UnitId b) const {
    return ctx_.graph.units()[a].process == ctx_.graph.units()[b].process;
  }

  // A lock is not an order: the call waits for the holder in the simulation only when the
  // holder's thread reached its call first (TaskHolds::lock_held_by), so no edge.
  void wait_for_lock(TaskId t, TaskId holder) {
    const TaskTimes& call = ctx_.times[t];
    TaskHolds holds = ctx_.graph.holds(t);
    holds.lock_held_by = holder;
    GraphAccess::set_holds(ctx_.graph, t, holds);
    GraphAccess::record(ctx_.graph, t).blocking = true;
    GraphAccess::set_duration(ctx_.graph, t, std::max<TimeNs>(0, call.end - std::max(call.start, ctx_.times[holder].end)));
    ctx_.count(stats::driver_lock_waits, ctx_.graph.task(t).source_event);
  }

  void wait_for_queue_slot(TaskId t, std::uint32_t position) {
    const TaskTimes& call = ctx_.times[t];
    if (call.end - call.start <= long_call_ns() || copy_call_waits_for_its_copy(position)) return;
    if (const TaskId holder = lock_holder(t); holder != kNoTask) return wait_for_lock(t, holder);
    // The latest-ending GPU task launched before this call (so it cannot depend on the call).
    const TaskId released_by =
        latest_end_within(gpu_ends_, call.end - ctx_.options.launch_queue_window_ns, returned_by(call),
                          [&](TimeNs end, TaskId task) { return end > call.start && launched_before(task, call.start); });
    if (released_by == kNoTask) return;
    add_sync(t, {released_by}, /*inferred=*/true, stats::launch_queue_waits);
  }

  /// A copy call may be long for its own copy: it blocks until a copy to pageable memory is done,
  /// or stages pageable source data (waiting for its stream first). Other copy calls (device to
  /// device, pinned) only queue their copy and are long for the same reasons as a kernel launch.
  bool copy_call_waits_for_its_copy(std::uint32_t position) const {
    const TraceEvent& call = ctx_.event(position);
    if (ctx_.role_of(call) != ApiRole::memcpy) return false;
    const auto name = ctx_.trace.name_of(call);
    const auto copies = ctx_.lookup(ctx_.gpu_by_correlation, call.correlation);
    if (copies.empty()) return true;
    const auto copy = ctx_.trace.name_of(ctx_.event(copies.front()));
    return cuda::copy_blocks_host(name, copy) || text::contains(copy, "Pageable");
  }

  bool launched_before(TaskId gpu_task, TimeNs time) const {
    const TaskId launcher = ctx_.launched_by[gpu_task];
    return launcher == kNoTask || ctx_.times[launcher].start < time;
  }

  TaskId last_launched_before(UnitId unit, TimeNs time) const {
    const auto& times = launch_times_[unit];
    const auto it = std::lower_bound(times.begin(), times.end(), time);
    if (it == times.begin()) return kNoTask;
    return ctx_.unit_tasks[unit][static_cast<std::size_t>(it - times.begin() - 1)];
  }

  TaskId first_launched_after(UnitId unit, TimeNs time) const {
    const auto& times = launch_times_[unit];
    const auto it = std::upper_bound(times.begin(), times.end(), time);
    if (it == times.end()) return kNoTask;
    return ctx_.unit_tasks[unit][static_cast<std::size_t>(it - times.begin())];
  }

  UnitId stream_unit(std::int64_t device, std::int64_t stream) const {
    auto it = stream_unit_.find({device, stream});
    return it == stream_unit_.end() ? BuildContext::kNoUnit : it->second;
  }

  const TraceEvent* sync_record(const TraceEvent& call) const {
    const auto records = ctx_.lookup(ctx_.sync_by_correlation, call.correlation);
    return records.empty() ? nullptr : &ctx_.event(records.front());
  }

  // Per task, the stream a CUDA call launched to (its first GPU record's), else kNoUnit; the
  // rules below ask it of every call several times.
  void index_launches() {
    launched_unit_.assign(ctx_.graph.num_tasks(), BuildContext::kNoUnit);
    for (TaskId t = 0; t < ctx_.graph.num_tasks(); ++t) {
      if (ctx_.graph.task(t).kind != TaskKind::runtime) continue;
      for (std::uint32_t p : ctx_.lookup(ctx_.gpu_by_correlation, ctx_.graph.task(t).correlation)) {
        if (ctx_.event_task[p] == kNoTask) continue;
        launched_unit_[t] = ctx_.graph.task(ctx_.event_task[p]).unit;
        break;
      }
    }
  }

  void walk_thread(const std::vector<TaskId>& tasks) {
    // The stream each task launched to (kNoUnit when none), and the next launch's from each index.
    std::vector<UnitId> launched(tasks.size()), next_launch(tasks.size() + 1, BuildContext::kNoUnit);
    for (std::size_t i = tasks.size(); i-- > 0;) {
      launched[i] = launched_unit_[tasks[i]];
      next_launch[i] = launched[i] != BuildContext::kNoUnit ? launched[i] : next_launch[i + 1];
    }
    UnitId last_launch = BuildContext::kNoUnit;
    RecordPoint last_record;
    // Only the streams the last thread launched to are reset: a pass per thread over every unit
    // made a trace of many threads quadratic.
    last_launch_on_.resize(ctx_.graph.units().size(), kNever);
    for (UnitId u : launched_to_) last_launch_on_[u] = kNever;
    launched_to_.clear();
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const TaskId t = tasks[i];
      if (ctx_.graph.task(t).kind != TaskKind::runtime) continue;
      const std::uint32_t position = ctx_.task_position[t];
      if (ctx_.api_wait_task[position] == t) {
        wait_for_copy(t, position);
        continue;
      }
      handle_call(t, position, last_launch, last_record, next_launch[i + 1]);
      if (launched[i] == BuildContext::kNoUnit) continue;
      wait_for_queue_slot(t, position);
      last_launch = launched[i];
      if (last_launch_on_[launched[i]] == kNever)  // in unit order, as a scan of all units finds them
        launched_to_.insert(std::upper_bound(launched_to_.begin(), launched_to_.end(), launched[i]), launched[i]);
      last_launch_on_[launched[i]] = ctx_.times[t].start;
    }
  }

  // Without a usable cudaEventRecord (NCCL records its events out of sight), the awaited event is
  // taken to be on the stream this thread launched to most recently, other than the waiting one.
  RecordPoint latest_other_stream(UnitId waiting_unit, TimeNs time) const {
    RecordPoint point;
    TimeNs latest = kNever;
    for (UnitId u : launched_to_) {
      if (u == waiting_unit || last_launch_on_[u] <= latest) continue;
      latest = last_launch_on_[u];
      point = {time, u, true};
    }
    return point;
  }

  void handle_call(TaskId t, std::uint32_t position, UnitId last_launch, RecordPoint& last_record,
                   UnitId next_launch) {
    const TraceEvent& call = ctx_.event(position);
    const TraceEvent* record = sync_record(call);
    switch (ctx_.role_of(call)) {
      case ApiRole::device_sync: return wait_for_device(t);
      case ApiRole::stream_sync: return wait_for_stream(t, record, last_launch);
      case ApiRole::event_sync: return wait_for_event(t, event_point(record, last_record));
      case ApiRole::stream_wait_event: return stream_wait(t, record, event_point(record, last_record), next_launch);
      case ApiRole::event_record: last_record = {ctx_.times[t].start, last_launch, true}; return;
      case ApiRole::memcpy:
        wait_for_unrecorded_copy(t, call, last_launch);
        return wait_for_staging_stream(t, call);
      default: return;
    }
  }

  // The recorded event named by a cuda_sync record, else the thread's last cudaEventRecord.
  RecordPoint event_point(const TraceEvent* record, const RecordPoint& last_record) const {
    if (!record || record->wait_record_correlation == kNone) return last_record;
    const auto calls = ctx_.lookup(ctx_.api_by_correlation, record->wait_record_correlation);
    const UnitId unit = stream_unit(ctx_.trace.lanes[record->lane].process, record->wait_on_stream);
    if (calls.empty() || unit == BuildContext::kNoUnit) return last_record;
    return {ctx_.times[ctx_.event_task[calls.front()]].start, unit, false};
  }

  void wait_for_device(TaskId t) {
    std::vector<TaskId> awaited;
    for (UnitId u : gpu_streams_) {
      const TaskId last = last_launched_before(u, ctx_.times[t].start);
      if (last != kNoTask) awaited.push_back(last);
    }
    add_sync(t, awaited, false);
  }

  /// A copy call whose copy the trace lost (CUPTI dropped the record) and that lasted as long as
  /// a wait: a device-to-host copy runs after the work before it on its stream, taken to be the
  /// stream this thread launched to last, so the call waited for that work (inferred).
  void wait_for_unrecorded_copy(TaskId t, const TraceEvent& call, UnitId last_launch) {
    if (!ctx_.lookup(ctx_.gpu_by_correlation, call.correlation).empty() || last_launch == BuildContext::kNoUnit) return;
    if (ctx_.times[t].end - ctx_.times[t].start <= long_call_ns()) return;
    const TaskId last = last_launched_before(last_launch, ctx_.times[t].start);
    if (last != kNoTask)
      add_sync(t, {last}, /*inferred=*/true, stats::copy_without_record_waits);
  }

  /// "If pageable memory must first be staged to pinned memory, the driver may synchronize with
  /// the stream and stage the copy" (CUDA API synchronisation rules): its staging buffers are
  /// reused once earlier pageable copies are done. A long call of a pageable copy that returned
  /// within launch_queue_window_ns after an earlier pageable copy of its device ended (one launched
  /// before the call) waited for it (inferred sync edge); the staging after it stays CPU time, and
  /// its own copy is queued when the call returns.
  void wait_for_staging_stream(TaskId t, const TraceEvent& call) {
    const auto copies = ctx_.lookup(ctx_.gpu_by_correlation, call.correlation);
    if (copies.empty() || ctx_.event_task[copies.front()] == kNoTask || !pageable(ctx_.event_task[copies.front()]))
      return;
    const TaskId copy = ctx_.event_task[copies.front()];
    const TaskTimes& times = ctx_.times[t];
    if (times.end - times.start <= long_call_ns()) return;
    const TaskId awaited = staging_released_by(t, copy);
    if (awaited == kNoTask) return;
    add_sync(t, {awaited}, /*inferred=*/true, stats::pageable_copy_staging_waits);
    queue_copy_at_return(t, copy);
  }

  bool pageable(TaskId task) const {
    return ctx_.graph.task(task).kind == TaskKind::memcpy && text::contains(ctx_.graph.name(task), "Pageable");
  }

  TaskId staging_released_by(TaskId call, TaskId copy) const {
    const TaskTimes& times = ctx_.times[call];
    return latest_end_within(gpu_ends_, times.end - ctx_.options.launch_queue_window_ns, returned_by(times),
                             [&](TimeNs end, TaskId candidate) {
                               return end > times.start && candidate != copy && pageable(candidate) &&
                                      launched_before(candidate, times.start) &&
                                      same_process(ctx_.graph.task(candidate).unit, ctx_.graph.task(copy).unit);
                             });
  }

  // The copy's launch edge measured its start from the call's start (staging inside the call);
  // once the call's wait is an edge, the copy starts after the call instead. Its delay is only
  // the part of its recorded start that neither the call's return nor its stream explains: a
  // copy queued behind a kernel of its stream waits for that kernel through the stream's edge.
  void queue_copy_at_return(TaskId call, TaskId copy) {
    TimeNs ready = ctx_.times[call].end;
    for (const auto& pred : ctx_.graph.predecessors(copy))
      if (pred.edge.type == EdgeType::gpu_sequential)
        ready = std::max(ready, ctx_.times[pred.task].end + pred.edge.delay_ns);
    for (const auto& pred : ctx_.graph.predecessors(copy)) {
      if (pred.task != call || pred.edge.type != EdgeType::launch) continue;
      Edge& launch = ctx_.graph.edge(call, copy);
      launch.timing = Timing::finish_to_start;
      launch.delay_ns = std::max<TimeNs>(0, ctx_.times[copy].start - ready);
    }
  }

  void wait_for_stream(TaskId t, const TraceEvent* record, UnitId last_launch) {
    UnitId unit = BuildContext::kNoUnit;
    if (record && record->sync_stream != kNone)
      unit = stream_unit(ctx_.trace.lanes[record->lane].process, record->sync_stream);
    const bool inferred = unit == BuildContext::kNoUnit;
    if (inferred) unit = last_launch;
    if (unit == BuildContext::kNoUnit) return;
    const TaskId last = last_launched_before(unit, ctx_.times[t].start);
    if (last != kNoTask) add_sync(t, {last}, inferred);
  }

  void wait_for_event(TaskId t, const RecordPoint& point) {
    if (point.inferred) {
      if (const TaskId completer = event_completed_by(t); completer != kNoTask)
        return add_sync(t, {completer}, /*inferred=*/true, stats::event_syncs_from_timing);
    }
    if (point.unit == BuildContext::kNoUnit) {
      ctx_.count(stats::event_sync_unresolved);
      return;
    }
    const TaskId last = last_launched_before(point.unit, point.time);
    if (last != kNoTask) add_sync(t, {last}, point.inferred);
  }

  /// The event sync counterpart of released_by. The thread's last cudaEventRecord is a guess
  /// (another thread may have recorded the event: DALI hands batches over that way), so a call
  /// that lasted as long as a wait is matched by timing: it waited for the latest-ending GPU task
  /// that ended within launch_queue_window_ns before it returned, still ran when it began, was
  /// launched before it to a device this thread uses, and where the trace has cudaEventRecord
  /// calls, was marked by one before the call (the last task launched to the recording thread's
  /// stream before the record): an event completes when the work recorded before it is done.
  TaskId event_completed_by(TaskId t) const {
    const TaskTimes& call = ctx_.times[t];
    if (call.end - call.start <= long_call_ns()) return kNoTask;
    const std::vector<std::int64_t> devices = devices_launched_to();
    return latest_end_within(gpu_ends_, call.end - ctx_.options.launch_queue_window_ns, returned_by(call),
                             [&](TimeNs end, TaskId candidate) {
                               const std::int64_t device = ctx_.graph.units()[ctx_.graph.task(candidate).unit].process;
                               return end > call.start && launched_before(candidate, call.start) &&
                                      recorded_before(candidate, call.start) &&
                                      std::find(devices.begin(), devices.end(), device) != devices.end();
                             });
  }

  bool recorded_before(TaskId gpu_task, TimeNs time) const {
    return first_record_at_.empty() || first_record_at_[gpu_task] < time;
  }

  /// The devices the thread being walked has launched to so far.
  std::vector<std::int64_t> devices_launched_to() const {
    std::vector<std::int64_t> devices;
    for (UnitId u : launched_to_) {
      const std::int64_t device = ctx_.graph.units()[u].process;
      if (std::find(devices.begin(), devices.end(), device) == devices.end())
        devices.push_back(device);
    }
    return devices;
  }

  // Per GPU task, the earliest cudaEventRecord (of any thread) whose event it completes: the
  // last task launched to the recording thread's latest stream before the record call. Left
  // empty when the trace has no cudaEventRecord calls (older Kineto builds drop them).
  void index_event_records() {
    for (UnitId u = 0; u < ctx_.graph.units().size(); ++u) {
      if (ctx_.graph.units()[u].kind != UnitKind::cpu_thread) continue;
      UnitId last_launch = BuildContext::kNoUnit;
      for (TaskId t : ctx_.unit_tasks[u]) {
        if (ctx_.graph.task(t).kind != TaskKind::runtime) continue;
        if (launched_unit_[t] != BuildContext::kNoUnit) last_launch = launched_unit_[t];
        // the role of the call the task came from (role_of classifies each distinct name once)
        if (last_launch == BuildContext::kNoUnit ||
            ctx_.role_of(ctx_.event(ctx_.task_position[t])) != ApiRole::event_record)
          continue;
        const TaskId marked = last_launched_before(last_launch, ctx_.times[t].start);
        if (marked == kNoTask) continue;
        if (first_record_at_.empty()) first_record_at_.assign(ctx_.graph.num_tasks(), std::numeric_limits<TimeNs>::max());
        first_record_at_[marked] = std::min(first_record_at_[marked], ctx_.times[t].start);
      }
    }
  }

  void wait_for_copy(TaskId wait, std::uint32_t position) {
    std::vector<TaskId> copies;
    for (std::uint32_t p : ctx_.lookup(ctx_.gpu_by_correlation, ctx_.event(position).correlation))
      if (ctx_.event_task[p] != kNoTask) copies.push_back(ctx_.event_task[p]);
    add_sync(wait, copies, false);
  }

  void add_sync(TaskId t, const std::vector<TaskId>& awaited, bool inferred) {
    add_sync(t, awaited, inferred, stats::sync_stream_inferred);
  }

  /// `inferred_stat` counts the edges when they are inferred.
  void add_sync(TaskId t, const std::vector<TaskId>& awaited, bool inferred, stats::Id inferred_stat) {
    if (awaited.empty()) return;
    TimeNs awaited_end = kNever;
    for (TaskId a : awaited) awaited_end = std::max(awaited_end, ctx_.times[a].end);
    const TaskTimes& call = ctx_.times[t];
    if (awaited_end > call.end + ctx_.options.contradiction_tolerance_ns) {
      ctx_.count(inferred ? stats::inferred_sync_contradicted : stats::sync_returned_before_gpu_end,
                 ctx_.graph.task(t).source_event);
      return;
    }
    for (TaskId a : awaited) {
      const EdgeType type = ctx_.graph.task(a).kind == TaskKind::communication ? EdgeType::communication : EdgeType::sync;
      ctx_.graph.add_edge(a, t, {type, Timing::finish_to_start, 0, inferred});
    }
    GraphAccess::record(ctx_.graph, t).blocking = true;
    GraphAccess::set_duration(ctx_.graph, t, std::max<TimeNs>(0, call.end - std::max(call.start, awaited_end)));
    if (inferred) ctx_.count(inferred_stat, ctx_.graph.task(t).source_event);
  }

  void stream_wait(TaskId t, const TraceEvent* record, const RecordPoint& point, UnitId next_launch) {
    UnitId waiting_unit = BuildContext::kNoUnit;
    if (record && record->sync_stream != kNone)
      waiting_unit = stream_unit(ctx_.trace.lanes[record->lane].process, record->sync_stream);
    const bool inferred = point.inferred || waiting_unit == BuildContext::kNoUnit;
    if (waiting_unit == BuildContext::kNoUnit) waiting_unit = next_launch;
    if (waiting_unit == BuildContext::kNoUnit) return;
    const RecordPoint event = point.unit == BuildContext::kNoUnit || point.unit == waiting_unit
                                  ? latest_other_stream(waiting_unit, ctx_.times[t].start)
                                  : point;
    const TaskId waiting = first_launched_after(waiting_unit, ctx_.times[t].start);
    if (waiting == kNoTask) return;
    const TaskId awaited = event.unit == BuildContext::kNoUnit ? kNoTask : last_launched_before(event.unit, event.time);
    if (point.inferred && (awaited == kNoTask || starts_before_end(waiting, awaited))) {
      if (const TaskId releaser = released_by(waiting, ctx_.times[t].start); releaser != kNoTask)
        return add_released_wait(releaser, waiting);
    }
    if (awaited != kNoTask) add_cross_stream(awaited, waiting, inferred);
  }

  bool starts_before_end(TaskId waiting, TaskId awaited) const {
    return ctx_.times[waiting].start < ctx_.times[awaited].end - ctx_.options.contradiction_tolerance_ns;
  }

  /// When the awaited cudaEventRecord is unknown (or the guess is contradicted), the timestamps
  /// can still show what the stream waited for: the waiting task was held (it started later than
  /// its launch and its stream allow) and began within one launch latency (the GPU front end's
  /// reaction time, calibrated on this trace) after a task on another stream of its device ended,
  /// a task launched before the wait call. That task is the latest such end.
  TaskId released_by(TaskId waiting, TimeNs wait_call) const {
    const TimeNs window = std::max(ctx_.options.contradiction_tolerance_ns, kernel_latency_ns());
    const TimeNs start = ctx_.times[waiting].start;
    if (!held_on_idle_stream(waiting, window)) return kNoTask;
    const UnitId waiting_unit = ctx_.graph.task(waiting).unit;
    return latest_end_within(gpu_ends_, start - window, start, [&](TimeNs, TaskId candidate) {
      const UnitId unit = ctx_.graph.task(candidate).unit;
      return unit != waiting_unit && same_process(unit, waiting_unit) && launched_before(candidate, wait_call);
    });
  }

  TimeNs kernel_latency_ns() const {
    return ctx_.graph.calibration().launch_latency_ns[static_cast<std::size_t>(TaskKind::kernel)];
  }

  /// Started more than `window` after both its launch call ended and its stream's previous task.
  bool held_on_idle_stream(TaskId waiting, TimeNs window) const {
    const TimeNs start = ctx_.times[waiting].start;
    const TaskId launcher = ctx_.launched_by[waiting];
    if (launcher == kNoTask || start - ctx_.times[launcher].end <= window) return false;
    const auto& stream = ctx_.unit_tasks[ctx_.graph.task(waiting).unit];
    // A stream runs one task at a time, so its tasks are sorted by start.
    const auto self = std::lower_bound(stream.begin(), stream.end(), start,
                                       [&](TaskId a, TimeNs time) { return ctx_.times[a].start < time; });
    return self == stream.begin() || start - ctx_.times[*std::prev(self)].end > window;
  }

  void add_released_wait(TaskId releaser, TaskId waiting) {
    ctx_.count(stats::stream_waits_from_timing, ctx_.graph.task(waiting).source_event);
    add_cross_stream(releaser, waiting, /*inferred=*/true);
  }

  void add_cross_stream(TaskId awaited, TaskId waiting, bool inferred) {
    if (ctx_.times[waiting].start < ctx_.times[awaited].end - ctx_.options.contradiction_tolerance_ns) {
      ctx_.count(stats::cross_stream_contradicted, ctx_.graph.task(waiting).source_event);
      return;
    }
    const bool comm = ctx_.graph.task(awaited).kind == TaskKind::communication ||
                      ctx_.graph.task(waiting).kind == TaskKind::communication;
    ctx_.graph.add_edge(awaited, waiting,
                        {comm ? EdgeType::communication : EdgeType::cross_stream, Timing::finish_to_start, 0, inferred});
    relax_stream_gap(awaited, waiting);
  }

  // When the wait explains the waiting task's late start, its stream gap was waiting, not overhead.
  void relax_stream_gap(TaskId awaited, TaskId waiting) {
    for (const auto& pred : ctx_.graph.predecessors(waiting)) {
      if (pred.edge.type != EdgeType::gpu_sequential) continue;
      Edge& seq = ctx_.graph.edge(pred.task, waiting);
      const TimeNs gap = ctx_.graph.calibration().gpu_gap_ns;
      if (ctx_.times[awaited].end >= ctx_.times[pred.task].end + gap) seq.delay_ns = std::min(seq.delay_ns, gap);
    }
  }

  BuildContext& ctx_;
  std::vector<std::vector<TimeNs>> launch_times_;
  std::map<std::pair<std::int64_t, std::int64_t>, UnitId> stream_unit_;
  std::vector<TimeNs> last_launch_on_;  // per unit: this thread's latest launch call to it
  std::vector<UnitId> launched_to_;     // the units it has launched to, in unit order
  std::vector<UnitId> gpu_streams_;     // every GPU stream, in unit order: not a pass over every unit per sync
  EndIndex gpu_ends_;       // (recorded end, task), sorted
  EndIndex long_call_ends_;  // (recorded end, runtime task), sorted
  std::vector<UnitId> launched_unit_;    // per task: the stream a CUDA call launched to, else kNoUnit
  std::vector<TimeNs> first_record_at_;  // per task; empty when the trace has no cudaEventRecord
  TimeNs median_launch_ns_ = 0;
};

}  // namespace

void build_sync_edges(BuildContext& ctx) { SyncBuilder(ctx).run(); }

}  // namespace daydream
