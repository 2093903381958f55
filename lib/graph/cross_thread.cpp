// cross_thread and cpu_sequential edges.
//
// PyTorch hands work between threads without recording it: the main thread calls backward() and
// sleeps while the autograd thread runs, then wakes when it is done. daydream infers such
// hand-offs: when a worker thread resumes after being idle for longer than
// GraphOptions::thread_idle_ns, the latest task on another worker thread that ended during the
// idle time (within GraphOptions::wake_window_ns of the resumption) is taken as what woke it,
// unless a hand-off (a task after which its own thread went idle) ended less than thread_idle_ns
// before that task: a busy thread always has a task ending just before any resumption.
// Worker threads are those with operator or annotation tasks, or that launch GPU work (an
// autograd or DALI thread in an Nsight profile has only CUDA calls). Threads that only make
// CUDA calls without launching anything (the NCCL watchdog, callback threads) are background
// threads: they neither wake nor are woken.
//
// Where the trace records the thread's scheduling (Nsight SCHED_EVENTS), an idle stretch is a
// wait only if the thread was switched out in it: the resumption is its last switch-in there, and
// a stretch in which it kept running is CPU work (Python) kept as a delay. A wait whose waker is
// not in the trace (a DataLoader worker process, a timer) stays a delay too, counted in the
// import report with its off-CPU time (`unexplained_waits`); without scheduling data, long gaps
// without a waker are counted as `unexplained_gaps`.
//
// The same holds inside an operator or annotation: the main thread's wait for backward is
// recorded as time owned by `ProfilerStep#N`. A CPU segment longer than thread_idle_ns during
// which another worker thread's task ended (within wake_window_ns of the segment's end, or of
// its last switch-in) is taken as a wait for it: it gets a cross_thread edge, and its duration
// shrinks to the time after the waker ended, as a blocking CUDA call's does.
//
// The cpu_sequential edge into a task keeps the recorded gap (CPU time no event covers: Python
// and framework overhead) unless a cross_thread edge explains the start; then the idle time was
// waiting and the gap becomes 0 while the cross_thread edge carries the wake-up latency.
#include <algorithm>
#include <limits>
#include <optional>

#include "graph/build_context.hpp"
#include "graph/graph_access.hpp"

namespace daydream {

std::optional<TimeNs> ThreadSchedule::last_switch_in(TimeNs from, TimeNs to) const {
  // The stretches are disjoint and sorted, so their ends are sorted too.
  auto it = std::upper_bound(off.begin(), off.end(), to, [](TimeNs t, const auto& o) { return t < o.second; });
  if (it == off.begin()) return std::nullopt;
  const TimeNs in = std::prev(it)->second;
  return in > from ? std::optional<TimeNs>(in) : std::nullopt;
}

TimeNs ThreadSchedule::off_cpu_within(TimeNs from, TimeNs to) const {
  TimeNs total = 0;
  auto it = std::upper_bound(off.begin(), off.end(), from, [](TimeNs t, const auto& o) { return t < o.second; });
  for (; it != off.end() && it->first < to; ++it) total += std::min(to, it->second) - std::max(from, it->first);
  return total;
}

namespace {

/// Per unit, its off-CPU stretches from the trace (relative to the origin).
std::vector<ThreadSchedule> thread_schedules(const BuildContext& ctx) {
  std::vector<ThreadSchedule> schedules(ctx.graph.units().size());
  for (std::uint32_t lane : ctx.trace.scheduled_lanes)
    if (ctx.lane_unit[lane] != BuildContext::kNoUnit) schedules[ctx.lane_unit[lane]].known = true;
  for (const OffCpuInterval& o : ctx.trace.off_cpu) {
    const UnitId unit = ctx.lane_unit[o.lane];
    if (unit != BuildContext::kNoUnit) schedules[unit].off.emplace_back(ctx.rel(o.start_ns), ctx.rel(o.end_ns));
  }
  return schedules;
}

bool has_operator_tasks(const BuildContext& ctx, UnitId u) {
  for (TaskId t : ctx.unit_tasks[u])
    if (ctx.graph.task(t).kind == TaskKind::cpu) return true;
  return false;
}

/// Per unit: whether one of its calls launched GPU work in the trace.
std::vector<std::uint8_t> launching_units(const BuildContext& ctx) {
  std::vector<std::uint8_t> launches(ctx.graph.units().size(), 0);
  for (TaskId launcher : ctx.launched_by)
    if (launcher != kNoTask) launches[ctx.graph.task(launcher).unit] = 1;
  return launches;
}

/// Every task end of the worker threads in one sorted list, to answer "the latest task on
/// another thread that ended by time t" in O(log n) for any number of threads (scanning each
/// thread per wake-up made 8,000 threads take seconds, x4 per doubling).
class TaskEnds {
 public:
  void reserve(std::size_t entries) { entries_.reserve(entries); }

