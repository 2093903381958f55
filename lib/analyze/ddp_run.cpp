// A traced DDP run: its all-reduces per iteration and how DDP would re-bucket them, the copy-back and
// buffer broadcasts around them (analyze.hpp).
#include <algorithm>
#include <numeric>

#include "common/text.hpp"
#include "daydream/analyze.hpp"
#include "daydream/error.hpp"

namespace daydream {

namespace {

/// When the CPU launched a GPU task: its launching call's start, else (launched before the trace
/// began) the task's own.
TimeNs launch_start_ns(const Graph& graph, TaskId task) {
  const TaskId call = launching_call(graph, task);
  return graph.task(call == kNoTask ? task : call).recorded_start_ns;
}

void sort_by_launch(const Graph& graph, TracedPass& pass) {
  std::vector<std::size_t> order(pass.allreduces.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return launch_start_ns(graph, pass.allreduces[a]) < launch_start_ns(graph, pass.allreduces[b]);
  });
  TracedPass sorted = pass;
  for (std::size_t i = 0; i < order.size(); ++i) {
    sorted.allreduces[i] = pass.allreduces[order[i]];
    sorted.recorded_bytes[i] = pass.recorded_bytes[order[i]];
  }
  pass = std::move(sorted);
}

bool names_broadcast(std::string_view name) { return text::contains_ignore_case(name, "broadcast"); }

/// A copy that coalesces tensors: a device-to-device copy, or a kernel named "copy".
bool is_copy_task(const Graph& graph, TaskId task) {
  return is_device_to_device_copy(graph, task) ||
         (graph.task(task).kind == TaskKind::kernel && text::contains_ignore_case(graph.name(task), "copy"));
}

/// The unbroken run of copy tasks of the broadcast's iteration in `launches` (its thread's, by
/// launch start) on either side of the broadcast's launch, appended to `out`.
void append_copies_around(const Graph& graph, const std::vector<std::pair<TimeNs, TaskId>>& launches,
                          TaskId broadcast, TimeNs launch_ns, std::vector<TaskId>& out) {
  const auto belongs = [&](TaskId t) {
    return is_copy_task(graph, t) && graph.task(t).iteration == graph.task(broadcast).iteration;
  };
  const auto at = std::lower_bound(launches.begin(), launches.end(), std::make_pair(launch_ns, TaskId{0}));
  for (auto it = at; it != launches.begin() && belongs(std::prev(it)->second); --it) out.push_back(std::prev(it)->second);
  for (auto it = at; it != launches.end() && belongs(it->second); ++it) out.push_back(it->second);
}

}  // namespace

std::vector<TracedPass> traced_passes(const Graph& graph, const TraceCollectives& collectives) {
  const auto& iterations = graph.iterations();
  std::vector<TracedPass> passes(iterations.size());
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    passes[i].iteration = static_cast<std::int32_t>(i);
    passes[i].end_ns = iterations[i].measured_start_ns + iterations[i].measured_ns;
  }
  for (const TraceCollective& c : collectives.list) {
    if (!c.allreduce) continue;
    const auto kernels = static_cast<std::int64_t>(c.tasks.size());
    for (TaskId t : c.tasks) {
      const std::int32_t iteration = graph.task(t).iteration;  // its launch's iteration
      if (iteration < 0 || static_cast<std::size_t>(iteration) >= passes.size()) continue;
      passes[iteration].allreduces.push_back(t);
      passes[iteration].recorded_bytes.push_back(c.bytes == kNone ? kNone : c.bytes / kernels);
    }
  }
  std::erase_if(passes, [](const TracedPass& p) { return p.allreduces.empty(); });
  for (TracedPass& pass : passes) sort_by_launch(graph, pass);
  return passes;
}

bool is_device_to_device_copy(const Graph& graph, TaskId task) {
  if (graph.task(task).kind != TaskKind::memcpy) return false;
  const std::string_view name = graph.name(task);
  return text::contains(name, "DtoD") || text::contains(name, "Device -> Device");
}

std::vector<TaskId> copy_back_copies(const Graph& graph, const LaunchIndex& launches, const TracedPass& pass) {
  if (pass.allreduces.empty()) return {};
  const TaskId call = launching_call(graph, pass.allreduces.back());
  if (call == kNoTask) return {};
  const Task& last_launch = graph.task(call);
  std::vector<TaskId> copies;
  for (TaskId t : launches.launched_in(last_launch.unit, last_launch.recorded_start_ns + 1, pass.end_ns))
    if (!graph.removed(t) && is_device_to_device_copy(graph, t)) copies.push_back(t);
  return copies;
}

std::vector<TaskId> buffer_broadcast_tasks(const Graph& graph, const LaunchIndex& launches) {
  const bool any_iteration = graph.iterations().empty();  // no steps marked: every broadcast counts
  std::vector<TaskId> tasks;
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (task.removed || task.kind != TaskKind::communication || !names_broadcast(graph.name(t))) continue;
    if (task.iteration < 0 && !any_iteration) continue;  // DDP's construction broadcasts parameters once, before
    tasks.push_back(t);
    const TaskId call = launching_call(graph, t);
    if (call != kNoTask)
      append_copies_around(graph, launches.launches_of(graph.task(call).unit), t, graph.task(call).recorded_start_ns,
                           tasks);
  }
  std::sort(tasks.begin(), tasks.end());
  tasks.erase(std::unique(tasks.begin(), tasks.end()), tasks.end());
  return tasks;
}

CopyBack checked_copy_back(const Graph& graph, const LaunchIndex& launches, const std::vector<TracedPass>& passes) {
  CopyBack out;
  for (const TracedPass& pass : passes) {
    const auto copies = copy_back_copies(graph, launches, pass);
    std::int64_t bytes = 0;
    for (TaskId t : copies) bytes += std::max<std::int64_t>(0, graph.task(t).bytes);
    const auto& recorded = pass.recorded_bytes;
    const bool sized = std::find(recorded.begin(), recorded.end(), kNone) == recorded.end();
    if (sized && bytes != std::accumulate(recorded.begin(), recorded.end(), std::int64_t{0})) {
      ++out.mismatched;
      continue;
    }
    out.copies.insert(out.copies.end(), copies.begin(), copies.end());
    out.copies_per_pass.push_back(copies.size());
    out.bytes_per_pass.push_back(bytes);
  }
  return out;
}

std::vector<Bucket> rebucket_traced_pass(const TracedPass& pass, const std::map<TaskId, std::int64_t>& bytes,
                                         std::int64_t first_cap, std::int64_t cap) {
  std::vector<Gradient> members;  // as fill_buckets sees gradients
  for (TaskId t : pass.allreduces) {
    const auto size = bytes.find(t);
    if (size == bytes.end())
      throw Error(
          "re-bucketing needs the size of every traced all-reduce, and the trace records none "
          "(record_param_comms 'In msg nelems' and dtype; Nsight traces have no such record): give params "
          "(the model's parameter count, e.g. params=25.6e6) or param_file");
    Gradient g;
    g.ready = t;
    g.bytes = size->second;
    members.push_back(g);
  }
  return fill_buckets(members, first_cap, cap);
}

}  // namespace daydream
