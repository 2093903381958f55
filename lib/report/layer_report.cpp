// `daydream layers`: time per layer and phase, and the share of GPU time attributed to a layer.
#include <algorithm>
#include <map>

#include "daydream/layers.hpp"
#include "daydream/report/layers.hpp"
#include "report/json_writer.hpp"

namespace daydream {
namespace {

double share(TimeNs part, TimeNs total) { return total > 0 ? double(part) / double(total) : 1.0; }

// The first `depth` components of "a/b/c" (all of it when depth <= 0 or the path is shorter).
std::string cut_path(std::string_view path, int depth) {
  std::size_t cut = std::string_view::npos;
  for (int i = 0; i < depth; ++i) {
    cut = path.find('/', i == 0 ? 0 : cut + 1);
    if (cut == std::string_view::npos) break;
  }
  return std::string(depth <= 0 ? path : path.substr(0, cut));
}

}  // namespace

double LayerReport::gpu_coverage() const { return share(gpu_attributed_ns, gpu_total_ns); }
double LayerReport::cpu_coverage() const { return share(cpu_attributed_ns, cpu_total_ns); }

LayerReport make_layer_report(const Graph& graph, int depth) {
  LayerReport report;
  report.trace = graph.source_path;
  report.depth = depth;
  std::map<std::pair<std::string, Phase>, LayerRow> rows;
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (task.removed) continue;
    const bool gpu = graph.units()[task.unit].kind != UnitKind::cpu_thread;
    (gpu ? report.gpu_total_ns : report.cpu_total_ns) += task.duration_ns;
    if (task.layer == 0) continue;
    (gpu ? report.gpu_attributed_ns : report.cpu_attributed_ns) += task.duration_ns;
    const std::string layer = cut_path(graph.string(task.layer), depth);
    LayerRow& row = rows[{layer, task.phase}];
    row.layer = layer;
    row.phase = task.phase;
    (gpu ? row.gpu_ns : row.cpu_ns) += task.duration_ns;
    row.kernels += task.kind == TaskKind::kernel ? 1 : 0;
  }
  for (auto& [key, row] : rows) report.rows.push_back(std::move(row));
  std::stable_sort(report.rows.begin(), report.rows.end(), [](const LayerRow& a, const LayerRow& b) {
    return a.gpu_ns != b.gpu_ns ? a.gpu_ns > b.gpu_ns : a.cpu_ns > b.cpu_ns;
  });
  return report;
}

std::string to_json(const LayerReport& r) {
  JsonWriter w;
  w.begin_object().key("trace").value(r.trace).key("depth").value(std::int64_t{r.depth});
  w.key("gpu_total_ms").milliseconds(r.gpu_total_ns).key("gpu_attributed_ms").milliseconds(r.gpu_attributed_ns);
  w.key("gpu_coverage").ratio(r.gpu_coverage());
  w.key("cpu_total_ms").milliseconds(r.cpu_total_ns).key("cpu_attributed_ms").milliseconds(r.cpu_attributed_ns);
  w.key("cpu_coverage").ratio(r.cpu_coverage()).key("layers").begin_array();
  for (const auto& row : r.rows) {
    w.begin_object().key("layer").value(row.layer).key("phase").value(to_string(row.phase));
    w.key("gpu_ms").milliseconds(row.gpu_ns).key("cpu_ms").milliseconds(row.cpu_ns).key("kernels").value(row.kernels);
    w.end_object();
  }
  return w.end_array().end_object().str();
}

}  // namespace daydream
