#include "common.hpp"

#include <algorithm>
#include <regex>
#include <tuple>
#include <unordered_map>

namespace daydream::scenarios {

TaskId launch_call_of(const Graph& graph, TaskId gpu_task) {
  for (const auto& p : graph.predecessors(gpu_task))
    if (p.edge.type == EdgeType::launch) return p.task;
  return kNoTask;
}

TimeNs median_ns(std::vector<TimeNs> values) {
  if (values.empty()) return 0;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

TimeNs median_launch_call_ns(const Graph& graph, TimeNs fallback_ns) {
  std::vector<TimeNs> durations;
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (task.removed || task.kind != TaskKind::runtime) continue;
    const auto name = graph.name(t);
    if (name.find("LaunchKernel") != std::string_view::npos) durations.push_back(task.duration_ns);
  }
  return durations.empty() ? fallback_ns : median_ns(std::move(durations));
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
    for (const auto& s : graph.successors(call)) {
      const bool launch = s.edge.type == EdgeType::launch ||
                          (s.edge.type == EdgeType::communication && is_gpu(graph.task(s.task).kind));
      if (launch && !std::binary_search(sorted_tasks.begin(), sorted_tasks.end(), s.task)) return false;
    }
    return true;
  };
  calls.erase(std::remove_if(calls.begin(), calls.end(), [&](TaskId c) { return !launches_only_these(c); }), calls.end());
  for (TaskId t : gpu_tasks)
    if (!graph.removed(t)) graph.remove(t);
  std::size_t removed = 0;
  for (TaskId call : calls)
    if (!graph.removed(call)) graph.remove(call), ++removed;
  return removed;
}

}  // namespace daydream::scenarios

// --- Blocks of work replaced as a whole ---

namespace daydream::scenarios {
namespace {

std::regex compile_pattern(const std::string& pattern) {
  check_pattern(pattern, "range");
  const bool ignore_case = pattern.rfind("(?i)", 0) == 0;
  auto flags = std::regex::ECMAScript;
  if (ignore_case) flags |= std::regex::icase;
  return std::regex(ignore_case ? pattern.substr(4) : pattern, flags);
}

bool is_sequential(EdgeType type) { return type == EdgeType::cpu_sequential || type == EdgeType::gpu_sequential; }

}  // namespace

std::vector<RangeWindow> range_windows(const Graph& graph, const std::string& pattern) {
  const std::regex regex = compile_pattern(pattern);
  std::unordered_map<std::uint32_t, bool> matches;  // per interned name: one regex search each
  std::vector<RangeWindow> windows;
  for (const CpuRange& r : graph.ranges()) {  // sorted by unit, then start
    auto [it, fresh] = matches.try_emplace(r.name, false);
    if (fresh) it->second = std::regex_search(std::string(graph.string(r.name)), regex);
    if (!it->second) continue;
    if (!windows.empty() && windows.back().unit == r.unit && r.start_ns < windows.back().end_ns)
      windows.back().end_ns = std::max(windows.back().end_ns, r.end_ns);
    else
      windows.push_back({r.unit, r.start_ns, r.end_ns});
  }
  return windows;
}

std::vector<std::vector<TaskId>> tasks_by_unit(const Graph& graph) {
  std::vector<std::vector<TaskId>> by_unit(graph.units().size());
  for (TaskId t = 0; t < graph.num_tasks(); ++t)
    if (!graph.removed(t)) by_unit[graph.task(t).unit].push_back(t);
  for (auto& list : by_unit)
    std::stable_sort(list.begin(), list.end(), [&](TaskId a, TaskId b) {
      return graph.task(a).recorded_start_ns < graph.task(b).recorded_start_ns;
    });
  return by_unit;
}

std::vector<TaskId> launched_by(const Graph& graph, TaskId call) {
  std::vector<TaskId> launched;
  for (const auto& s : graph.successors(call)) {
    const bool launch = s.edge.type == EdgeType::launch || s.edge.type == EdgeType::communication;
    if (launch && graph.units()[graph.task(s.task).unit].kind == UnitKind::gpu_stream) launched.push_back(s.task);
  }
  return launched;
}

TaskId chain_next(const Graph& graph, TaskId task) {
  for (const auto& s : graph.successors(task))
    if (is_sequential(s.edge.type) && graph.task(s.task).unit == graph.task(task).unit) return s.task;
  return kNoTask;
}

TaskId chain_prev(const Graph& graph, TaskId task) {
  for (const auto& p : graph.predecessors(task))
    if (is_sequential(p.edge.type) && graph.task(p.task).unit == graph.task(task).unit) return p.task;
  return kNoTask;
}

ChainSpot chain_spot(const Graph& graph, TaskId first, const std::vector<char>& in_block) {
  ChainSpot spot;
  spot.release_ns = graph.task(first).release_ns;
  for (const auto& p : graph.predecessors(first))
    if (is_sequential(p.edge.type) && graph.task(p.task).unit == graph.task(first).unit) {
      spot.prev = p.task;
      spot.delay_in_ns = p.edge.delay_ns;
    }
  for (TaskId t = first; t != kNoTask && spot.next == kNoTask;) {
    TaskId after = kNoTask;
    for (const auto& s : graph.successors(t))
      if (is_sequential(s.edge.type) && graph.task(s.task).unit == graph.task(t).unit) {
        after = s.task;
        const bool inside = s.task < in_block.size() && in_block[s.task];
        if (!inside) spot.next = s.task, spot.delay_out_ns = s.edge.delay_ns;
      }
    t = after;
  }
  return spot;
}

CrossingEdges remove_block(Graph& graph, std::vector<TaskId> tasks) {
  std::vector<char> in_block(graph.num_tasks(), 0);
  for (TaskId t : tasks) in_block[t] = 1;
  CrossingEdges crossing;
  for (TaskId t : tasks) {
    for (const auto& s : graph.successors(t)) {
      if (in_block[s.task]) graph.edge(t, s.task).delay_ns = 0;
      else crossing.out.push_back({t, s.task, s.edge});
    }
    for (const auto& p : graph.predecessors(t))
      if (!in_block[p.task]) crossing.in.push_back({p.task, t, p.edge});
  }
  auto key = [&](TaskId t) {
    const bool gpu = graph.units()[graph.task(t).unit].kind != UnitKind::cpu_thread;
    const TimeNs start = graph.task(t).recorded_start_ns;
    return std::tuple(gpu, gpu ? -start : start, gpu ? -static_cast<std::int64_t>(t) : t);
  };
  std::sort(tasks.begin(), tasks.end(), [&](TaskId a, TaskId b) { return key(a) < key(b); });
  for (TaskId t : tasks) graph.remove(t);
  return crossing;
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
  else graph.task(id).release_ns = release_ns;
  return id;
}

}  // namespace daydream::scenarios
