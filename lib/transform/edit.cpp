// Insert, Remove and checked edges. Cycles are refused before the graph changes: the storage
// keeps a topological rank per task while it is valid; an edge from a lower to a higher rank
// can never close a cycle, and any other edge is checked by a search that only visits tasks
// ranked below the edge's source (the only ones that can lead back to it). An accepted edge
// against the ranks reorders only the tasks between its ends (reorder_ranks), so a run of such
// edits costs what it touches, not a new rank for every task each time.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "daydream/error.hpp"
#include "daydream/transform.hpp"
#include "graph/graph_storage.hpp"

namespace daydream {
namespace {

/// How far above the tasks it follows an insert is ranked (where there is room: half the way to
/// the lowest task it precedes at most). Recomputed ranks are TopologicalRanks::kSpacing apart,
/// so a run of 65,535 inserts, each after the one before, fits between two tasks.
constexpr double kInsertStep = 1;

std::string describe(const Graph& g, TaskId t) { return fmt::format("task {} '{}'", t, g.name(t)); }

// The type of the edge that replaces pred -> removed -> succ.
EdgeType bridged_type(EdgeType in, EdgeType out) {
  if (is_sequential(in) && is_sequential(out)) return in;
  return is_sequential(in) ? out : in;
}

// The edge that replaces pred -> removed -> succ: the removed task takes no time.
Edge bridge(const Edge& in, const Edge& out) {
  return {bridged_type(in.type, out.type), in.timing, in.delay_ns + out.delay_ns, in.inferred || out.inferred};
}

}  // namespace

EdgeType infer_edge_type(const Graph& g, TaskId from, TaskId to) {
  const Task &a = g.task(from), &b = g.task(to);
  const UnitKind ua = g.units()[a.unit].kind, ub = g.units()[b.unit].kind;
  if (a.kind == TaskKind::communication || b.kind == TaskKind::communication) {
    if (a.unit == b.unit && ua != UnitKind::cpu_thread) return EdgeType::gpu_sequential;
    return EdgeType::communication;
  }
  if (a.unit == b.unit) return ua == UnitKind::cpu_thread ? EdgeType::cpu_sequential : EdgeType::gpu_sequential;
  if (ua == UnitKind::cpu_thread && ub == UnitKind::cpu_thread) return EdgeType::cross_thread;
  if (ua == UnitKind::cpu_thread) return EdgeType::launch;
  if (ub == UnitKind::cpu_thread) return EdgeType::sync;
  return EdgeType::cross_stream;
}


std::size_t Graph::num_live_tasks() const { return num_tasks() - removed_count_; }

std::optional<UnitId> Graph::find_unit(std::string_view name) const {
  for (UnitId u = 0; u < units_.size(); ++u)
    if (units_[u].name == name) return u;
  return std::nullopt;
}

void Graph::check_live(TaskId id, std::string_view what) const {
  if (id >= num_tasks()) throw Error(fmt::format("{}: no task {} (the graph has {})", what, id, num_tasks()));
  if (task(id).removed) throw Error(fmt::format("{}: {} was removed", what, describe(*this, id)));
}

void Graph::ensure_ranks() {
  TopologicalRanks& ranks = structure().ranks;
  if (ranks.valid) return;
  const auto order = topological_order();
  ranks.rank.assign(num_tasks(), 0.0);
  for (std::size_t i = 0; i < order.size(); ++i) ranks.rank[order[i]] = static_cast<double>(i) * TopologicalRanks::kSpacing;
  ranks.next = static_cast<double>(order.size()) * TopologicalRanks::kSpacing;
  ranks.valid = true;
}

// A path from any of `sources` to any of `targets`, or empty. Only tasks ranked at most the
// highest target rank can lie on such a path, so when every source ranks above that, the answer
// is immediate; otherwise the search's bookkeeping is proportional to the tasks it visits. With
// no path, `reached` (when given) gets every task the search visited.
std::vector<TaskId> Graph::path_between(const std::vector<TaskId>& sources, const std::vector<TaskId>& targets,
                                        std::vector<TaskId>* reached) {
  ensure_ranks();
  const std::vector<double>& order = storage_->ranks.rank;  // topological rank per task
  double limit = -std::numeric_limits<double>::infinity();
  for (TaskId t : targets) limit = std::max(limit, order[t]);
  std::vector<TaskId> stack;
  std::unordered_map<TaskId, TaskId> parent;  // visited task -> the task it was reached from
  for (TaskId s : sources)
    if (order[s] <= limit && parent.emplace(s, kNoTask).second) stack.push_back(s);
  if (stack.empty()) return {};
  const std::unordered_set<TaskId> target(targets.begin(), targets.end());
  const EdgeStore& edges = structure().edges;
  while (!stack.empty()) {
    const TaskId v = stack.back();
    stack.pop_back();
    if (target.count(v)) {
      std::vector<TaskId> path;
      for (TaskId t = v; t != kNoTask; t = parent.at(t)) path.push_back(t);
      std::reverse(path.begin(), path.end());
      return path;
    }
    edges.each_out(v, [&](EdgeId e) {
      const TaskId w = edges.target(e);
      if (order[w] <= limit && parent.emplace(w, v).second) stack.push_back(w);
      return true;
    });
  }
  if (reached)
    for (const auto& visited : parent) reached->push_back(visited.first);
  return {};
}

[[noreturn]] void Graph::refuse_cycle(std::string_view what, const std::vector<TaskId>& path, std::string_view closing) const {
  std::string chain;
  for (TaskId t : path) chain += describe(*this, t) + " -> ";
  throw Error(fmt::format("{} would create a cycle: {}{}", what, chain, closing));
}

void Graph::connect(TaskId from, TaskId to, Edge edge) {
  check_live(from, "connect");
  check_live(to, "connect");
  if (from == to) throw Error(fmt::format("connect: {} cannot depend on itself", describe(*this, from)));
  ensure_ranks();
  const std::vector<double>& order = storage_->ranks.rank;  // topological rank per task
  const bool ordered = order[from] < order[to];
  std::vector<TaskId> after;  // against the ranks: what `to` reaches below `from`'s rank
  if (!ordered) {
    const auto path = path_between({to}, {from}, &after);
    if (!path.empty()) refuse_cycle("connect", path, describe(*this, to));
  }
  structure().edges.add(from, to, edge);
  if (!ordered && !reorder_ranks(from, to, std::move(after))) storage_->ranks.valid = false;
}

namespace {

/// Sorts tasks by rank (ties by id).
void sort_by_rank(std::vector<TaskId>& tasks, const std::vector<double>& rank) {
  std::sort(tasks.begin(), tasks.end(), [&](TaskId a, TaskId b) { return std::tie(rank[a], a) < std::tie(rank[b], b); });
}

/// The tasks that reach `end` through tasks ranked at least `lower`, `end` included.
std::vector<TaskId> reaching(const EdgeStore& edges, const std::vector<double>& rank, TaskId end, double lower) {
  std::vector<TaskId> found{end}, stack{end};
  std::unordered_set<TaskId> seen{end};
  while (!stack.empty()) {
    const TaskId v = stack.back();
    stack.pop_back();
    edges.each_in(v, [&](EdgeId e) {
      const TaskId w = edges.source(e);
      if (rank[w] >= lower && seen.insert(w).second) found.push_back(w), stack.push_back(w);
      return true;
    });
  }
  return found;
}

}  // namespace

// Pearce and Kelly's dynamic topological order (J. Exp. Algorithmics 11, 2006), for an edge
// from -> to just added against the ranks (rank[to] < rank[from]) where no path to ->* from
// exists. Only tasks ranked between the two move: those `from` is reached from (B) and those
// reached from `to` (F: `after`, what the cycle check's search visited). They trade their own ranks, B taking the lowest: an F task only rises
// and a B task only falls, so every edge to or from a task outside keeps its direction, and
// within B and F the order stays. Needs distinct ranks among them (insert gives unrelated tasks
// equal ones); false otherwise, and the caller lets the next check recompute every rank.
bool Graph::reorder_ranks(TaskId from, TaskId to, std::vector<TaskId> after) {
  GraphStorage& storage = structure();
  std::vector<double>& ranks = storage.ranks.rank;
  auto before = reaching(storage.edges, ranks, from, ranks[to]);
  sort_by_rank(before, ranks);
  sort_by_rank(after, ranks);
  std::vector<double> values;
  values.reserve(before.size() + after.size());
  for (TaskId t : before) values.push_back(ranks[t]);
  for (TaskId t : after) values.push_back(ranks[t]);
  std::sort(values.begin(), values.end());
  if (std::adjacent_find(values.begin(), values.end()) != values.end()) return false;
  std::size_t next = 0;
  for (TaskId t : before) ranks[t] = values[next++];
  for (TaskId t : after) ranks[t] = values[next++];
  return true;
}

void Graph::disconnect(TaskId from, TaskId to) {
  check_live(from, "disconnect");
  check_live(to, "disconnect");
  EdgeStore& edges = structure().edges;
  if (edges.find(from, to) == kNoEdge)
    throw Error(fmt::format("disconnect: no edge from {} to {}", describe(*this, from), describe(*this, to)));
  edges.remove_all(from, to);  // fewer edges: every rank stays valid
}

void Graph::mark_removed(TaskId id, TaskColumns& columns) {
  columns.removed[id] = 1;
  ++removed_count_;
  forget_task_derived();
}

void Graph::remove(TaskId id) {
  check_live(id, "remove");
  structure().edges.bypass_vertex(id, bridge);  // keeps every rank valid
  mark_removed(id, task_columns_for_change());
}

void Graph::remove_all(const std::vector<TaskId>& ids, bool zero_inner_delays) {
  for (TaskId id : ids) check_live(id, "remove");
  if (ids.empty()) return;
  if (!structure().edges.bypass_vertices(ids, bridge, zero_inner_delays))  // keeps every rank valid
    throw Error("remove: a task is named twice");
  TaskColumns& columns = task_columns_for_change();
  for (TaskId id : ids) mark_removed(id, columns);
}

TaskId Graph::insert(const NewTask& spec) {
  if (spec.unit >= units_.size()) throw Error(fmt::format("insert '{}': no unit {}", spec.name, spec.unit));
  if (spec.duration_ns < 0) throw Error(fmt::format("insert '{}': negative duration {} ns", spec.name, spec.duration_ns));
  if (spec.duration_ns > kMaxTaskDurationNs)
    throw Error(fmt::format("insert '{}': duration {} ns is longer than one day, the longest daydream accepts", spec.name,
                            spec.duration_ns));
  for (TaskId t : spec.after) check_live(t, "insert (after)");
  for (TaskId t : spec.before) check_live(t, "insert (before)");
  const auto back = path_between(spec.before, spec.after);  // before ->* after closes a cycle
  if (!back.empty()) refuse_cycle(fmt::format("insert '{}'", spec.name), back, "the new task");

  Task task;
  task.kind = spec.kind;
  task.unit = spec.unit;
  task.name = intern(spec.name);
  task.duration_ns = spec.duration_ns;
  task.phase = spec.phase;
  task.iteration = spec.iteration;
  for (TaskId p : spec.after) {
    const Task& pred = this->task(p);
    task.recorded_start_ns = std::max(task.recorded_start_ns, pred.recorded_start_ns + pred.duration_ns);
    if (task.iteration < 0) task.iteration = pred.iteration;
  }
  const TaskId id = add_task(task);
  link_inserted(id, spec);
  return id;
}

void Graph::link_inserted(TaskId id, const NewTask& spec) {
  EdgeStore& edges = structure().edges;
  TimeNs after_delay = spec.after_delay_ns;
  // Inserting into a chain on one unit: a -> b becomes a -> new -> b (a's gap goes first).
  if (spec.after.size() == 1 && spec.before.size() == 1) {
    const TaskId a = spec.after[0], b = spec.before[0];
    const EdgeId e = edges.find(a, b);
    if (e != kNoEdge && is_sequential(edges.edge(e).type) && task(a).unit == spec.unit && task(b).unit == spec.unit) {
      after_delay = std::max(after_delay, edges.edge(e).delay_ns);
      edges.remove(e);
    }
  }
  TopologicalRanks& ranks = storage_->ranks;
  double low = -1, high = ranks.next;
  for (TaskId a : spec.after) {
    edges.add(a, id, Edge{spec.after_type.value_or(infer_edge_type(*this, a, id)), Timing::finish_to_start, after_delay, false});
    low = std::max(low, ranks.rank[a]);
  }
  for (TaskId b : spec.before) {
    edges.add(id, b, Edge{spec.before_type.value_or(infer_edge_type(*this, id, b)), Timing::finish_to_start, spec.before_delay_ns, false});
    high = std::min(high, ranks.rank[b]);
  }
  // The new task ranks just above those it follows: without tasks to precede, edges added from
  // it later then usually agree with the ranks already (a rank halfway to the end would make each
  // of them reorder a large part of the graph); in a run of inserts, each after the last between
  // the same two tasks (a replaced block), every one keeps the room the next needs (halfway would
  // halve it each time).
  const double mid = low + std::min(kInsertStep, (high - low) / 2);
  if (ranks.valid && low < mid && mid < high) ranks.rank[id] = mid;
  else ranks.valid = false;  // no room between: recomputed on the next check
}

}  // namespace daydream
