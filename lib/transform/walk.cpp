// Walking the graph (transform.hpp): neighbours by edge type, runs of them on a chain, what a
// call launched, the tasks of each unit in trace order and the windows of named CPU ranges.
#include <algorithm>
#include <unordered_map>

#include "common/pattern.hpp"
#include "daydream/transform.hpp"
#include "graph/graph_access.hpp"
#include "graph/graph_storage.hpp"

namespace daydream {
namespace {

// An edge of `type` to `neighbor` that counts: a sequential one only on `task`'s own unit.
bool joins(const Graph& graph, TaskId task, TaskId neighbor, const Edge& edge, EdgeType type) {
  return edge.type == type && (!is_sequential(type) || is_chain_edge(graph, task, neighbor, type));
}

// The first successor (out) or predecessor of `task`, in edge order, whose edge passes `joined`.
template <class Joined>
TaskId first_neighbor(const Graph& graph, TaskId task, bool out, Joined joined) {
  TaskId found = kNoTask;
  const auto visit = [&](TaskId neighbor, const Edge& edge) {
    if (joined(neighbor, edge)) found = neighbor;
    return found == kNoTask;
  };
  if (out) graph.visit_successors(task, visit);
  else graph.visit_predecessors(task, visit);
  return found;
}

// Appends the GPU tasks `call` launched, in edge order.
void append_launched(const Graph& graph, TaskId call, std::vector<TaskId>& launched) {
  graph.visit_successors(call, [&](TaskId s, const Edge& e) {
    if (launches(graph, s, e)) launched.push_back(s);
    return true;
  });
}

}  // namespace

TaskId successor(const Graph& graph, TaskId task, EdgeType type) {
  return first_neighbor(graph, task, true, [&](TaskId s, const Edge& e) { return joins(graph, task, s, e, type); });
}

TaskId predecessor(const Graph& graph, TaskId task, EdgeType type) {
  return first_neighbor(graph, task, false, [&](TaskId p, const Edge& e) { return joins(graph, task, p, e, type); });
}

bool is_chain_edge(const Graph& graph, TaskId a, TaskId b, EdgeType type) {
  return is_sequential(type) && graph.task(a).unit == graph.task(b).unit;
}

TaskId chain_next(const Graph& graph, TaskId task) {
  return first_neighbor(graph, task, true, [&](TaskId s, const Edge& e) { return is_chain_edge(graph, task, s, e.type); });
}

TaskId chain_prev(const Graph& graph, TaskId task) {
  return first_neighbor(graph, task, false, [&](TaskId p, const Edge& e) { return is_chain_edge(graph, p, task, e.type); });
}

std::vector<TaskId> run_after(const Graph& graph, TaskId task, std::size_t max, const std::function<bool(TaskId)>& keep) {
  std::vector<TaskId> run;
  for (TaskId t = chain_next(graph, task); run.size() < max && t != kNoTask && keep(t); t = chain_next(graph, t))
    run.push_back(t);
  return run;
}

std::vector<TaskId> run_before(const Graph& graph, TaskId task, std::size_t max,
                               const std::function<bool(TaskId)>& keep) {
  std::vector<TaskId> run;
  for (TaskId t = chain_prev(graph, task); run.size() < max && t != kNoTask && keep(t); t = chain_prev(graph, t))
    run.push_back(t);
  std::reverse(run.begin(), run.end());
  return run;
}

bool launches(const Graph& graph, TaskId target, const Edge& edge) {
  const bool launch = edge.type == EdgeType::launch || edge.type == EdgeType::communication;
  return launch && graph.units()[graph.task(target).unit].kind == UnitKind::gpu_stream;
}

std::vector<TaskId> launched_by(const Graph& graph, TaskId call) {
  std::vector<TaskId> launched;
  append_launched(graph, call, launched);
  return launched;
}

std::vector<TaskId> launched_by(const Graph& graph, const std::vector<TaskId>& calls) {
  std::vector<TaskId> launched;
  for (TaskId call : calls) append_launched(graph, call, launched);
  return launched;
}

namespace {

/// Merges the live tasks added since the graph's recorded order was built (`from` on), of the
/// units `wanted` keeps, into their unit's list `list_of(unit)` (recorded start, then id).
template <class Wanted, class ListOf>
void merge_added_tasks(const Graph& graph, TaskId from, const TaskColumns& columns, Wanted&& wanted,
                       ListOf&& list_of) {
  std::vector<TaskId> added;
  for (TaskId t = from; t < graph.num_tasks(); ++t)
    if (!columns.removed[t] && wanted(columns.unit[t])) added.push_back(t);
  if (added.empty()) return;
  const detail::TaskRecords& records = GraphAccess::records(graph);  // recorded starts
  const auto earlier = [&](TaskId a, TaskId b) {
    return std::pair(records.at(a).recorded_start_ns, a) < std::pair(records.at(b).recorded_start_ns, b);
  };
  const auto& unit_of = columns.unit;
  std::sort(added.begin(), added.end(), [&](TaskId a, TaskId b) {
    return unit_of[a] != unit_of[b] ? unit_of[a] < unit_of[b] : earlier(a, b);
  });
  for (auto first = added.begin(); first != added.end();) {
    const UnitId unit = unit_of[*first];
    const auto last = std::find_if(first, added.end(), [&](TaskId t) { return unit_of[t] != unit; });
    std::vector<TaskId>& list = list_of(unit);
    const auto middle = static_cast<std::ptrdiff_t>(list.size());
    list.insert(list.end(), first, last);
    std::inplace_merge(list.begin(), list.begin() + middle, list.end(), earlier);
    first = last;
  }
}

}  // namespace

std::vector<std::vector<TaskId>> tasks_by_unit(const Graph& graph) {
  // The graph's recorded order covers the tasks it held when first asked; tasks added since
  // (a what-if's) are sorted here and merged in. Within a unit: by recorded start, then id.
  const auto order = GraphAccess::recorded_order(graph);
  const auto columns = GraphAccess::task_columns(graph);
  std::vector<std::vector<TaskId>> by_unit(graph.units().size());
  for (const TaskId t : *order)
    if (!columns->removed[t]) by_unit[columns->unit[t]].push_back(t);
  merge_added_tasks(graph, static_cast<TaskId>(order->size()), *columns, [](UnitId) { return true; },
                    [&](UnitId u) -> std::vector<TaskId>& { return by_unit[u]; });
  return by_unit;
}

std::vector<TaskId> tasks_of_unit(const Graph& graph, UnitId unit) {
  // That unit's stretch of the recorded order (sorted by unit first), and its tasks added since.
  if (unit >= graph.units().size()) return {};
  const auto order = GraphAccess::recorded_order(graph);
  const auto columns = GraphAccess::task_columns(graph);
  std::vector<TaskId> tasks;
  auto at = std::partition_point(order->begin(), order->end(), [&](TaskId t) { return columns->unit[t] < unit; });
  for (; at != order->end() && columns->unit[*at] == unit; ++at)
    if (!columns->removed[*at]) tasks.push_back(*at);
  merge_added_tasks(graph, static_cast<TaskId>(order->size()), *columns, [&](UnitId u) { return u == unit; },
                    [&](UnitId) -> std::vector<TaskId>& { return tasks; });
  return tasks;
}

std::map<UnitId, std::vector<TaskId>> group_by_unit(const Graph& graph, const std::vector<TaskId>& tasks) {
  std::map<UnitId, std::vector<TaskId>> groups;
  for (TaskId t : tasks) groups[graph.task(t).unit].push_back(t);
  for (auto& [unit, list] : groups)
    std::sort(list.begin(), list.end(), [&](TaskId a, TaskId b) {
      return std::pair(graph.task(a).recorded_start_ns, a) < std::pair(graph.task(b).recorded_start_ns, b);
    });
  return groups;
}

std::vector<char> task_mask(const Graph& graph, const std::vector<TaskId>& tasks) {
  std::vector<char> mask(graph.num_tasks(), 0);
  for (TaskId t : tasks) mask[t] = 1;
  return mask;
}

std::vector<RangeWindow> range_windows(const Graph& graph, const std::string& pattern) {
  const Pattern regex(pattern, "range");
  std::unordered_map<std::uint32_t, bool> matches;  // per interned name: one regex search each
  std::vector<RangeWindow> windows;
  for (const CpuRange& r : graph.ranges()) {  // sorted by unit, then start
    auto [it, fresh] = matches.try_emplace(r.name, false);
    if (fresh) it->second = regex.search(graph.string(r.name));
    if (!it->second) continue;
    if (!windows.empty() && windows.back().unit == r.unit && r.start_ns < windows.back().end_ns)
      windows.back().end_ns = std::max(windows.back().end_ns, r.end_ns);
    else
      windows.push_back({r.unit, r.start_ns, r.end_ns});
  }
  return windows;
}

std::vector<TaskId> tasks_in(const Graph& graph, const std::vector<TaskId>& unit_tasks, const RangeWindow& window) {
  auto start = [&](TaskId t) { return graph.task(t).recorded_start_ns; };
  auto it = std::lower_bound(unit_tasks.begin(), unit_tasks.end(), window.start_ns,
                             [&](TaskId t, TimeNs s) { return start(t) < s; });
  std::vector<TaskId> inside;
  for (; it != unit_tasks.end() && window.contains(start(*it)); ++it)
    if (!graph.removed(*it)) inside.push_back(*it);
  return inside;
}

RangeTasks::RangeTasks(const Graph& graph, const std::string& pattern)
    : graph_(&graph), windows_(range_windows(graph, pattern)), by_unit_(tasks_by_unit(graph)) {}

std::vector<TaskId> RangeTasks::tasks(const RangeWindow& window, UnitId unit) const {
  if (unit >= by_unit_.size()) return {};  // a unit added since: none of its tasks has a recorded time
  return tasks_in(*graph_, by_unit_[unit], window);
}

const RangeWindow* RangeTasks::around(TaskId task) const {
  const Task& t = graph_->task(task);
  const auto key = std::pair(t.unit, t.recorded_start_ns);
  auto it = std::upper_bound(windows_.begin(), windows_.end(), key,
                             [](const auto& k, const RangeWindow& w) { return k < std::pair(w.unit, w.start_ns); });
  if (it == windows_.begin()) return nullptr;
  --it;
  return it->unit == t.unit && it->contains(t.recorded_start_ns) ? &*it : nullptr;
}

}  // namespace daydream
