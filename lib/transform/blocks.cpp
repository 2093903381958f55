// Editing blocks of work (transform.hpp): a block removed without the gaps inside it (or a run
// fused into its neighbour), tasks inserted at an exact place on a chain, a block replaced by new
// tasks, GPU work removed with its launches.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream {
namespace {

// The block's first task on `unit`, by recorded start (ties by id).
TaskId first_on_unit(const Graph& graph, const std::vector<TaskId>& block, UnitId unit) {
  TaskId first = kNoTask;
  auto key = [&](TaskId t) { return std::pair(graph.task(t).recorded_start_ns, t); };
  for (TaskId t : block)
    if (graph.task(t).unit == unit && (first == kNoTask || key(t) < key(first))) first = t;
  if (first == kNoTask) throw Error(fmt::format("replace_block: the block has no task on unit {}", unit));
  return first;
}

// The replaced tasks' other edges moved to the new tasks of their unit (see Replacement).
void take_over_edges(Graph& graph, const CrossingEdges& crossing, const std::map<UnitId, std::pair<TaskId, TaskId>>& ends) {
  std::map<std::pair<TaskId, TaskId>, Edge> edges;
  auto keep = [&](TaskId from, TaskId to, const Edge& e) {
    auto [it, fresh] = edges.try_emplace({from, to}, e);
    if (!fresh) it->second.delay_ns = std::max(it->second.delay_ns, e.delay_ns);
  };
  auto moves = [&](const Graph::EdgeRecord& r) {
    return r.edge.type != EdgeType::launch && !is_chain_edge(graph, r.from, r.to, r.edge.type);
  };
  for (const auto& r : crossing.in)
    if (const auto e = ends.find(graph.task(r.to).unit); e != ends.end() && moves(r)) keep(r.from, e->second.first, r.edge);
  for (const auto& r : crossing.out)
    if (const auto e = ends.find(graph.task(r.from).unit); e != ends.end() && moves(r)) keep(e->second.second, r.to, r.edge);
  for (const auto& [pair, edge] : edges) graph.connect(pair.first, pair.second, edge);
}

// Every edge between two tasks of the mask loses its delay.
void zero_delays_within(Graph& graph, const std::vector<TaskId>& tasks, const std::vector<char>& mask) {
  for (TaskId t : tasks)
    graph.update_successors(t, [&](TaskId s, Edge& e) {
      if (mask[s]) e.delay_ns = 0;
      return true;
    });
}

// Sorts `items` under the strict total order `less`, merging its ascending runs where it has few:
// a block is gathered unit by unit, each unit in recorded order, so its tasks are a handful of
// sorted runs.
template <typename T, typename Less>
void sort_ascending_runs(std::vector<T>& items, Less less) {
  constexpr std::size_t kMostRuns = 16;
  std::vector<std::size_t> bounds{0};
  for (auto run = items.begin(); run != items.end() && bounds.size() <= kMostRuns;) {
    run = std::is_sorted_until(run, items.end(), less);
    bounds.push_back(static_cast<std::size_t>(run - items.begin()));
  }
  if (bounds.back() != items.size()) return std::sort(items.begin(), items.end(), less);
  for (std::size_t i = 1; i + 1 < bounds.size(); ++i)
    std::inplace_merge(items.begin(), items.begin() + bounds[i], items.begin() + bounds[i + 1], less);
}

// The order remove_block takes a block's tasks in: CPU tasks first, earliest first, then GPU
// tasks, latest first (ties by id, the other way round for GPU tasks). Keys are read once per
// task.
std::vector<TaskId> removal_order(const Graph& graph, const std::vector<TaskId>& tasks) {
  struct Keyed {
    TimeNs start;
    TaskId task;
  };
  const auto earlier = [](const Keyed& a, const Keyed& b) { return std::tie(a.start, a.task) < std::tie(b.start, b.task); };
  std::vector<Keyed> cpu, gpu;
  for (TaskId t : tasks) {
    const Task& task = graph.task(t);
    (graph.units()[task.unit].kind == UnitKind::cpu_thread ? cpu : gpu).push_back({task.recorded_start_ns, t});
  }
  for (auto* side : {&cpu, &gpu}) sort_ascending_runs(*side, earlier);
  std::vector<TaskId> order;
  order.reserve(tasks.size());
  for (const Keyed& k : cpu) order.push_back(k.task);
  for (auto it = gpu.rbegin(); it != gpu.rend(); ++it) order.push_back(it->task);
  return order;
}

}  // namespace