  /// Adds thread `unit`'s tasks (in order); `end` is the running maximum of their recorded ends.
  void add(UnitId unit, TaskId task, TimeNs end) {
    if (entries_.empty() || entries_.back().unit != unit) runs_.push_back(entries_.size());
    entries_.push_back({end, static_cast<std::uint32_t>(entries_.size()), unit, task});
  }

  /// Sorts the entries: by end, then (equal ends) so that the last of them belongs to the
  /// lowest unit and is its latest task: the choice of a scan of the threads in unit order.
  /// Each thread's entries already are in that order (running ends), so the threads' runs are
  /// merged pairwise: O(n log threads), not a sort of every entry.
  void seal() {
    const auto before = [](const Entry& a, const Entry& b) {
      if (a.end != b.end) return a.end < b.end;
      if (a.unit != b.unit) return a.unit > b.unit;
      return a.added < b.added;
    };
    runs_.push_back(entries_.size());
    for (std::size_t width = 1; width + 1 < runs_.size(); width *= 2)
      for (std::size_t r = 0; r + width + 1 < runs_.size(); r += 2 * width) {
        const auto at = [&](std::size_t run) { return entries_.begin() + static_cast<std::ptrdiff_t>(runs_[run]); };
        std::inplace_merge(at(r), at(r + width), at(std::min(r + 2 * width, runs_.size() - 1)), before);
      }
    other_before_.resize(entries_.size());
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      if (i == 0) other_before_[i] = kNone;
      else if (entries_[i - 1].unit != entries_[i].unit) other_before_[i] = static_cast<std::int64_t>(i) - 1;
      else other_before_[i] = other_before_[i - 1];
    }
  }

  /// The task with the latest end at or before `limit` on a thread other than `unit`, or kNoTask.
  TaskId latest_before(UnitId unit, TimeNs limit) const {
    const auto it = std::upper_bound(entries_.begin(), entries_.end(), limit,
                                     [](TimeNs t, const Entry& e) { return t < e.end; });
    if (it == entries_.begin()) return kNoTask;
    auto i = static_cast<std::int64_t>(it - entries_.begin()) - 1;
    if (entries_[static_cast<std::size_t>(i)].unit == unit) i = other_before_[static_cast<std::size_t>(i)];
    return i == kNone ? kNoTask : entries_[static_cast<std::size_t>(i)].task;
  }

 private:
  struct Entry {
    TimeNs end;
    std::uint32_t added;  // the entry's place in the order added (a thread's tasks in its order)
    UnitId unit;
    TaskId task;
  };
  std::vector<Entry> entries_;
  std::vector<std::size_t> runs_;  // where each thread's entries begin (then, once sealed, the end)
  std::vector<std::int64_t> other_before_;  // per entry: the last earlier entry of another thread
};

class CrossThreadInference {
 public:
  explicit CrossThreadInference(BuildContext& ctx) : ctx_(ctx) {
    const auto launches = launching_units(ctx);
    std::size_t thread_tasks = 0;  // an upper bound of ends_, which would otherwise grow by copies
    for (UnitId u = 0; u < ctx.graph.units().size(); ++u)
      if (ctx.graph.units()[u].kind == UnitKind::cpu_thread) thread_tasks += ctx.unit_tasks[u].size();
    ends_.reserve(thread_tasks);
    for (UnitId u = 0; u < ctx.graph.units().size(); ++u) {
      if (ctx.graph.units()[u].kind != UnitKind::cpu_thread) continue;
      if (!has_operator_tasks(ctx, u) && !launches[u]) {
        ctx.graph.unit(u).background = true;
        ctx.count(stats::background_threads);
        continue;
      }
      add_thread_ends(u);
      threads_.push_back(u);
    }
    ends_.seal();
    handoff_ends_.seal();
  }

  void run() {
    for (UnitId unit : threads_) infer_for(unit);
  }

