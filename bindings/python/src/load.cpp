// daydream.load(): read a trace, build its graph and optionally map tasks to layers, without
// the GIL.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <optional>

#include "common.hpp"
#include "daydream/ingest.hpp"
#include "daydream/layers.hpp"

namespace daydream::python {
namespace {

GraphPtr load(const std::filesystem::path& path, const std::optional<std::filesystem::path>& layers) {
  py::gil_scoped_release release;
  auto box = std::make_shared<GraphBox>(build_graph(load_trace(path)));
  if (layers) apply_layer_file(box->graph, *layers);
  return box;
}

}  // namespace

void init_load(py::module_& m) {
  m.def("load", &load, py::arg("path"), py::arg("layers") = py::none(),
        "Reads a trace (any supported format: Kineto Chrome-trace JSON, plain or gzip-compressed) and builds "
        "its task graph. layers: None, or the path of a JSON layer file (see docs/formats.md) giving tasks a "
        "layer and a phase. Raises daydream.Error (naming the file, event and field) for unreadable input.");
}

}  // namespace daydream::python