ChainSpot chain_spot(const Graph& graph, TaskId first, const std::vector<char>& in_block) {
  ChainSpot spot;
  spot.release_ns = graph.task(first).release_ns;
  graph.visit_predecessors(first, [&](TaskId p, const Edge& e) {
    if (is_chain_edge(graph, p, first, e.type)) spot.prev = p, spot.delay_in_ns = e.delay_ns;
    return true;
  });
  if (first >= in_block.size() || !in_block[first]) {  // `first` stays: the spot is right before it
    spot.next = first;
    return spot;
  }
  for (TaskId t = first; t != kNoTask && spot.next == kNoTask;) {
    TaskId after = kNoTask;
    graph.visit_successors(t, [&](TaskId s, const Edge& e) {
      if (!is_chain_edge(graph, t, s, e.type)) return true;
      after = s;
      const bool inside = s < in_block.size() && in_block[s];
      if (!inside) spot.next = s, spot.delay_out_ns = e.delay_ns;
      return true;
    });
    t = after;
  }
  return spot;
}

void zero_inner_delays(Graph& graph, const std::vector<TaskId>& tasks) {
  zero_delays_within(graph, tasks, task_mask(graph, tasks));
}

CrossingEdges crossing_edges(const Graph& graph, const std::vector<TaskId>& tasks) {
  const auto in_block = task_mask(graph, tasks);
  CrossingEdges crossing;
  for (TaskId t : tasks) {
    graph.visit_successors(t, [&](TaskId s, const Edge& e) {
      if (!in_block[s]) crossing.out.push_back({t, s, e});
      return true;
    });
    graph.visit_predecessors(t, [&](TaskId p, const Edge& e) {
      if (!in_block[p]) crossing.in.push_back({p, t, e});
      return true;
    });
  }
  return crossing;
}

void remove_block(Graph& graph, const std::vector<TaskId>& tasks) {
  graph.remove_all(removal_order(graph, tasks), /*zero_inner_delays=*/true);
}

void remove_run(Graph& graph, const std::vector<TaskId>& run) {
  const TaskId before = chain_prev(graph, run.front()), after = chain_next(graph, run.back());
  TimeNs gap = 0;
  if (after != kNoTask)
    for (const auto& p : graph.predecessors(after))
      if (p.task == run.back()) gap = p.edge.delay_ns;
  remove_block(graph, run);
  if (before != kNoTask && after != kNoTask) graph.edge(before, after).delay_ns = gap;
}

TaskId insert_between(Graph& graph, NewTask task, TaskId prev, TaskId next, TimeNs delay_in_ns, TimeNs delay_out_ns,
                      TimeNs release_ns) {
  task.after.clear();
  task.before.clear();
  if (prev != kNoTask) task.after.push_back(prev);
  if (next != kNoTask) task.before.push_back(next);
  task.after_delay_ns = delay_in_ns;
  task.before_delay_ns = delay_out_ns;
  const TaskId id = graph.insert(task);
  // Splitting prev -> next, insert keeps the larger of delay_in_ns and that edge's delay.
  if (prev != kNoTask) graph.edge(prev, id).delay_ns = delay_in_ns;
  else graph.set_release(id, release_ns);
  return id;
}

std::vector<std::vector<TaskId>> replace_block(Graph& graph, const std::vector<TaskId>& block,
                                               std::vector<Replacement> replacements) {
  std::vector<UnitId> units;
  for (const Replacement& r : replacements) units.push_back(r.unit);
  const bool taking_over = std::any_of(replacements.begin(), replacements.end(),
                                      [](const Replacement& r) { return r.take_over_edges && !r.tasks.empty(); });
  return fill_block(graph, clear_block(graph, block, units, taking_over), std::move(replacements));
}