 private:
  void infer_for(UnitId unit) {
    constexpr TimeNs kStart = std::numeric_limits<TimeNs>::min();
    TimeNs idle_since = kStart;
    for (TaskId t : ctx_.unit_tasks[unit]) {
      const TaskTimes& times = ctx_.times[t];
      if (idle_since == kStart || times.start - idle_since > ctx_.options.thread_idle_ns)
        wake_after_gap(unit, t, idle_since);
      else if (ctx_.graph.task(t).kind == TaskKind::cpu && times.end - times.start > ctx_.options.thread_idle_ns)
        wake_inside_segment(unit, t);
      idle_since = std::max(idle_since, times.end);
    }
  }

  /// Adds thread `u`'s task ends, and separately those after which it went idle (hand-offs).
  void add_thread_ends(UnitId u) {
    const auto& tasks = ctx_.unit_tasks[u];
    TimeNs running = std::numeric_limits<TimeNs>::min();
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      running = std::max(running, ctx_.times[tasks[i]].end);
      ends_.add(u, tasks[i], running);
      if (goes_idle_after(u, running, i + 1 < tasks.size() ? ctx_.times[tasks[i + 1]].start : kNever))
        handoff_ends_.add(u, tasks[i], running);
    }
  }

  /// Whether thread `u`, done with its work at `end`, went idle before its next task at `next`:
  /// no event for longer than thread_idle_ns and, where its scheduling is known, switched out.
  bool goes_idle_after(UnitId u, TimeNs end, TimeNs next) const {
    if (next != kNever && next - end <= ctx_.options.thread_idle_ns) return false;
    const ThreadSchedule& schedule = ctx_.schedules[u];
    return !schedule.known || schedule.off_cpu_within(end, next == kNever ? end + ctx_.options.wake_window_ns : next) > 0;
  }

  /// What woke a thread of `unit` that resumed at `resumed`, and whether the hand-off rule chose it.
  struct Waker {
    TaskId task = kNoTask;
    bool handoff = false;
  };

  /// The latest task on another worker thread that ended at or before `resumed` (within the
  /// tolerance), no earlier than `earliest` and within wake_window_ns; none when it is not. A
  /// busy thread (launching a call every few us) has a task that ended just before almost any
  /// resumption, so when a hand-off (a task after which its thread went idle: a DALI stage done
  /// with its batch, the autograd thread done with backward) ended less than thread_idle_ns before
  /// that latest task, the two are as close as a wake-up's latency and the hand-off is taken: a
  /// thread that goes idle has finished the work someone waited for.
  Waker waker_before(UnitId unit, TimeNs resumed, TimeNs earliest) const {
    const TimeNs limit = resumed + ctx_.options.contradiction_tolerance_ns;
    const auto plausible = [&](TaskId t) {
      return t != kNoTask && ctx_.times[t].end >= earliest && resumed - ctx_.times[t].end <= ctx_.options.wake_window_ns;
    };
    const TaskId latest = ends_.latest_before(unit, limit);
    if (!plausible(latest)) return {};
    const TaskId handoff = handoff_ends_.latest_before(unit, limit);
    if (handoff == latest || !plausible(handoff) ||
        ctx_.times[latest].end - ctx_.times[handoff].end >= ctx_.options.thread_idle_ns)
      return {latest, false};
    return {handoff, true};
  }

  /// Counts a cross_thread edge the hand-off rule decided.
  void count_handoff(const Waker& waker) {
    if (waker.handoff) ctx_.count(stats::wakers_by_handoff, ctx_.graph.task(waker.task).source_event);
  }

  /// When the thread resumed in (from, to]: its last switch-in there, `to` itself without
  /// scheduling data, or nothing when it kept running (the stretch was CPU work, not a wait).
  std::optional<TimeNs> resumption(UnitId unit, TimeNs from, TimeNs to) const {
    const ThreadSchedule& schedule = ctx_.schedules[unit];
    if (!schedule.known) return to;
    // The switch-in that let the thread record its next event can carry a later timestamp than
    // that event by a few hundred ns (two clocks): within the tolerance it still counts.
    const auto switched_in = schedule.last_switch_in(from, to + ctx_.options.contradiction_tolerance_ns);
    if (!switched_in) return std::nullopt;
    return std::min(*switched_in, to);
  }

