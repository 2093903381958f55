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
//
// The pass pulls: placing a task reads its in-edges (EdgeTable's reverse rows) and the placed
// records of their sources, which it placed moments ago. Nothing is pending between tasks but
// one record per unit, so the state a simulation touches is its output and the edge rows.
#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
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

/// The units that are not chained by edges, each with its live tasks in the policy's order (what
/// the engine's ready queue sorts by: priority, then id): tasks[first[c], first[c + 1]).
struct VirtualChains {
  std::vector<std::uint8_t> unit_virtual;  // per unit
  std::vector<TaskId> tasks;
  std::vector<std::size_t> first;
};

/// kChains: whether some units run as virtual chains (a pass without them pays nothing for them).
template <bool kChains>
class StaticOrderPass {
 public:
  /// `chains`: null where every unit must be chained by edges; else the order of the units it
  /// marks virtual, which `order` (a topological order) must respect.
  StaticOrderPass(const Graph& graph, const CompiledGraph& compiled, SimulationResult& result,
                  std::span<const TaskId> order, const VirtualChains* chains = nullptr)
      : graph_(graph), c_(compiled), e_(*compiled.edges), r_(result), n_(compiled.duration.size()), order_(order),
        chains_(chains) {}

  bool run() {
    if (c_.occupancy || c_.locks) return false;
    if (order_.size() != n_) return false;  // a cycle: the engine names the stuck tasks
    init();
    std::size_t live = 0;
    for (const TaskId t : order_) {
      if (c_.removed[t]) {
        skip(t);
        continue;
      }
      if (!place(t)) return false;
      ++live;
    }
    if constexpr (kChains)
      if (!chains_hold()) return false;
    r_.events_processed = 2 * live;  // the engine's ready and end event per task
    r_.static_order = true;
    finish();
    return true;
  }

 private:
  /// What the pass keeps of a placed task: what its release keys are made of.
  struct Placed {
    TimeNs at[2];         // its release instants, by InEdge::start_to_start: its end, its start
    std::uint32_t round;  // the round of its start instant in which it started
    UnitId unit;
    TimeNs end() const { return at[0]; }
    TimeNs start() const { return at[1]; }
  };

  /// A unit's state between its tasks, and its usage so far. Its tasks form a chain, so the
  /// first starts first and the last ends last.
  struct UnitState {
    TimeNs free = 0;               // end of the last task placed on the unit
    TaskId last = kNoTask;         // that task
    std::uint32_t free_round = 0;  // round of instant `free` in which the unit is free again
    TimeNs first_start = 0;
    TimeNs busy = 0;
    std::int64_t tasks = 0;
    /// The lowest id among its tasks that end at `free` (its tasks end in their chain's order).
    TaskId lowest_at_free = kNoTask;
  };

  /// A task's releases by its predecessors, as the engine applies them. Scalars, not keys: the
  /// full ReleaseKey is built only to break ties (copying keys around costs more than the pass).
  struct Releases {
    TimeNs ready = kUnset;         // the latest release time; kUnset: no predecessor
    TaskId binding = kNoTask;      // the first source, in the engine's order, to release at `ready`
    bool binding_start_to_start = false;
    TimeNs last_instant = kUnset;  // the release the engine applies last: its instant and phase
    std::uint32_t last_phase = 0;
    TaskId last = kNoTask;
    bool last_start_to_start = false;
    bool from_ahead = false;       // whether the task ahead on its unit is a source
  };

  void init() {
    r_.start_ns.resize(n_);
    r_.end_ns.resize(n_);
    r_.binding.resize(n_);
    r_.cause.resize(n_);
    r_.units.assign(graph_.units().size(), UnitUsage{});
    placed_.reset(new Placed[n_]);  // default-initialized: each record is set when its task is placed
    units_.assign(graph_.units().size(), UnitState{});
    if constexpr (kChains) queued_.reset(new Queued[n_]);
  }

  /// A removed task: the engine's result for it (it never runs).
  void skip(TaskId t) {
    r_.start_ns[t] = r_.end_ns[t] = -1;
    r_.binding[t] = kNoTask;
    r_.cause[t] = StartCause::release;
  }

  /// The key of a placed task's release: at its end, or at its start for start-to-start edges.
  ReleaseKey key(TaskId source, bool start_to_start) const {
    const Placed& p = placed_[source];
    return {p.at[start_to_start], phase(p, start_to_start), p.start(), p.round, p.unit};
  }
  /// The phase of a release (ReleaseKey): an end in drain 1, or, for a zero-duration task, in
  /// drain r + 1; a start in dispatch r. Selects, not branches: the edge kinds follow no pattern.
  static std::uint32_t phase(const Placed& p, bool start_to_start) {
    const std::uint32_t at_end = p.end() > p.start() ? 1 : 2 * p.round + 1;
    return start_to_start ? 2 * p.round : at_end;
  }

