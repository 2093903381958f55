// cross_thread and cpu_sequential edges.
//
// PyTorch hands work between threads without recording it: the main thread calls backward() and
// sleeps while the autograd thread runs, then wakes when it is done. daydream infers such
// hand-offs: when an operator thread resumes after being idle for longer than
// GraphOptions::thread_idle_ns, the latest task on another operator thread that ended during the
// idle time (within GraphOptions::wake_window_ns of the resumption) is taken as what woke it.
// Threads that only make CUDA calls (the NCCL watchdog, callback threads) are background
// threads: they neither wake nor are woken.
//
// The cpu_sequential edge into a task keeps the recorded gap (CPU time no event covers: Python
// and framework overhead) unless a cross_thread edge explains the start; then the idle time was
// waiting and the gap becomes 0 while the cross_thread edge carries the wake-up latency.
#include <algorithm>
#include <limits>

#include "graph/build_context.hpp"

namespace daydream {
namespace {

bool has_operator_tasks(const BuildContext& ctx, UnitId u) {
  for (TaskId t : ctx.unit_tasks[u])
    if (ctx.graph.task(t).kind == TaskKind::cpu) return true;
  return false;
}

struct ThreadEnds {
  UnitId unit;
  std::vector<TimeNs> ends;  // recorded end of each task, in order (non-decreasing on a thread)
};

class CrossThreadInference {
 public:
  explicit CrossThreadInference(BuildContext& ctx) : ctx_(ctx) {
    for (UnitId u = 0; u < ctx.graph.units().size(); ++u) {
      if (ctx.graph.units()[u].kind != UnitKind::cpu_thread) continue;
      if (!has_operator_tasks(ctx, u)) {
        ctx.count("background_threads", Severity::info,
                  "CPU threads with CUDA calls but no operators (e.g. NCCL watchdog): no cross_thread edges");
        continue;
      }
      ThreadEnds t{u, {}};
      TimeNs running = std::numeric_limits<TimeNs>::min();
      for (TaskId task : ctx.unit_tasks[u]) t.ends.push_back(running = std::max(running, ctx.times[task].end));
      threads_.push_back(std::move(t));
    }
  }

  void run() {
    for (const auto& thread : threads_) infer_for(thread.unit);
  }

 private:
  void infer_for(UnitId unit) {
    const auto& tasks = ctx_.unit_tasks[unit];
    constexpr TimeNs kStart = std::numeric_limits<TimeNs>::min();
    TimeNs idle_since = kStart;
    for (TaskId t : tasks) {
      const TimeNs start = ctx_.times[t].start;
      if (idle_since == kStart || start - idle_since > ctx_.options.thread_idle_ns) link_waker(unit, t, idle_since);
      idle_since = std::max(idle_since, ctx_.times[t].end);
    }
  }

  void link_waker(UnitId unit, TaskId woken, TimeNs idle_since) {
    const TimeNs start = ctx_.times[woken].start;
    const TimeNs limit = start + ctx_.options.contradiction_tolerance_ns;
    TaskId waker = kNoTask;
    TimeNs waker_end = std::numeric_limits<TimeNs>::min();
    for (const auto& other : threads_) {
      if (other.unit == unit) continue;
      const auto it = std::upper_bound(other.ends.begin(), other.ends.end(), limit);
      if (it == other.ends.begin()) continue;
      const std::size_t i = static_cast<std::size_t>(it - other.ends.begin() - 1);
      const TaskId candidate = ctx_.unit_tasks[other.unit][i];
      const TimeNs end = ctx_.times[candidate].end;
      if (end > waker_end) waker = candidate, waker_end = end;
    }
    if (waker == kNoTask || waker_end < idle_since || start - waker_end > ctx_.options.wake_window_ns) return;
    const TimeNs latency = std::max<TimeNs>(0, start - waker_end);
    ctx_.graph.add_edge(waker, woken, {EdgeType::cross_thread, Timing::finish_to_start, latency, true});
    ctx_.woken[woken] = 1;
  }

  BuildContext& ctx_;
  std::vector<ThreadEnds> threads_;
};

}  // namespace

void build_cross_thread_edges(BuildContext& ctx) { CrossThreadInference(ctx).run(); }

void build_cpu_sequential_edges(BuildContext& ctx) {
  for (UnitId u = 0; u < ctx.graph.units().size(); ++u) {
    if (ctx.graph.units()[u].kind != UnitKind::cpu_thread) continue;
    const auto& tasks = ctx.unit_tasks[u];
    for (std::size_t i = 1; i < tasks.size(); ++i) {
      const TaskId prev = tasks[i - 1], next = tasks[i];
      const TimeNs gap = ctx.woken[next] ? 0 : std::max<TimeNs>(0, ctx.times[next].start - ctx.times[prev].end);
      ctx.graph.add_edge(prev, next, {EdgeType::cpu_sequential, Timing::finish_to_start, gap, false});
    }
  }
}

}  // namespace daydream
