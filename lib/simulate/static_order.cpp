// The static-order pass: the event engine's result in one pass over a topological order.
//
// When every unit's live tasks form a chain of direct edges, a task is never ready before the
// task ahead of it on its unit has started, so whenever a unit is free at most one of its tasks
// is ready: no policy has a choice, and the engine starts each task at
//   start = max(ready, end of the task ahead on its unit),
//   ready = max over in-edges of (source end, or source start for start-to-start) + delay
// (a task without predecessors: its release). That needs no event queue.
//
// The rest of the result is the order in which the engine applies events of one instant:
// - binding: the first predecessor, in the engine's release order, to give the latest ready time;
// - whether a unit freed and a task readied at the same instant start that task there in the
//   same round, which decides the release order of zero-duration and zero-delay chains.
// The engine applies an instant in rounds: drain 1 (every event due: task ends, tasks becoming
// ready), dispatch 1 (idle units with a ready task start it, in unit order), drain 2 (events
// those starts made due at the same instant: ends of zero-duration tasks, ready tasks behind
// zero-delay start-to-start edges), dispatch 2, and so on. Ends due in drain 1 are applied in
// the order their tasks started. ReleaseKey orders releases the same way; the pass keeps each
// task's round and replays the engine's tie-breaks from it.
#include <algorithm>
#include <tuple>

#include "simulate/compiled_graph.hpp"

namespace daydream::sim {

namespace {

/// Where a task's release of its successors falls in the engine's processing order: the instant,
/// the phase of that instant (2r - 1: drain r, 2r: dispatch r), then the start order of the
/// releasing task (its start instant, round and unit), which is unique per task.
struct ReleaseKey {
  TimeNs instant;
  std::uint32_t phase;
  TimeNs start;
  std::uint32_t round;
  UnitId unit;
  bool operator<(const ReleaseKey& o) const {
    return std::tie(instant, phase, start, round, unit) < std::tie(o.instant, o.phase, o.start, o.round, o.unit);
  }
};

class StaticOrderPass {
 public:
  StaticOrderPass(const Graph& graph, const CompiledGraph& compiled, SimulationResult& result)
      : graph_(graph), c_(compiled), e_(*compiled.edges), r_(result), n_(compiled.duration.size()) {}

  bool run() {
    if (c_.occupancy || c_.locks) return false;
    if (e_.topological.size() != n_) return false;  // a cycle: the engine names the stuck tasks
    init();
    std::size_t live = 0;
    for (const TaskId t : e_.topological) {
      if (c_.removed[t]) continue;
      if (!place(t)) return false;
      ++live;
    }
    r_.events_processed = 2 * live;  // the engine's ready and end event per task
    r_.static_order = true;
    complete_result(graph_, c_, r_);
    return true;
  }

 private:
  /// A task's state while its predecessors release it.
  struct Pending {
    TimeNs ready = kUnset;          // latest release so far; kUnset: none yet (a root, once placed)
    TaskId last = kNoTask;          // the predecessor whose release the engine applies last
    TaskId chained_from = kNoTask;  // the latest placed predecessor on its unit with a direct edge
    std::uint8_t last_start_to_start = 0;
    std::uint8_t binding_start_to_start = 0;
  };

  void init() {
    r_.start_ns.resize(n_);
    r_.end_ns.resize(n_);
    r_.binding.assign(n_, kNoTask);
    r_.cause.assign(n_, StartCause::release);
    r_.units.assign(graph_.units().size(), UnitUsage{});
    pending_.assign(n_, Pending{});
    round_.resize(n_);
    unit_last_.assign(graph_.units().size(), kNoTask);
  }

  ReleaseKey key(TaskId source, bool start_to_start) const {
    const TimeNs start = r_.start_ns[source];
    const std::uint32_t round = round_[source];
    if (start_to_start) return {start, 2 * round, start, round, c_.unit[source]};
    const std::uint32_t phase = c_.duration[source] > 0 ? 1 : 2 * round + 1;
    return {r_.end_ns[source], phase, start, round, c_.unit[source]};
  }

  /// Starts task t (every predecessor placed); false where the pass cannot stand in for the engine.
  bool place(TaskId t) {
    const UnitId u = c_.unit[t];
    const TaskId ahead = unit_last_[u];
    const Pending& p = pending_[t];
    if (ahead != kNoTask && p.chained_from != ahead) return false;  // the unit is not a chain
    TimeNs ready = c_.release[t];
    std::uint32_t round = 1;  // the round of the instant `ready` in which the engine queues t
    if (p.ready != kUnset) {
      ready = p.ready;
      const ReleaseKey last = key(p.last, p.last_start_to_start);
      if (last.instant == ready) round = last.phase / 2 + 1;  // drain r -> r; dispatch r -> drain r + 1
    }
    TimeNs start = ready;
    if (ahead != kNoTask) {
      const TimeNs free = r_.end_ns[ahead];
      const std::uint32_t free_round = c_.duration[ahead] > 0 ? 1 : round_[ahead] + 1;
      if (free > ready) {
        start = free;
        round = free_round;
      } else if (free == ready) {
        round = std::max(round, free_round);
      }
    }
    const TimeNs end = start + c_.duration[t];
    if (end >= kMaxTraceTimeNs) return false;  // the engine stops the clock there, with its message
    if (start > ready) {
      r_.cause[t] = StartCause::unit_busy;
      r_.binding[t] = ahead;
    } else if (r_.binding[t] != kNoTask) {
      r_.cause[t] = StartCause::dependency;
    }
    r_.start_ns[t] = start;
    r_.end_ns[t] = end;
    round_[t] = round;
    unit_last_[u] = t;
    release_successors(t, u, start, end);
    return true;
  }

  void release_successors(TaskId source, UnitId unit, TimeNs start, TimeNs end) {
    for (auto i = e_.first[source]; i < e_.first[source + 1]; ++i) {
      const TaskId next = e_.target[i];
      const bool start_to_start = e_.start_to_start[i] != 0;
      const TimeNs time = (start_to_start ? start : end) + e_.delay_ns[i];
      Pending& p = pending_[next];
      if (c_.unit[next] == unit) p.chained_from = source;
      if (p.ready == kUnset) {  // the first release: every time is above kUnset
        p.ready = time;
        r_.binding[next] = source;
        p.binding_start_to_start = start_to_start;
        p.last = source;
        p.last_start_to_start = start_to_start;
        continue;
      }
      const ReleaseKey this_release = key(source, start_to_start);
      if (time > p.ready || (time == p.ready && this_release < key(r_.binding[next], p.binding_start_to_start))) {
        p.ready = time;
        r_.binding[next] = source;
        p.binding_start_to_start = start_to_start;
      }
      if (key(p.last, p.last_start_to_start) < this_release) {
        p.last = source;
        p.last_start_to_start = start_to_start;
      }
    }
  }

  const Graph& graph_;
  const CompiledGraph& c_;
  const EdgeTable& e_;
  SimulationResult& r_;
  std::size_t n_;
  std::vector<Pending> pending_;      // per task
  std::vector<std::uint32_t> round_;  // per task: the round of its start instant in which it started
  std::vector<TaskId> unit_last_;     // per unit: the last task placed on it
};

}  // namespace

bool run_static_order(const Graph& graph, const CompiledGraph& compiled, SimulationResult& result) {
  return StaticOrderPass(graph, compiled, result).run();
}

}  // namespace daydream::sim
