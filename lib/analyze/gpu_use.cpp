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
  const auto launched = launched_by(graph, cpu_task);
  if (launched.empty()) return graph.task(cpu_task).blocking ? GpuUse::wait : GpuUse::none;
  const auto any = [&](auto pred) { return std::any_of(launched.begin(), launched.end(), pred); };
  if (any([&](TaskId g) { return is_host_copy(graph, g); })) return GpuUse::host_copy;
  const auto other = [&](TaskId g) {
    const TaskKind kind = graph.task(g).kind;
    return kind != TaskKind::kernel && kind != TaskKind::memset;
  };
  return any(other) ? GpuUse::device_work : GpuUse::kernels;
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
