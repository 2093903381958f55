// daydream.load(): read a trace, build its graph and optionally map tasks to layers, without
// the GIL.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <optional>
#include <vector>

#include "common.hpp"
#include "daydream/ingest.hpp"
#include "daydream/job.hpp"
#include "daydream/layers.hpp"

namespace daydream::python {
namespace {

using Path = std::filesystem::path;

/// The box of a graph built from `paths`: maps its layers (when given) and records where it
/// came from and its fingerprint, so that an executor sweep can rebuild it elsewhere and check it
/// is the same graph. Called without the GIL.
GraphPtr loaded_box(Graph graph, const std::vector<Path>& paths, const std::optional<Path>& layers) {
  auto box = std::make_shared<GraphBox>(std::move(graph));
  if (layers) {
    apply_layer_file(box->graph, *layers);
    box->layers = std::filesystem::absolute(*layers).lexically_normal().string();
  }
  for (const Path& path : paths) box->sources.push_back(std::filesystem::absolute(path).lexically_normal().string());
  box->loaded_fingerprint = box->graph.fingerprint();
  return box;
}

/// The graph options of load(..., iterations=): the defaults, with the iterations pattern if given.
GraphOptions graph_options(const std::optional<std::string>& iterations) {
  GraphOptions options;
  options.iterations = iterations.value_or("");
  return options;
}

/// Every rank of one job: one graph (include/daydream/job.hpp). Without the GIL.
GraphPtr load_job_box(const std::vector<Path>& paths, const std::optional<Path>& layers, const GraphOptions& options) {
  const std::vector<Path> files = expand_trace_inputs(paths);  // the sources are the files, not the folders
  return loaded_box(load_job(files, {options, 0}), files, layers);
}

GraphPtr load(const Path& path, const std::optional<Path>& layers, const std::optional<std::string>& iterations) {
  py::gil_scoped_release release;
  std::error_code ec;  // a path that cannot be examined is refused, with its reason, by load_trace
  if (std::filesystem::is_directory(path, ec)) return load_job_box({path}, layers, graph_options(iterations));
  return loaded_box(build_graph(load_trace(path), graph_options(iterations)), {path}, layers);
}

GraphPtr load_ranks(const std::vector<Path>& paths, const std::optional<Path>& layers,
                    const std::optional<std::string>& iterations) {
  py::gil_scoped_release release;
  return load_job_box(paths, layers, graph_options(iterations));
}

}  // namespace

void init_load(py::module_& m) {
  m.def("load", &load, py::arg("path"), py::arg("layers") = py::none(), py::arg("iterations") = py::none(),
        "Reads a trace (any supported format: Kineto Chrome-trace JSON, plain or gzip-compressed; Nsight Systems "
        "SQLite) and builds its task graph. layers: None, or the path of a JSON layer file (see docs/formats.md) "
        "giving tasks a layer and a phase. iterations: None (ranges named ProfilerStep#N, else step N, iteration N "
        "or iter N, else from one Optimizer.step#... range's end to the next) or a regular expression naming the ranges that are iterations (measured start to start; see "
        "Graph.iteration_rule). The graph remembers both files (Graph.sources, Graph.layer_file) so that "
        "daydream.sweep(..., executor=...) can rebuild it on other processes. Raises daydream.Error (naming the "
        "file, event and field) for unreadable input. A directory loads every trace in it as one job (below).");
  m.def("load", &load_ranks, py::arg("paths"), py::arg("layers") = py::none(), py::arg("iterations") = py::none(),
        "Reads the traces of every rank of one distributed job (files or directories; distributedInfo gives "
        "each one's rank) and merges them into one graph: clocks aligned on the collectives, each collective "
        "matched across ranks (process group, name, sequence) and coupled so that it ends on no rank before "
        "every participant reached it. Graph.replay() then reports per rank and for the job (the dict of "
        "`daydream replay FILES... --json`); the scenarios network, rank_speed and scale_out apply. Raises "
        "daydream.Error for duplicate ranks, mismatched world sizes or a trace without a rank; missing ranks "
        "give a partial job (see replay()['job']['partial']).");
}

}  // namespace daydream::python