ClearedBlock clear_block(Graph& graph, const std::vector<TaskId>& block, const std::vector<UnitId>& units,
                         bool keep_crossing) {
  const auto in_block = task_mask(graph, block);
  ClearedBlock cleared{units, {}, {}, keep_crossing};
  for (UnitId unit : units) cleared.spots.push_back(chain_spot(graph, first_on_unit(graph, block, unit), in_block));
  if (keep_crossing) cleared.crossing = crossing_edges(graph, block);
  remove_block(graph, block);
  return cleared;
}

std::vector<std::vector<TaskId>> fill_block(Graph& graph, const ClearedBlock& cleared,
                                            std::vector<Replacement> replacements) {
  if (replacements.size() > cleared.units.size())
    throw Error(fmt::format("fill_block: {} replacements for a block cleared on {} units", replacements.size(),
                            cleared.units.size()));
  for (std::size_t i = 0; i < replacements.size(); ++i) {
    if (replacements[i].unit != cleared.units[i])
      throw Error(fmt::format("fill_block: replacement {} is on unit {}, the block's place {} on unit {}", i,
                              replacements[i].unit, i, cleared.units[i]));
    if (replacements[i].take_over_edges && !replacements[i].tasks.empty() && !cleared.kept_crossing)
      throw Error(fmt::format("fill_block: replacement {} takes over edges the cleared block did not keep", i));
  }
  std::vector<std::vector<TaskId>> inserted(replacements.size());
  std::map<UnitId, std::pair<TaskId, TaskId>> ends;  // of the units whose replacement takes over edges
  for (std::size_t i = 0; i < replacements.size(); ++i) {
    const ChainSpot& spot = cleared.spots[i];
    TaskId prev = spot.prev;
    TimeNs delay = spot.delay_in_ns;
    for (NewTask& task : replacements[i].tasks) {
      task.unit = replacements[i].unit;
      prev = insert_between(graph, std::move(task), prev, spot.next, delay, spot.delay_out_ns, spot.release_ns);
      inserted[i].push_back(prev);
      delay = replacements[i].gap_ns;
    }
    if (replacements[i].take_over_edges && !inserted[i].empty())
      ends[replacements[i].unit] = {inserted[i].front(), inserted[i].back()};
  }
  take_over_edges(graph, cleared.crossing, ends);
  return inserted;
}

std::size_t remove_with_launches(Graph& graph, const std::vector<TaskId>& gpu_tasks) {
  std::vector<TaskId> calls;
  for (TaskId t : gpu_tasks) {
    const TaskId call = launching_call(graph, t);  // NCCL kernels hang off their call by a communication edge
    if (call != kNoTask) calls.push_back(call);
  }
  std::sort(calls.begin(), calls.end());
  calls.erase(std::unique(calls.begin(), calls.end()), calls.end());
  // Decided before the GPU tasks go: removing one bridges its call to the task after it on the
  // stream with a launch-typed edge, which would look like another launch.
  std::vector<TaskId> sorted_tasks = gpu_tasks;
  std::sort(sorted_tasks.begin(), sorted_tasks.end());
  const auto launches_only_these = [&](TaskId call) {
    return graph.visit_successors(call, [&](TaskId s, const Edge& e) {
      const bool launch = e.type == EdgeType::launch || (e.type == EdgeType::communication && is_gpu(graph.task(s).kind));
      return !launch || std::binary_search(sorted_tasks.begin(), sorted_tasks.end(), s);
    });
  };
  calls.erase(std::remove_if(calls.begin(), calls.end(), [&](TaskId c) { return !launches_only_these(c); }), calls.end());
  for (TaskId t : gpu_tasks)
    if (!graph.removed(t)) graph.remove(t);
  std::size_t removed = 0;
  for (TaskId call : calls)
    if (!graph.removed(call)) graph.remove(call), ++removed;
  return removed;
}

UnitId add_comm_channel(Graph& graph, const std::string& name) {
  std::string unique = name;
  for (int k = 2; graph.find_unit(unique); ++k) unique = fmt::format("{} #{}", name, k);
  return graph.add_unit({UnitKind::comm_channel, unique, kNone, kNone, false});
}

}  // namespace daydream
