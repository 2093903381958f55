// The critical path broken down by what its time was spent on, and by layer.
#include <algorithm>
#include <map>

#include "common/text.hpp"
#include "daydream/predict.hpp"
#include "predict/critical_path_walk.hpp"

namespace daydream {

std::string_view to_string(PathCategory category) {
  switch (category) {
    case PathCategory::compute: return "compute";
    case PathCategory::cpu: return "cpu";
    case PathCategory::launch_overhead: return "launch_overhead";
    case PathCategory::communication: return "communication";
    case PathCategory::data_loading: return "data_loading";
    case PathCategory::synchronization: return "synchronization";
    case PathCategory::latency: return "latency";
  }
  return "?";
}

namespace {

bool waits_for_gpu(std::string_view call) {
  return text::contains(call, "Synchronize") || text::contains(call, "(wait)") || text::contains(call, "EventQuery");
}

}  // namespace

PathCategory path_category(const Graph& graph, TaskId task) {
  const Task& t = graph.task(task);
  if (t.kind == TaskKind::communication) return PathCategory::communication;
  if (is_gpu(t.kind)) return PathCategory::compute;
  if (t.phase == Phase::data_loading) return PathCategory::data_loading;
  if (t.kind == TaskKind::cpu) return PathCategory::cpu;
  return t.blocking || waits_for_gpu(graph.name(task)) ? PathCategory::synchronization : PathCategory::launch_overhead;
}

PathCategory PathBreakdown::dominant() const {
  return static_cast<PathCategory>(std::max_element(by_category_ns.begin(), by_category_ns.end()) - by_category_ns.begin());
}

PathBreakdown break_down_critical_path(const Graph& graph, const SimulationResult& result, TimeNs from_ns, TimeNs to_ns) {
  PathBreakdown out;
  std::map<std::string_view, TimeNs> by_layer;
  detail::walk_critical_path(
      result, from_ns, to_ns,
      [&](TaskId t, TimeNs covered) {
        out.by_category_ns[static_cast<std::size_t>(path_category(graph, t))] += covered;
        const std::uint32_t layer = graph.task(t).layer;
        by_layer[layer == 0 ? std::string_view("(no layer)") : graph.string(layer)] += covered;
      },
      [&](TimeNs gap) { out.by_category_ns[static_cast<std::size_t>(PathCategory::latency)] += gap; });
  for (TimeNs ns : out.by_category_ns) out.length_ns += ns;
  out.by_layer_ns.assign(by_layer.begin(), by_layer.end());
  std::stable_sort(out.by_layer_ns.begin(), out.by_layer_ns.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace daydream
