// CPU threads -> tasks. Each thread's timeline is cut at every event boundary; each piece is a
// task owned by the innermost event covering it: a CUDA API call becomes a `runtime` task, the
// time an operator spends outside its children becomes a `cpu` task. Time no event covers stays
// as the gap (delay) of the cpu_sequential edge into the next task, so nothing is lost.
#include <algorithm>
#include <limits>
#include <unordered_map>

#include "common/cuda_api.hpp"
#include "common/nearly_sorted.hpp"
#include "common/text.hpp"
#include "graph/build_context.hpp"
#include "graph/task_context.hpp"
#include "graph/graph_access.hpp"

namespace daydream {

ApiRole api_role(std::string_view name) {
  using text::contains;
  if (contains(name, "Memcpy") || contains(name, "cuMemcpy")) return ApiRole::memcpy;
  if (name == "cudaDeviceSynchronize" || name == "cuCtxSynchronize" || name == "cudaFree" || name == "cuMemFree" ||
      name == "cuMemFree_v2")
    return ApiRole::device_sync;
  if (name == "cudaStreamSynchronize" || name == "cuStreamSynchronize") return ApiRole::stream_sync;
  if (name == "cudaEventSynchronize" || name == "cuEventSynchronize") return ApiRole::event_sync;
  if (name == "cudaStreamWaitEvent" || name == "cuStreamWaitEvent") return ApiRole::stream_wait_event;
  if (text::starts_with(name, "cudaEventRecord") || text::starts_with(name, "cuEventRecord"))
    return ApiRole::event_record;
  return ApiRole::other;
}

ApiRole BuildContext::role_of(const TraceEvent& call) const {
  if (call_role.size() <= call.name) call_role.resize(trace.strings.size(), 0);
  std::uint8_t& known = call_role[call.name];
  if (known == 0) known = static_cast<std::uint8_t>(api_role(trace.name_of(call))) + 1;
  return static_cast<ApiRole>(known - 1);
}

namespace {

/// Parents before children: earlier start, then longer, then ranges before API calls, then file
/// order; the event's position breaks what ties remain (events of one source index, from merged
/// files). A key per event, so that a sort compares keys rather than events.
struct NestingKey {
  TimeNs start;
  TimeNs longer_first;  // -duration (ingest keeps durations within 0..kMaxTaskDurationNs)
  std::uint64_t api_then_index;
  std::uint32_t position;

  static NestingKey of(const TraceEvent& e, std::uint32_t position) {
    const std::uint64_t api = is_api_call(e.kind) ? 1 : 0;
    return {e.start_ns, -e.duration_ns, (api << 32) | e.source_index, position};
  }
  bool operator<(const NestingKey& other) const {
    if (start != other.start) return start < other.start;
    if (longer_first != other.longer_first) return longer_first < other.longer_first;
    if (api_then_index != other.api_then_index) return api_then_index < other.api_then_index;
    return position < other.position;
  }
};

bool nesting_order(const TraceEvent& a, const TraceEvent& b) { return NestingKey::of(a, 0) < NestingKey::of(b, 0); }

struct OpenEvent {
  std::uint32_t position;
  TimeNs end;           // clamped to the parent's end
  TaskContext context;  // what it and the ranges around it say (task_context.hpp)
};

/// Cuts one thread's events into tasks.
class ThreadSegmenter {
 public:
  ThreadSegmenter(BuildContext& ctx, UnitId unit, const std::vector<std::uint32_t>& marks)
      : ctx_(ctx), unit_(unit), marks_(marks) {}

  void run(const std::vector<std::uint32_t>& positions) {
    for (std::uint32_t p : positions) visit(p);
    close_until(std::numeric_limits<TimeNs>::max());
    for (auto [nested, call] : folded_) ctx_.event_task[nested] = ctx_.event_task[call];
  }

