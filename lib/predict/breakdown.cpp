// The critical path broken down by what its time was spent on, and by layer.
#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "common/text.hpp"
#include "daydream/predict.hpp"
#include "graph/graph_access.hpp"
#include "predict/critical_path_walk.hpp"
#include "predict/report_columns.hpp"

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

/// path_category, reading each call name's text once (a path or a graph visits the same few
/// names thousands of times): per name id, 0 unknown, 1 waits for the GPU, 2 does not.
PathCategory category_of(const Graph& graph, TaskId task, std::vector<std::uint8_t>& waits_by_name) {
  const Task& t = graph.task(task);
  if (t.kind == TaskKind::communication) return PathCategory::communication;
  if (is_gpu(t.kind)) return PathCategory::compute;
  if (t.phase == Phase::data_loading) return PathCategory::data_loading;
  if (t.kind == TaskKind::cpu) return PathCategory::cpu;
  if (t.blocking) return PathCategory::synchronization;
  // ReportColumns::category_reads_name(t) holds from here: only a name tells a wait from a launch
  if (t.name >= waits_by_name.size()) waits_by_name.resize(t.name + 1, 0);
  std::uint8_t& waits = waits_by_name[t.name];
  if (waits == 0) waits = waits_for_gpu(graph.name(task)) ? 1 : 2;
  return waits == 1 ? PathCategory::synchronization : PathCategory::launch_overhead;
}

std::shared_ptr<const ReportColumns> build_report_columns(const Graph& graph) {
  auto columns = std::make_shared<ReportColumns>();
  const std::size_t n = graph.num_tasks();
  columns->category.resize(n);
  columns->layer.resize(n);
  columns->iteration.resize(n);
  std::vector<std::uint8_t> waits_by_name;
  const auto& iterations = graph.iterations();
  columns->marking_unit.assign(iterations.size(), ReportColumns::kNoUnit);
  for (std::size_t i = 0; i < iterations.size(); ++i)
    if (iterations[i].first_task != kNoTask) columns->marking_unit[i] = graph.task(iterations[i].first_task).unit;
  for (TaskId t = 0; t < n; ++t) {
    const Task& task = graph.task(t);
    columns->category[t] = static_cast<std::uint8_t>(category_of(graph, t, waits_by_name));
    columns->layer[t] = task.layer;
    columns->iteration[t] = task.iteration;
    const auto iteration = static_cast<std::size_t>(task.iteration);
    if (task.iteration >= 0 && iteration < iterations.size() && task.unit == columns->marking_unit[iteration])
      columns->marked.push_back({t, static_cast<std::uint32_t>(iteration)});
  }
  return columns;
}

}  // namespace

std::shared_ptr<const ReportColumns> report_columns(const Graph& graph) {
  return GraphAccess::report_columns(graph, [&] { return build_report_columns(graph); });
}

std::shared_ptr<const ReportColumns> report_columns_if_built(const Graph& graph) {
  return GraphAccess::report_columns_if_built(graph);
}

PathCategory path_category(const Graph& graph, TaskId task) {
  std::vector<std::uint8_t> waits_by_name;
  return category_of(graph, task, waits_by_name);
}

PathCategory PathBreakdown::dominant() const {
  return static_cast<PathCategory>(std::max_element(by_category_ns.begin(), by_category_ns.end()) - by_category_ns.begin());
}

PathBreakdown break_down_critical_path(const Graph& graph, const SimulationResult& result, TimeNs from_ns, TimeNs to_ns) {
  PathBreakdown out;
  // By the layer's string id, named only at the end; a layer whose tasks covered some of the path
  // has a positive sum (walk_critical_path reports only positive times).
  std::vector<TimeNs> by_layer_id;
  std::vector<std::uint8_t> waits_by_name;
  const auto columns = report_columns_if_built(graph);
  detail::walk_critical_path(
      result, from_ns, to_ns,
      [&](TaskId t, TimeNs covered) {
        const bool covered_by_columns = columns && columns->covers(t);
        const PathCategory category = covered_by_columns ? static_cast<PathCategory>(columns->category[t])
                                                         : category_of(graph, t, waits_by_name);
        out.by_category_ns[static_cast<std::size_t>(category)] += covered;
        const std::uint32_t layer = covered_by_columns ? columns->layer[t] : graph.task(t).layer;
        if (layer >= by_layer_id.size()) by_layer_id.resize(layer + 1, 0);
        by_layer_id[layer] += covered;
      },
      [&](TimeNs gap) { out.by_category_ns[static_cast<std::size_t>(PathCategory::latency)] += gap; });
  for (TimeNs ns : out.by_category_ns) out.length_ns += ns;
  std::map<std::string_view, TimeNs> by_layer;
  for (std::uint32_t layer = 0; layer < by_layer_id.size(); ++layer)
    if (by_layer_id[layer] > 0) by_layer[layer == 0 ? std::string_view("(no layer)") : graph.string(layer)] += by_layer_id[layer];
  out.by_layer_ns.assign(by_layer.begin(), by_layer.end());
  std::stable_sort(out.by_layer_ns.begin(), out.by_layer_ns.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace daydream
