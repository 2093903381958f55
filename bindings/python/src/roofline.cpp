// The roofline report for Python (roofline.hpp, docs/gpu_model.md "Roofline report"): the
// library's report as plain columns; daydream/_roofline.py makes them DataFrames. Thin: the
// rules live in lib/model.
#include <pybind11/stl.h>

#include <cmath>

#include "common.hpp"
#include "daydream/roofline.hpp"

namespace daydream::python {
namespace {

/// One table's rows as {column: list}, in the library's order.
py::dict row_columns(const std::vector<RooflineRow>& rows) {
  std::vector<std::string> name, engine, precision, bound, decided_by;
  std::vector<double> time_ms, shaped_ms, flops, bytes, intensity, ridge, tflops, gbps, share, expected_ms;
  std::vector<std::int64_t> kernels, shaped_kernels;
  const double none = std::nan("");
  for (const RooflineRow& r : rows) {
    name.push_back(r.name);
    engine.emplace_back(to_string(r.engine));
    precision.emplace_back(to_string(r.precision));
    bound.emplace_back(to_string(r.bound));
    decided_by.push_back(r.decided_by);
    time_ms.push_back(ms(r.time_ns));
    kernels.push_back(r.kernels);
    shaped_ms.push_back(ms(r.shaped_ns));
    shaped_kernels.push_back(r.shaped_kernels);
    flops.push_back(r.has_work() ? r.flops : none);
    bytes.push_back(r.has_work() ? r.bytes : none);
    intensity.push_back(r.intensity());
    ridge.push_back(r.ridge());
    tflops.push_back(r.achieved_flops() / 1e12);
    gbps.push_back(r.achieved_bandwidth() / 1e9);
    share.push_back(r.share_of_peak());
    expected_ms.push_back(r.has_work() ? r.expected_ns() / 1e6 : none);
  }
  py::dict out;
  out["name"] = name;
  out["engine"] = engine;
  out["precision"] = precision;
  out["time_ms"] = time_ms;
  out["kernels"] = kernels;
  out["flops"] = flops;
  out["bytes"] = bytes;
  out["achieved_tflops"] = tflops;
  out["achieved_gbps"] = gbps;
  out["share_of_peak"] = share;
  out["bound"] = bound;
  out["decided_by"] = decided_by;
  out["intensity"] = intensity;
  out["ridge"] = ridge;
  out["shaped_time_ms"] = shaped_ms;
  out["shaped_kernels"] = shaped_kernels;
  out["expected_ms"] = expected_ms;
  return out;
}

py::dict device_info(const RooflineReport& r) {
  py::list peaks;
  for (const RooflinePeak& p : r.peaks) {
    py::dict peak;
    peak["engine"] = std::string(to_string(p.engine));
    peak["precision"] = std::string(to_string(p.precision));
    peak["tflops"] = p.flops / 1e12;
    peak["ridge"] = p.ridge;
    peaks.append(peak);
  }
  py::dict out;
  out["name"] = r.device.name;
  out["recorded"] = r.recorded_gpu;
  out["memory_bandwidth_gbps"] = r.device.memory_bandwidth / 1e9;
  out["peaks"] = peaks;
  return out;
}

py::dict summary(const RooflineReport& r) {
  py::dict out;
  out["trace"] = r.trace;
  out["kernels"] = r.kernels;
  out["time_ms"] = ms(r.kernel_ns);
  out["shaped_kernels"] = r.shaped_kernels;
  out["shaped_time_ms"] = ms(r.shaped_ns);
  out["recorded_operators"] = r.recorded_operators;
  out["malformed_operators"] = r.malformed_operators;
  out["unusable_operators"] = r.unusable_operators;
  out["first_unusable"] = r.first_unusable;
  out["expected_by"] = r.expected_by_layer ? "layer" : "operator";
  return out;
}

}  // namespace

void init_roofline(py::module_& m) {
  m.def(
      "_roofline",
      [](const GraphPtr& g, const std::optional<std::string>& device, const std::optional<std::string>& devices) {
        const DeviceCatalog catalog = catalog_with(devices);
        RooflineReport report;
        {
          py::gil_scoped_release release;
          std::shared_lock lock(g->mutex);
          report = make_roofline(g->graph, roofline_device(catalog, g->graph, device.value_or("")));
        }
        py::dict out;
        out["device"] = device_info(report);
        out["summary"] = summary(report);
        out["classes"] = row_columns(report.classes);
        out["operators"] = row_columns(report.operators);
        out["layers"] = row_columns(report.layers);
        out["expected"] = row_columns(report.expected);
        return out;
      },
      py::arg("graph"), py::arg("device") = py::none(), py::arg("devices") = py::none(),
      "The roofline report of a graph's kernels as columns (daydream.roofline makes DataFrames of them): "
      "{device, summary, classes, operators, layers, expected}. Raises daydream.Error for an unknown device name "
      "or, without one, a trace whose GPU the catalogue does not know.");
}

}  // namespace daydream::python