 private:
  void visit(std::uint32_t position) {
    const TraceEvent& e = ctx_.event(position);
    close_until(e.start_ns);
    if (!stack_.empty() && is_api_call(ctx_.event(stack_.back().position).kind)) {
      ctx_.count(stats::event_inside_api_call, e.source_index);
      folded_.emplace_back(position, stack_.back().position);
      return;
    }
    TimeNs end = e.end_ns();
    if (!stack_.empty() && end > stack_.back().end) {
      ctx_.count(stats::overlapping_cpu_events, e.source_index);
      end = stack_.back().end;
    }
    if (!stack_.empty()) emit(stack_.back(), cursor_, e.start_ns);
    cursor_ = e.start_ns;
    TaskContext context = stack_.empty() ? TaskContext() : stack_.back().context;
    if (is_cpu_range(e.kind)) context.enter(e, ctx_.range_name(e));
    stack_.push_back({position, end, std::move(context)});
    if (is_cpu_range(e.kind))
      ctx_.ranges.push_back(
          {ctx_.name_of(e), unit_, ctx_.rel(e.start_ns), ctx_.rel(end), e.source_index});
  }

  void close_until(TimeNs time) {
    while (!stack_.empty() && stack_.back().end <= time) {
      const OpenEvent top = std::move(stack_.back());
      stack_.pop_back();
      emit(top, cursor_, top.end);
      cursor_ = std::max(cursor_, top.end);
    }
  }

  void emit(const OpenEvent& open, TimeNs begin, TimeNs end) {
    const std::uint32_t owner = open.position;
    const TraceEvent& e = ctx_.event(owner);
    if (is_api_call(e.kind)) return emit_api_call(open, begin, end);
    if (end <= begin) return;
    Task task;
    task.kind = TaskKind::cpu;
    task.name = ctx_.name_of(e);
    task.op_event = e.source_index;
    task.op_name = task.name;
    set_context(task, open, begin);
    add(task, owner, begin, end);
  }

  // Phase, layer and autograd sequence number from the ranges around the task (the owner
  // itself included), innermost first: see task_context.cpp. `daydream.layer:` marks are not
  // part of the nesting: they apply by interval, to every task of the thread that starts inside
  // them (backward marks open in one autograd node and close in a later one).
  void set_context(Task& task, const OpenEvent& owner, TimeNs begin) {
    while (next_mark_ < marks_.size() && ctx_.event(marks_[next_mark_]).start_ns <= begin)
      active_marks_.push_back(marks_[next_mark_++]);
    active_marks_.erase(std::remove_if(active_marks_.begin(), active_marks_.end(),
                                       [&](std::uint32_t m) { return ctx_.event(m).end_ns() <= begin; }),
                        active_marks_.end());
    const TaskContext& context = active_marks_.empty() ? owner.context : context_with_marks(owner);
    task.phase = context.phase();
    if (!context.layer_path().empty()) task.layer = layer_id(context.layer_path());
    pending_sequence_ = context.sequence_number();
  }

  /// The graph's string for a layer path: a thread's consecutive tasks mostly lie in one layer,
  /// so the last path is kept and compared before the graph's table is searched.
  std::uint32_t layer_id(const std::string& path) {
    if (path != last_layer_path_) last_layer_ = ctx_.graph.intern(path), last_layer_path_ = path;
    return last_layer_;
  }

  // With marks open, they take their places among the owner and its enclosing ranges by nesting
  // order (a mark may open inside an operator and close in a later one), so the context is built
  // again from all of them, outermost first.
  const TaskContext& context_with_marks(const OpenEvent& owner) {
    std::vector<std::uint32_t>& ranges = ranges_;  // innermost first
    ranges.clear();
    if (stack_.empty() || stack_.back().position != owner.position) ranges.push_back(owner.position);
    for (auto it = stack_.rbegin(); it != stack_.rend(); ++it) ranges.push_back(it->position);
    ranges.insert(ranges.end(), active_marks_.begin(), active_marks_.end());
    std::stable_sort(ranges.begin(), ranges.end(), [&](std::uint32_t a, std::uint32_t b) {
      return nesting_order(ctx_.event(b), ctx_.event(a));  // later start (inner) first
    });
    marked_context_ = TaskContext();
    for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) {
      const TraceEvent& e = ctx_.event(*it);
      if (is_cpu_range(e.kind)) marked_context_.enter(e, ctx_.range_name(e));
    }
    return marked_context_;
  }