  Releases gather(TaskId t, TaskId ahead) const {
    Releases in;
    const auto first = e_.in_first[t], end = e_.in_first[t + 1];
    if (end - first == 1) {  // most tasks: one predecessor, nothing to compare
      const InEdge& edge = e_.in_edges[first];
      const bool start_to_start = edge.start_to_start != 0;
      const Placed& p = placed_[edge.source];
      in.last_instant = p.at[start_to_start];
      in.last_phase = phase(p, start_to_start);
      in.ready = in.last_instant + edge.delay_ns;
      in.binding = in.last = edge.source;
      in.from_ahead = edge.source == ahead;
      return in;
    }
    for (auto i = first; i < end; ++i) {
      const InEdge& edge = e_.in_edges[i];
      const TaskId source = edge.source;
      const bool start_to_start = edge.start_to_start != 0;
      const Placed& p = placed_[source];
      const TimeNs at = p.at[start_to_start];
      const std::uint32_t in_phase = phase(p, start_to_start);
      const TimeNs time = at + edge.delay_ns;  // the source's end, or its start
      in.from_ahead |= source == ahead;
      if (time > in.ready ||
          (time == in.ready && key(source, start_to_start) < key(in.binding, in.binding_start_to_start))) {
        in.ready = time;
        in.binding = source;
        in.binding_start_to_start = start_to_start;
      }
      if (at > in.last_instant ||
          (at == in.last_instant &&
           (in_phase > in.last_phase ||
            (in_phase == in.last_phase && key(in.last, in.last_start_to_start) < key(source, start_to_start))))) {
        in.last_instant = at;
        in.last_phase = in_phase;
        in.last = source;
        in.last_start_to_start = start_to_start;
      }
    }
    return in;
  }

  /// Starts task t (every predecessor placed); false where the pass cannot stand in for the engine.
  bool place(TaskId t) {
    const UnitId u = c_.unit[t];
    UnitState& unit = units_[u];
    const bool has_ahead = unit.last != kNoTask;
    const Releases in = gather(t, unit.last);
    bool in_chain = false;
    if constexpr (kChains) in_chain = chains_->unit_virtual[u] != 0;
    if (has_ahead && !in.from_ahead && !in_chain) return false;  // the unit is not a chain
    const bool released = in.binding != kNoTask;
    const TimeNs ready = released ? in.ready : c_.release[t];
    // the round of the instant `ready` in which the engine queues t: drain r -> r; dispatch r -> drain r + 1
    std::uint32_t round = released && in.last_instant == ready ? in.last_phase / 2 + 1 : 1;
    if (in_chain) {  // whether the unit stood idle until t was queued (it was free at an earlier moment)
      const bool idle = !has_ahead || ready > unit.free || (ready == unit.free && round > unit.free_round);
      queued_[t] = {ready, round, idle};
    }
    const TimeNs free = has_ahead ? unit.free : kUnset;  // kUnset: below every ready time
    const bool busy = free > ready;
    const TimeNs start = busy ? free : ready;
    const std::uint32_t at_free = std::max(round, unit.free_round);
    round = busy ? unit.free_round : (free == ready ? at_free : round);
    const TimeNs duration = c_.duration[t];
    const TimeNs end = start + duration;
    if (end >= kMaxTraceTimeNs) return false;  // the engine stops the clock there, with its message
    r_.binding[t] = busy ? unit.last : in.binding;
    r_.cause[t] = busy ? StartCause::unit_busy : released ? StartCause::dependency : StartCause::release;
    r_.start_ns[t] = start;
    r_.end_ns[t] = end;
    placed_[t] = {{end, start}, round, u};
    if (!has_ahead) unit.first_start = start;
    unit.lowest_at_free = has_ahead && end == unit.free ? std::min(unit.lowest_at_free, t) : t;
    unit.free = end;
    unit.last = t;
    unit.free_round = duration > 0 ? 1 : round + 1;
    unit.busy += duration;
    ++unit.tasks;
    return true;
  }

  /// Whether the engine would have run each virtual chain in its order: a task the unit stood idle
  /// for must not have been preceded by a later one in the queue (queued at an earlier instant, or
  /// round of it); the engine would have started that one first. Same moment: the order decides.
  bool chains_hold() const {
    const VirtualChains& v = *chains_;
    for (std::size_t c = 0; c + 1 < v.first.size(); ++c) {
      std::pair<TimeNs, std::uint32_t> earliest_later{kMaxTraceTimeNs, 0};  // over the tasks after this one
      for (std::size_t i = v.first[c + 1]; i-- > v.first[c];) {
        const Queued& q = queued_[v.tasks[i]];
        const std::pair<TimeNs, std::uint32_t> moment{q.ready, q.round};
        if (q.unit_idle && earliest_later < moment) return false;
        earliest_later = std::min(earliest_later, moment);
      }
    }
    return true;
  }

