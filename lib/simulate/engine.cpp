// The discrete-event engine. The graph is first compiled into flat arrays (CSR successor
// lists) so the event loop touches only contiguous memory; all state lives in one Engine
// object, so many simulations can run at once on different threads.
//
// GPU occupancy (docs/simulator.md): SM work that the trace shows held back by another
// stream's kernel filling the GPU waits, when that kernel started first, until it lets the
// work in at the same share of its simulated duration; the GPU unit stays idle meanwhile and
// is woken then.
//
// The CUDA driver lock (docs/simulator.md): a call the trace shows blocked on another thread's
// call (TaskHolds::lock_held_by) waits for that call's end when that call's thread reached it before
// this one was dispatched: the lock's owner is whoever came first, as under a what-if it may
// not be the recorded one.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <queue>
#include <unordered_map>

#include "daydream/error.hpp"
#include "daydream/simulate.hpp"
#include "simulate/compiled_graph.hpp"

namespace daydream {

double TraceOrderPolicy::priority(const Graph& graph, TaskId task) const {
  return static_cast<double>(graph.task(task).recorded_start_ns);
}

namespace sim {
namespace {

enum class EventType : std::uint8_t { task_end = 0, task_ready = 1, unit_wake = 2 };

struct Event {
  TimeNs time;
  std::uint64_t sequence;
  TaskId task;  // the unit, for unit_wake
  EventType type;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : sequence > o.sequence; }
};

struct ReadyEntry {
  TimeNs ready_time;  // 0 unless the policy orders by ready time
  double priority;
  TaskId task;
  bool operator>(const ReadyEntry& o) const {
    if (ready_time != o.ready_time) return ready_time > o.ready_time;
    return priority != o.priority ? priority > o.priority : task > o.task;
  }
};

template <class T> using MinHeap = std::priority_queue<T, std::vector<T>, std::greater<T>>;

class Engine {
 public:
  Engine(const Graph& graph, CompiledGraph compiled)
      : graph_(graph), c_(std::move(compiled)), n_(c_.duration.size()), queues_(graph.units().size()),
        busy_(graph.units().size(), 0), pending_flag_(graph.units().size(), 0),
        last_on_unit_(graph.units().size(), kNoTask) {
    r_.start_ns.assign(n_, kUnset);
    r_.end_ns.assign(n_, kUnset);
    r_.binding.assign(n_, kNoTask);
    r_.cause.assign(n_, StartCause::release);
    r_.units.assign(graph.units().size(), UnitUsage{});
    remaining_ = c_.edges->in_degrees();
    ready_at_.assign(n_, kUnset);
    if (c_.occupancy) held_since_.assign(n_, kUnset);
    if (c_.locks) lock_wait_since_.assign(n_, kUnset);
  }

  SimulationResult run() {
    for (TaskId t = 0; t < n_; ++t) {
      if (remaining_[t] != 0 || c_.removed[t]) continue;
      ready_at_[t] = c_.release[t];
      push(c_.release[t], t, EventType::task_ready);
    }
    // All events of one instant are applied before any idle unit chooses, so a schedule policy
    // sees every task that is ready at that instant. Dispatching can make more tasks ready at the
    // same instant (zero-delay start-to-start edges), hence the inner loop.
    while (!events_.empty()) {
      const TimeNs now = events_.top().time;
      if (now >= kMaxTraceTimeNs) throw_clock_overflow(events_.top());
      while (!events_.empty() && events_.top().time == now) {
        while (!events_.empty() && events_.top().time == now) {
          const Event e = events_.top();
          events_.pop();
          ++r_.events_processed;
          if (e.type == EventType::task_ready) on_ready(e.task);
          else if (e.type == EventType::task_end) on_end(e.time, e.task);
          else mark_pending(e.task);
        }
        dispatch_pending(now);
      }
    }
    check_all_ran();
    complete_result(graph_, c_, r_);
    return std::move(r_);
  }

 private:
  [[noreturn]] void throw_clock_overflow(const Event& e) const {
    const std::string at = e.type == EventType::unit_wake ? "unit " + graph_.units()[e.task].name
                                                          : fmt::format("task {} '{}'", e.task, graph_.name(e.task));
    throw_out_of_range("the simulated clock at " + at, e.time, "2^62 ns");
  }

  void push(TimeNs time, TaskId task, EventType type) { events_.push({time, sequence_++, task, type}); }

  void on_ready(TaskId t) {
    const UnitId u = c_.unit[t];
    queues_[u].push({c_.by_ready_time ? ready_at_[t] : 0, c_.priority[t], t});
    mark_pending(u);
  }

  void on_end(TimeNs now, TaskId t) {
    const UnitId u = c_.unit[t];
    busy_[u] = 0;
    release_successors(t, now, /*at_start=*/false);
    mark_pending(u);
  }

  void mark_pending(UnitId u) {
    if (pending_flag_[u]) return;
    pending_flag_[u] = 1;
    pending_.push_back(u);
  }