  void emit_api_call(const OpenEvent& open, TimeNs begin, TimeNs end) {
    const std::uint32_t owner = open.position;
    const TraceEvent& e = ctx_.event(owner);
    Task task;
    task.kind = TaskKind::runtime;
    task.name = ctx_.name_of(e);
    task.correlation = e.correlation;
    set_operator(task);
    set_context(task, open, begin);
    const TimeNs issue = blocking_copy_issue_ns(owner, end - begin);
    if (issue < 0) {
      add(task, owner, begin, end);
      return;
    }
    add(task, owner, begin, begin + issue);
    Task wait = task;
    wait.name = ctx_.graph.intern(std::string(ctx_.trace.name_of(e)) + " (wait)");
    wait.blocking = true;
    ctx_.api_wait_task[owner] = add(wait, owner, begin + issue, end, /*first_piece=*/false);
  }

  // The innermost CPU range around the call is its operator.
  void set_operator(Task& task) const {
    for (auto it = stack_.rbegin(); it != stack_.rend(); ++it) {
      const TraceEvent& e = ctx_.event(it->position);
      if (!is_cpu_range(e.kind)) continue;
      task.op_event = e.source_index;
      task.op_name = ctx_.name_of(e);
      return;
    }
  }

  // A copy call that blocks the CPU until the copy is done is split in two: issuing the copy (at
  // most one launch latency long) and waiting for it. Per the CUDA API synchronisation rules,
  // cudaMemcpyAsync blocks only for device-to-pageable-host copies (host-to-device copies from
  // pageable memory return once the data is staged); synchronous cudaMemcpy also blocks for
  // device-to-host and pinned host-to-device copies. Returns the issuing part's length, or -1
  // when the call does not block.
  TimeNs blocking_copy_issue_ns(std::uint32_t owner, TimeNs duration) const {
    const TraceEvent& e = ctx_.event(owner);
    if (ctx_.role_of(e) != ApiRole::memcpy) return -1;
    const auto name = ctx_.trace.name_of(e);
    const auto copies = ctx_.lookup(ctx_.gpu_by_correlation, e.correlation);
    if (copies.empty()) return -1;
    if (!cuda::copy_blocks_host(name, ctx_.trace.name_of(ctx_.event(copies.front())))) return -1;
    const TimeNs latency = ctx_.graph.calibration().launch_latency_ns[static_cast<std::size_t>(TaskKind::memcpy)];
    return std::min(duration, latency);
  }

  // Fills in `task`'s times and place, then adds it: a copy of the caller's task, written field
  // by field a moment before, cost a stall per task (its wide loads cannot take the narrow stores).
  TaskId add(Task& task, std::uint32_t owner, TimeNs begin, TimeNs end, bool first_piece = true) {
    task.unit = unit_;
    task.duration_ns = end - begin;
    task.recorded_start_ns = ctx_.rel(begin);
    task.source_event = ctx_.event(owner).source_index;
    const TaskId id = ctx_.graph.add_task(task);
    ctx_.add_task_times(ctx_.rel(begin), ctx_.rel(end), owner);
    if (pending_sequence_ != kNone) ctx_.task_sequence.emplace_back(id, pending_sequence_);
    ctx_.unit_tasks[unit_].push_back(id);
    if (first_piece && ctx_.event_task[owner] == kNoTask) ctx_.event_task[owner] = id;
    return id;
  }

