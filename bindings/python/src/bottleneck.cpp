// "What is my bottleneck?" for Python (bottleneck.hpp, docs/python.md): the library's report as
// plain columns; daydream/_bottleneck.py makes them DataFrames. Thin: the rules live in lib/predict.
#include <pybind11/stl.h>

#include "common.hpp"
#include "daydream/bottleneck.hpp"

namespace daydream::python {
namespace {

py::dict named_columns(const std::vector<NamedTime>& rows) {
  std::vector<std::string> name;
  std::vector<double> time_ms;
  std::vector<std::int64_t> tasks;
  for (const NamedTime& r : rows) name.push_back(r.name), time_ms.push_back(ms(r.ns)), tasks.push_back(r.tasks);
  py::dict out;
  out["name"] = name, out["ms"] = time_ms, out["tasks"] = tasks;
  return out;
}

py::dict stream_columns(const std::vector<StreamIdle>& streams) {
  py::dict out;
  std::vector<std::string> unit;
  std::vector<bool> main;
  std::vector<double> window, busy, idle;
  std::vector<std::vector<double>> causes(kIdleCauseCount);
  for (const StreamIdle& s : streams) {
    unit.push_back(s.unit), main.push_back(s.main), window.push_back(ms(s.window_ns)), busy.push_back(ms(s.busy_ns)), idle.push_back(ms(s.idle_ns()));
    for (std::size_t c = 0; c < kIdleCauseCount; ++c) causes[c].push_back(ms(s.idle_by_cause_ns[c]));
  }
  out["unit"] = unit, out["main"] = main, out["window_ms"] = window, out["busy_ms"] = busy, out["idle_ms"] = idle;
  for (std::size_t c = 0; c < kIdleCauseCount; ++c)
    out[py::str(std::string(to_string(static_cast<IdleCause>(c))) + "_ms")] = causes[c];
  return out;
}

py::dict path_columns(const PathBreakdown& path) {
  std::vector<std::string> category, layer;
  std::vector<double> category_ms, layer_ms;
  for (std::size_t c = 0; c < kPathCategoryCount; ++c)
    category.emplace_back(to_string(static_cast<PathCategory>(c))), category_ms.push_back(ms(path.by_category_ns[c]));
  for (const auto& [name, ns] : path.by_layer_ns) layer.push_back(name), layer_ms.push_back(ms(ns));
  py::dict out;
  out["categories"] = py::dict(py::arg("category") = category, py::arg("ms") = category_ms);
  out["layers"] = py::dict(py::arg("layer") = layer, py::arg("ms") = layer_ms);
  out["length_ms"] = ms(path.length_ns);
  out["dominant"] = std::string(to_string(path.dominant()));
  return out;
}

}  // namespace

void init_bottleneck(py::module_& m) {
  m.def(
      "_bottleneck",
      [](const GraphPtr& g) {
        BottleneckReport report;
        {
          py::gil_scoped_release release;
          Graph copy;
          {
            std::shared_lock lock(g->mutex);
            copy = g->graph;  // cheap: copies share the edge structure
          }
          report = find_bottleneck(Predictor(std::move(copy)));
        }
        py::dict out;
        out["iteration_ms"] = ms(report.iteration_ns);
        out["iterations"] = report.iterations;
        out["window_ms"] = py::make_tuple(ms(report.window_start_ns), ms(report.window_end_ns));
        out["critical_path"] = path_columns(report.critical_path);
        out["operators"] = named_columns(report.by_operator);
        out["kernels"] = named_columns(report.by_kernel);
        out["streams"] = stream_columns(report.streams);
        out["summary"] = report.summary;
        return out;
      },
      py::arg("graph"),
      "The bottleneck report of a graph's unmodified run as columns (daydream.bottleneck makes DataFrames of "
      "them): {iteration_ms, iterations, window_ms, critical_path {categories, layers, length_ms, dominant}, "
      "operators, kernels, streams, summary}.");
}

}  // namespace daydream::python
