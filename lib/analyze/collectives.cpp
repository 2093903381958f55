// The collectives a trace records, and what its all-reduces say about its ring (analyze.hpp).
#include <algorithm>

#include "common/text.hpp"
#include "daydream/analyze.hpp"
#include "daydream/model.hpp"
#include "daydream/transform.hpp"

namespace daydream {

namespace {

bool names_allreduce(std::string_view name) {
  return text::contains_ignore_case(name, "allreduce") || text::contains_ignore_case(name, "all_reduce");
}

std::int64_t message_bytes(const CollectiveInfo& info) {
  const std::int64_t element = dtype_element_bytes(info.dtype);
  const std::int64_t elements = info.in_elements != kNone ? info.in_elements : info.out_elements;
  return element > 0 && elements >= 0 ? elements * element : kNone;
}

TraceCollective make_collective(std::string name, std::int64_t bytes, UnitId thread, TimeNs start_ns, TimeNs end_ns) {
  TraceCollective c;
  c.allreduce = names_allreduce(name);
  c.name = std::move(name);
  c.bytes = bytes;
  c.thread = thread;
  c.start_ns = start_ns;
  c.end_ns = end_ns;
  return c;
}

/// The record_param_comms range the call lies in, or nullptr.
TraceCollective* collective_around(std::vector<TraceCollective>& list, const Task& call) {
  for (auto& c : list)
    if (c.thread == call.unit && c.start_ns <= call.recorded_start_ns && call.recorded_start_ns < c.end_ns) return &c;
  return nullptr;
}

/// Attaches each traced communication task to the record_param_comms range its launch call lies
/// in; all-reduce kernels outside any range become collectives of unknown size.
void attach_comm_tasks(const Graph& graph, TraceCollectives& out) {
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (task.removed || task.kind != TaskKind::communication || task.source_event == kNone) continue;
    const TaskId call = launching_call(graph, t);
    TraceCollective* c = call == kNoTask ? nullptr : collective_around(out.list, graph.task(call));
    if (c == nullptr) {
      if (!names_allreduce(graph.name(t))) continue;
      const UnitId thread = call == kNoTask ? 0 : graph.task(call).unit;
      out.list.push_back(
          make_collective(std::string(graph.name(t)), kNone, thread, task.recorded_start_ns, task.recorded_start_ns));
      c = &out.list.back();
    }
    c->tasks.push_back(t);
    c->tasks_ns += task.duration_ns;
    c->allreduce = c->allreduce || names_allreduce(graph.name(t));  // DLRM's records name no collective
  }
}

}  // namespace

TraceCollectives read_trace_collectives(const Graph& graph) {
  TraceCollectives out;
  out.world_size = graph.world_size;
  for (const CollectiveRecord& r : graph.collectives()) {
    if (out.world_size == kNone || out.world_size < 1) out.world_size = r.info.group_size;
    out.list.push_back(make_collective(r.info.name, message_bytes(r.info), r.unit, r.start_ns, r.end_ns));
  }
  attach_comm_tasks(graph, out);
  std::stable_sort(out.list.begin(), out.list.end(),
                   [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  return out;
}

std::vector<TaskId> traced_allreduce_tasks(const TraceCollectives& collectives) {
  std::vector<TaskId> tasks;
  for (const auto& c : collectives.list)
    if (c.allreduce) tasks.insert(tasks.end(), c.tasks.begin(), c.tasks.end());
  std::sort(tasks.begin(), tasks.end());
  return tasks;
}

TracedRingFit fit_traced_allreduces(const TraceCollectives& collectives) {
  std::vector<MeasuredCollective> samples;
  TracedRingFit out;
  for (const auto& c : collectives.list) {
    if (!c.allreduce || c.tasks.empty()) continue;
    if (c.bytes == kNone)
      ++out.unsized;
    else
      samples.push_back({c.bytes, c.tasks_ns});
  }
  out.sized = samples.size();
  if (!samples.empty()) out.fit = fit_ring(samples, collectives.world_size);
  return out;
}

std::int64_t traced_ring_ranks(const TraceCollectives& collectives) {
  return collectives.world_size >= 2 ? collectives.world_size : 2;
}

double measured_ns_per_byte(const Graph& graph, const std::map<TaskId, std::int64_t>& bytes, std::int64_t ranks,
                            double latency_ns) {
  double busy_ns = 0, traffic = 0;
  for (const auto& [task, size] : bytes) {
    busy_ns += static_cast<double>(graph.task(task).duration_ns) - latency_ns;
    traffic += ring_traffic_bytes(ranks, static_cast<double>(size));
  }
  return traffic > 0 && busy_ns > 0 ? busy_ns / traffic : 0;
}

}  // namespace daydream