  /// Unit usage, the makespan and the critical path, as complete_result() gives them.
  void finish() {
    TimeNs makespan = kUnset, work_end = kUnset;  // over all units, and over units not in the background
    for (UnitId u = 0; u < units_.size(); ++u) {
      const UnitState& unit = units_[u];
      if (unit.tasks == 0) continue;
      r_.units[u] = UnitUsage{unit.busy, unit.tasks, unit.first_start, unit.free};
      makespan = std::max(makespan, unit.free);
      if (!graph_.units()[u].background) work_end = std::max(work_end, unit.free);
    }
    // complete_result() takes the lowest id among tasks ending at those times: a task ends there
    // only as one of the last of its unit (UnitState::lowest_at_free)
    TaskId last = kNoTask, last_work = kNoTask;
    for (UnitId u = 0; u < units_.size(); ++u) {
      const UnitState& unit = units_[u];
      if (unit.tasks == 0) continue;
      if (unit.free == makespan) last = std::min(last, unit.lowest_at_free);
      if (unit.free == work_end && !graph_.units()[u].background) last_work = std::min(last_work, unit.lowest_at_free);
    }
    finish_result(last, last_work, r_);
  }

  const Graph& graph_;
  const CompiledGraph& c_;
  const EdgeTable& e_;
  SimulationResult& r_;
  std::size_t n_;
  std::span<const TaskId> order_;
  const VirtualChains* chains_;
  std::unique_ptr<Placed[]> placed_;  // per task, set when it is placed
  std::vector<UnitState> units_;  // per unit
  /// Per task on a virtual chain: the moment the engine queues it, and whether its unit was free before.
  struct Queued {
    TimeNs ready;
    std::uint32_t round;
    bool unit_idle;
  };
  std::unique_ptr<Queued[]> queued_;
};

/// The chains of the table's unchained units, in priority order; false where a priority is not a
/// number.
bool make_chains(const CompiledGraph& c, std::size_t units, VirtualChains& chains) {
  std::vector<std::uint8_t> unit_virtual(units, 0);
  for (const UnitId u : c.edges->unchained_units) unit_virtual.at(u) = 1;
  for (TaskId t = 0; t < c.duration.size(); ++t)
    if (!c.removed[t] && unit_virtual[c.unit[t]]) {
      if (std::isnan(c.priority[t])) return false;
      chains.tasks.push_back(t);
    }
  std::sort(chains.tasks.begin(), chains.tasks.end(), [&](TaskId a, TaskId b) {
    return std::tie(c.unit[a], c.priority[a], a) < std::tie(c.unit[b], c.priority[b], b);
  });
  for (std::size_t i = 0; i < chains.tasks.size(); ++i)
    if (i == 0 || c.unit[chains.tasks[i]] != c.unit[chains.tasks[i - 1]]) chains.first.push_back(i);
  chains.first.push_back(chains.tasks.size());
  chains.unit_virtual = std::move(unit_virtual);
  return true;
}

/// Whether `order` already has each chain's tasks in the chain's order (then it is a topological
/// order of the edges and chains together).
bool follows_chains(std::span<const TaskId> order, const CompiledGraph& c, const VirtualChains& chains) {
  std::vector<std::size_t> next(chains.unit_virtual.size(), 0);  // per virtual unit: index into tasks
  for (std::size_t k = 0; k + 1 < chains.first.size(); ++k)
    next[c.unit[chains.tasks[chains.first[k]]]] = chains.first[k];
  for (const TaskId t : order)
    if (!c.removed[t] && chains.unit_virtual[c.unit[t]] && chains.tasks[next[c.unit[t]]++] != t) return false;
  return true;
}

/// A topological order of the edges and of each chain's order; shorter than the tasks where the
/// two disagree (a cycle).
std::vector<TaskId> order_with_chains(const EdgeTable& e, const VirtualChains& chains) {
  std::vector<TaskId> next_in_chain(e.num_tasks(), kNoTask);
  for (std::size_t c = 0; c + 1 < chains.first.size(); ++c)
    for (std::size_t i = chains.first[c] + 1; i < chains.first[c + 1]; ++i)
      next_in_chain[chains.tasks[i - 1]] = chains.tasks[i];
  return kahn_order(e, &next_in_chain);
}

}  // namespace

bool run_static_order(const Graph& graph, const CompiledGraph& compiled, SimulationResult& result) {
  return StaticOrderPass<false>(graph, compiled, result, compiled.edges->topological).run();
}

bool run_static_order_with_chains(const Graph& graph, const CompiledGraph& compiled, SimulationResult& result) {
  if (compiled.by_ready_time || compiled.occupancy || compiled.locks) return false;
  if (compiled.edges->topological.size() != compiled.duration.size()) return false;
  VirtualChains chains;
  if (!make_chains(compiled, graph.units().size(), chains)) return false;
  const std::span<const TaskId> topological = compiled.edges->topological;
  if (follows_chains(topological, compiled, chains))  // the usual case: no second sort
    return StaticOrderPass<true>(graph, compiled, result, topological, &chains).run();
  const std::vector<TaskId> order = order_with_chains(*compiled.edges, chains);
  return StaticOrderPass<true>(graph, compiled, result, order, &chains).run();
}

}  // namespace daydream::sim