  BuildContext& ctx_;
  UnitId unit_;
  std::vector<OpenEvent> stack_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> folded_;  // (nested event, enclosing API call)
  std::int64_t pending_sequence_ = kNone;  // sequence number of the task being added
  const std::vector<std::uint32_t>& marks_;  // daydream.layer marks of this thread, in nesting order
  std::size_t next_mark_ = 0;
  std::vector<std::uint32_t> active_marks_;  // marks started and not ended at the last task's start
  std::vector<std::uint32_t> ranges_;        // context_with_marks's scratch
  TaskContext marked_context_;               // context_with_marks's result
  std::string last_layer_path_;              // layer_id's last path, and its string id
  std::uint32_t last_layer_ = 0;
  TimeNs cursor_ = 0;
};

bool is_layer_mark(const BuildContext& ctx, const TraceEvent& e) {
  return (e.kind == EventKind::user_annotation || e.kind == EventKind::cpu_op) &&
         text::starts_with(ctx.trace.name_of(e), "daydream.layer:");
}

/// Sorts `positions` (into `events`) by nesting order, on keys copied out of the events (a sort
/// that followed positions into the events array was a tenth of building a graph); `keys` is
/// scratch.
void sort_in_nesting_order(const std::vector<TraceEvent>& events, std::vector<std::uint32_t>& positions,
                           std::vector<NestingKey>& keys) {
  keys.clear();
  for (const std::uint32_t p : positions) keys.push_back(NestingKey::of(events[p], p));
  sort_nearly_sorted(keys);
  for (std::size_t i = 0; i < keys.size(); ++i) positions[i] = keys[i].position;
}

struct LaneEvents {
  std::vector<std::uint32_t> events;  // ranges and API calls, cut into tasks
  std::vector<std::uint32_t> marks;   // daydream.layer marks, applied by interval
};

std::vector<LaneEvents> cpu_events_by_lane(const BuildContext& ctx) {
  std::vector<LaneEvents> by_lane(ctx.trace.lanes.size());
  for (std::uint32_t i = 0; i < ctx.trace.events.size(); ++i) {
    const auto& e = ctx.trace.events[i];
    if (is_layer_mark(ctx, e)) by_lane[e.lane].marks.push_back(i);
    else if (is_cpu_range(e.kind) || is_api_call(e.kind)) by_lane[e.lane].events.push_back(i);
  }
  std::vector<NestingKey> keys;
  for (auto& lane : by_lane) {
    for (auto* positions : {&lane.events, &lane.marks}) sort_in_nesting_order(ctx.trace.events, *positions, keys);
  }
  return by_lane;
}

}  // namespace

namespace {

// Backward work runs on the autograd thread, outside the forward ranges that name layers. Its
// operators carry the sequence number of the forward operator they differentiate: backward
// tasks without a layer take the layer of the forward tasks with the same sequence number.
void layers_from_forward_ops(BuildContext& ctx) {
  std::unordered_map<std::int64_t, std::uint32_t> forward_layer;
  for (const auto& [task, sequence] : ctx.task_sequence) {
    const Task& t = ctx.graph.task(task);
    if (t.phase == Phase::forward && t.layer != 0) forward_layer.emplace(sequence, t.layer);
  }
  for (const auto& [task, sequence] : ctx.task_sequence) {
    const Task current = ctx.graph.task(task);
    if (current.phase != Phase::backward || current.layer != 0) continue;
    detail::TaskRecord& t = GraphAccess::record(ctx.graph, task);
    if (auto it = forward_layer.find(sequence); it != forward_layer.end()) {
      t.layer = it->second;
      ctx.count(stats::layers_from_forward_ops, t.source_event);
    }
  }
}

}  // namespace

void build_cpu_tasks(BuildContext& ctx) {
  const auto by_lane = cpu_events_by_lane(ctx);
  for (std::uint32_t lane = 0; lane < by_lane.size(); ++lane) {
    if (!by_lane[lane].events.empty())
      ThreadSegmenter(ctx, ctx.unit_for_lane(lane, UnitKind::cpu_thread), by_lane[lane].marks).run(by_lane[lane].events);
  }
  layers_from_forward_ops(ctx);
}

}  // namespace daydream
