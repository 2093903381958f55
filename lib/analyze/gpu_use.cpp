// What a CPU task does with the GPU (analyze.hpp): what it launched, whether it waited.
#include <algorithm>

#include "common/text.hpp"
#include "daydream/analyze.hpp"
#include "daydream/transform.hpp"

namespace daydream {

bool is_host_copy(const Graph& graph, TaskId task) {
  return graph.task(task).kind == TaskKind::memcpy && !is_device_to_device_copy(graph, task) &&
         !text::contains(graph.name(task), "PtoP");
}

GpuUse gpu_use(const Graph& graph, TaskId cpu_task) {
  // One walk over the successors (launched_by's rule), without a list: scenarios ask this of
  // every CPU task of a step.
  bool launched = false, host_copy = false, other = false;
  graph.visit_successors(cpu_task, [&](TaskId g, const Edge& e) {
    if (!launches(graph, g, e)) return true;
    launched = true;
    const TaskKind kind = graph.task(g).kind;
    other = other || (kind != TaskKind::kernel && kind != TaskKind::memset);
    host_copy = is_host_copy(graph, g);
    return !host_copy;  // the answer whatever else it launched
  });
  if (!launched) return graph.task(cpu_task).blocking ? GpuUse::wait : GpuUse::none;
  if (host_copy) return GpuUse::host_copy;
  return other ? GpuUse::device_work : GpuUse::kernels;
}

std::string_view to_string(GpuUse use) {
  switch (use) {
    case GpuUse::none: return "none";
    case GpuUse::kernels: return "kernels";
    case GpuUse::device_work: return "device_work";
    case GpuUse::host_copy: return "host_copy";
    case GpuUse::wait: return "wait";
  }
  return "?";
}

bool waits_for_gpu(const Graph& graph, TaskId cpu_task) {
  return !graph.visit_predecessors(cpu_task, [&](TaskId p, const Edge&) {
    return graph.units()[graph.task(p).unit].kind != UnitKind::gpu_stream;
  });
}

}  // namespace daydream