  // Idle units with ready tasks start one, in unit order (deterministic).
  void dispatch_pending(TimeNs now) {
    std::sort(pending_.begin(), pending_.end());
    for (UnitId u : pending_) {
      pending_flag_[u] = 0;
      if (!busy_[u] && !queues_[u].empty()) dispatch(u, now);
    }
    pending_.clear();
  }

  void dispatch(UnitId u, TimeNs now) {
    const TaskId t = queues_[u].top().task;
    if (c_.occupancy && held_by_occupancy(u, t, now)) return;
    if (c_.locks && held_by_lock(u, t, now)) return;
    queues_[u].pop();
    busy_[u] = 1;
    if (now > ready_at_[t]) {
      r_.cause[t] = StartCause::unit_busy;
      r_.binding[t] = last_on_unit_[u];
    } else if (r_.binding[t] != kNoTask) {
      r_.cause[t] = StartCause::dependency;
    }
    if (c_.occupancy) count_wait(held_since_, t, now, c_.held_by[t], r_.occupancy_holds, r_.occupancy_hold_ns);
    if (c_.locks) count_wait(lock_wait_since_, t, now, c_.lock_holder[t], r_.lock_waits, r_.lock_wait_ns);
    last_on_unit_[u] = t;
    r_.start_ns[t] = now;
    r_.end_ns[t] = now + c_.duration[t];
    if (c_.locks) wake_lock_waiters(t);
    push(r_.end_ns[t], t, EventType::task_end);
    release_successors(t, now, /*at_start=*/true);
  }

  // --- GPU occupancy ---

  /// Whether SM work must wait for the kernel of another stream that the trace shows holding it
  /// (TaskHolds::sm_held_by): when that kernel started first and has not yet reached the share of
  /// its duration at which it let the work in, the unit is woken then.
  bool held_by_occupancy(UnitId u, TaskId t, TimeNs now) {
    const TaskId big = c_.held_by[t];
    if (big == kNoTask || r_.start_ns[big] == kUnset) return false;
    const TimeNs let_in = r_.start_ns[big] + std::llround(static_cast<double>(c_.duration[big]) * c_.let_in[t]);
    if (let_in <= now) return false;
    if (held_since_[t] == kUnset) held_since_[t] = now;
    push(let_in, u, EventType::unit_wake);
    return true;
  }

  /// A task a model held back since `since[t]` (kUnset: never): counted in (count, total) and
  /// bound to the task that let it go.
  void count_wait(const std::vector<TimeNs>& since, TaskId t, TimeNs now, TaskId holder, std::int64_t& count,
                  TimeNs& total) {
    if (since[t] == kUnset) return;
    ++count;
    total += now - since[t];
    r_.cause[t] = StartCause::dependency;
    r_.binding[t] = holder;
  }

  // --- the driver lock ---

  /// Whether call t must wait for the call holding the driver (TaskHolds::lock_held_by): that call's
  /// thread reached it before now and it has not ended. Its unit is woken at that call's end,
  /// known once that call is dispatched.
  bool held_by_lock(UnitId u, TaskId t, TimeNs now) {
    const TaskId holder = c_.lock_holder[t];
    if (holder == kNoTask || (r_.end_ns[holder] != kUnset && r_.end_ns[holder] <= now)) return false;
    const TimeNs arrival = holder_arrival(holder);
    if (arrival == kUnset || arrival >= now) return false;  // this call came first and takes the lock
    const bool first_wait = lock_wait_since_[t] == kUnset;
    if (first_wait) lock_wait_since_[t] = now;
    if (r_.end_ns[holder] != kUnset) push(r_.end_ns[holder], u, EventType::unit_wake);
    else if (first_wait) lock_waiters_[holder].push_back(u);
    return true;
  }

  /// When the holder's thread reached its call: the end of the task before it on its thread
  /// plus their gap, or the call's own start when it has none; kUnset while not yet known.
  TimeNs holder_arrival(TaskId holder) const {
    const TaskId previous = c_.thread_previous[holder];
    if (previous == kNoTask) return r_.start_ns[holder];
    return r_.end_ns[previous] == kUnset ? kUnset : r_.end_ns[previous] + c_.thread_gap[holder];
  }

  void wake_lock_waiters(TaskId holder) {
    const auto waiting = lock_waiters_.find(holder);
    if (waiting == lock_waiters_.end()) return;
    for (UnitId u : waiting->second) push(r_.end_ns[holder], u, EventType::unit_wake);
    lock_waiters_.erase(waiting);
  }

  void release_successors(TaskId t, TimeNs now, bool at_start) {
    const EdgeTable& e = *c_.edges;
    for (auto i = e.first[t]; i < e.first[t + 1]; ++i) {
      if ((e.start_to_start[i] != 0) != at_start) continue;
      const TaskId next = e.target[i];
      const TimeNs time = now + e.delay_ns[i];
      if (time > ready_at_[next]) {
        ready_at_[next] = time;
        r_.binding[next] = t;
      }
      if (--remaining_[next] == 0) push(ready_at_[next], next, EventType::task_ready);
    }
  }