  void wake_after_gap(UnitId unit, TaskId woken, TimeNs idle_since) {
    const TimeNs start = ctx_.times[woken].start;
    const auto resumed = resumption(unit, idle_since, start);
    if (!resumed) return;
    const Waker waker = waker_before(unit, *resumed, idle_since);
    if (waker.task == kNoTask) return;
    const TimeNs latency = std::max<TimeNs>(0, start - ctx_.times[waker.task].end);
    ctx_.graph.add_edge(waker.task, woken, {EdgeType::cross_thread, Timing::finish_to_start, latency, true});
    ctx_.woken[woken] = 1;
    count_handoff(waker);
  }

  void wake_inside_segment(UnitId unit, TaskId segment) {
    const TaskTimes& times = ctx_.times[segment];
    const auto resumed = resumption(unit, times.start, times.end);
    if (!resumed) return;
    const Waker waker = waker_before(unit, *resumed, times.start + 1);  // a waker ends inside the segment
    if (waker.task == kNoTask) return;
    const TimeNs waker_end = ctx_.times[waker.task].end;
    if (waker_end > times.end) return drop_contradicted(segment);
    ctx_.graph.add_edge(waker.task, segment, {EdgeType::cross_thread, Timing::finish_to_start, 0, true});
    count_handoff(waker);
    GraphAccess::set_duration(ctx_.graph, segment, std::max<TimeNs>(0, times.end - std::max(times.start, waker_end)));
    ctx_.count(stats::waits_inside_cpu_ranges, ctx_.graph.task(segment).source_event);
  }

  // A segment that ended before its candidate waker did cannot have waited for it (the wait is
  // its time before the waker's end; CPU threads share one clock, so there is no skew to allow).
  // Accepted within the tolerance, two overlapping ranges on two threads ending < 2 us apart
  // (a DALI operator and the main thread's `forward`) each waited for the other: a cycle.
  void drop_contradicted(TaskId segment) {
    ctx_.count(stats::cross_thread_contradicted, ctx_.graph.task(segment).source_event);
  }

  BuildContext& ctx_;
  static constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

  std::vector<UnitId> threads_;  // the worker threads
  TaskEnds ends_;                // every task end of the worker threads
  TaskEnds handoff_ends_;        // the ends after which a worker thread went idle
};

}  // namespace

void build_cross_thread_edges(BuildContext& ctx) {
  ctx.schedules = thread_schedules(ctx);
  CrossThreadInference(ctx).run();
}

namespace {

/// A long gap kept as a delay: counted, with the time the thread was off CPU in it (scheduling
/// data) or the whole gap (none), so that `stats` shows how much of the run no dependency explains.
void count_kept_gap(BuildContext& ctx, UnitId unit, TaskId next, TimeNs from, TimeNs to) {
  if (to - from <= ctx.options.thread_idle_ns || ctx.graph.units()[unit].background) return;
  const ThreadSchedule& schedule = ctx.schedules[unit];
  const std::int64_t event = ctx.graph.task(next).source_event;
  if (!schedule.known) {
    ctx.graph.report().count_time(stats::unexplained_gaps, to - from, event);
    return;
  }
  const TimeNs off = schedule.off_cpu_within(from, to);
  if (off > ctx.options.thread_idle_ns)
    ctx.graph.report().count_time(stats::unexplained_waits, off, event);
}

}  // namespace

void build_cpu_sequential_edges(BuildContext& ctx) {
  for (UnitId u = 0; u < ctx.graph.units().size(); ++u) {
    if (ctx.graph.units()[u].kind != UnitKind::cpu_thread) continue;
    const auto& tasks = ctx.unit_tasks[u];
    TimeNs busy_until = tasks.empty() ? 0 : ctx.times[tasks.front()].end;
    for (std::size_t i = 1; i < tasks.size(); ++i) {
      const TaskId prev = tasks[i - 1], next = tasks[i];
      const TimeNs gap = ctx.woken[next] ? 0 : std::max<TimeNs>(0, ctx.times[next].start - ctx.times[prev].end);
      if (!ctx.woken[next]) count_kept_gap(ctx, u, next, busy_until, ctx.times[next].start);
      busy_until = std::max(busy_until, ctx.times[next].end);
      ctx.graph.add_edge(prev, next, {EdgeType::cpu_sequential, Timing::finish_to_start, gap, false});
    }
  }
}

}  // namespace daydream
