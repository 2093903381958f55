// GPU work and its launches (transform.hpp): the edge by which a call launches a GPU task, GPU
// work launched as one CUDA graph, and a GPU task inserted together with the call that launches it.
#include "daydream/transform.hpp"

namespace daydream {

void connect_launch(Graph& graph, TaskId call, TaskId gpu_task) {
  const TaskKind kind = graph.task(gpu_task).kind;
  const EdgeType type = kind == TaskKind::communication ? EdgeType::communication : EdgeType::launch;
  graph.connect(call, gpu_task,
                {type, Timing::start_to_start, graph.calibration().launch_latency_ns[static_cast<std::size_t>(kind)], false});
}

std::vector<TaskId> launch_graph(Graph& graph, TaskId call, const std::map<UnitId, std::vector<TaskId>>& streams) {
  std::vector<TaskId> work, tails;
  for (const auto& [stream, tasks] : streams) {
    connect_launch(graph, call, tasks.front());
    work.insert(work.end(), tasks.begin(), tasks.end());
    tails.push_back(tasks.back());
  }
  const auto in_graph = task_mask(graph, work);
  for (TaskId t : work)
    for (const auto& p : graph.predecessors(t))
      if (in_graph[p.task] && is_chain_edge(graph, p.task, t, p.edge.type))
        graph.edge(p.task, t).delay_ns = graph.calibration().gpu_gap_ns;
  return tails;
}

std::optional<std::pair<TaskId, TaskId>> insert_launched(Graph& graph, NewTask call, NewTask gpu_task, TaskId call_next,
                                                         TaskId gpu_next) {
  const TaskId cpu_before = predecessor(graph, call_next, EdgeType::cpu_sequential);
  if (cpu_before == kNoTask) return std::nullopt;
  const TaskId gpu_before = predecessor(graph, gpu_next, EdgeType::gpu_sequential);
  call.unit = graph.task(call_next).unit;
  call.after = {cpu_before};
  call.before = {call_next};
  call.after_delay_ns = call.before_delay_ns = 0;
  const TaskId call_id = graph.insert(call);
  gpu_task.unit = graph.task(gpu_next).unit;
  gpu_task.after.clear();
  if (gpu_before != kNoTask) gpu_task.after = {gpu_before};
  gpu_task.before = {gpu_next};
  gpu_task.after_delay_ns = 0;
  gpu_task.before_delay_ns = graph.calibration().gpu_gap_ns;
  const TaskId gpu_id = graph.insert(gpu_task);
  connect_launch(graph, call_id, gpu_id);
  return std::pair(call_id, gpu_id);
}

}  // namespace daydream