  void check_all_ran() const {
    std::vector<TaskId> stuck;
    for (TaskId t = 0; t < n_ && stuck.size() < 5; ++t)
      if (r_.start_ns[t] == kUnset && !c_.removed[t]) stuck.push_back(t);
    if (stuck.empty()) return;
    std::string names;
    for (TaskId t : stuck) names += fmt::format("{}{} '{}'", names.empty() ? "" : ", ", t, graph_.name(t));
    const auto cycle = graph_.find_cycle();
    std::string why = cycle.empty() ? "" : fmt::format(" (cycle through task {} '{}')", cycle.front(), graph_.name(cycle.front()));
    throw Error(fmt::format("simulation stalled: tasks never became ready{}: {}", why, names));
  }

  const Graph& graph_;
  CompiledGraph c_;
  std::size_t n_;
  SimulationResult r_;
  std::vector<std::uint32_t> remaining_;
  std::vector<TimeNs> ready_at_;
  MinHeap<Event> events_;
  std::vector<MinHeap<ReadyEntry>> queues_;
  std::vector<std::uint8_t> busy_;
  std::vector<std::uint8_t> pending_flag_;
  std::vector<UnitId> pending_;  // units that may start a task at the current instant
  std::vector<TaskId> last_on_unit_;
  std::uint64_t sequence_ = 0;
  std::vector<TimeNs> held_since_;  // per task: when the occupancy model first held it (occupancy only)
  std::vector<TimeNs> lock_wait_since_;  // per task: when the driver lock first held it (locks only)
  std::unordered_map<TaskId, std::vector<UnitId>> lock_waiters_;  // holder not yet dispatched -> waiting units
};

}  // namespace

SimulationResult run_event_engine(const Graph& graph, CompiledGraph compiled) {
  return Engine(graph, std::move(compiled)).run();
}

}  // namespace sim

namespace {

/// The built-in policies whose priorities cannot fail and matter only to the event engine.
bool priorities_needed_only_by_engine(const SchedulePolicy& policy) {
  return dynamic_cast<const TraceOrderPolicy*>(&policy) != nullptr || dynamic_cast<const FifoPolicy*>(&policy) != nullptr;
}

/// A result with every field as a fresh one has it, holding the memory of `old`'s arrays. The
/// per-task arrays keep their entries too: the static pass sets every one of them and the engine
/// replaces the whole result, so zeroing them first (21 bytes a task, every what-if of a sweep)
/// would be work thrown away.
SimulationResult emptied(SimulationResult&& old) {
  SimulationResult result;
  result.start_ns = std::move(old.start_ns);
  result.end_ns = std::move(old.end_ns);
  result.binding = std::move(old.binding);
  result.cause = std::move(old.cause);
  const auto take = [](auto& to, auto& from) { to = std::move(from), to.clear(); };
  take(result.units, old.units);
  take(result.critical_path, old.critical_path);
  return result;
}

}  // namespace

SimulationResult simulate(const Graph& graph, const SchedulePolicy& policy, SimulationMethod method) {
  SimulationResult result;
  simulate_into(result, graph, policy, method);
  return result;
}

void simulate_into(SimulationResult& result, const Graph& graph, const SchedulePolicy& policy, SimulationMethod method) {
  sim::CompiledGraph compiled = sim::compile(graph);
  // Other policies' priorities are computed up front either way, so that one that cannot rank
  // every task fails the same whichever simulator runs.
  bool lazy_priorities = priorities_needed_only_by_engine(policy);
  if (!lazy_priorities) sim::add_priorities(graph, policy, compiled);
  if (method == SimulationMethod::automatic) {
    result = emptied(std::move(result));
    if (compiled.edges->unchained_units.empty()) {
      if (sim::run_static_order(graph, compiled, result)) return;
    } else if (!policy.by_ready_time()) {  // units in priority order, where the engine agrees
      if (lazy_priorities) sim::add_priorities(graph, policy, compiled);
      lazy_priorities = false;
      if (sim::run_static_order_with_chains(graph, compiled, result)) return;
    }
  }
  if (lazy_priorities) sim::add_priorities(graph, policy, compiled);
  result = sim::run_event_engine(graph, std::move(compiled));
}

void sim::critical_path_into(const SimulationResult& result, TaskId last, std::vector<TaskId>& path) {
  // The bindings walked back from `last` fill the buffer from its back (a path holds each task at
  // most once, so the tasks' count is room enough), then move to its front: no growth checks and
  // no reversal in the loop, which a sweep runs once per what-if over most of the graph.
  const std::size_t room = result.binding.size();
  if (path.size() < room) path.resize(room);
  TaskId* const end = path.data() + room;
  TaskId* first = end;
  for (TaskId t = last; t != kNoTask && first != path.data(); t = result.binding[t]) *--first = t;
  const auto length = static_cast<std::size_t>(end - first);
  std::move(first, end, path.data());
  path.resize(length);
}

std::vector<TaskId> critical_path_to(const SimulationResult& result, TaskId last) {
  std::vector<TaskId> path;
  sim::critical_path_into(result, last, path);
  return path;
}

}  // namespace daydream
