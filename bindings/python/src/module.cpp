// The compiled module daydream._core: the exception, the four classes, then each part's
// functions (graph.cpp, transform.cpp, simulate.cpp, load.cpp). The pure-Python package
// `daydream` re-exports everything here.
#include <pybind11/stl.h>

#include "common.hpp"
#include "daydream/error.hpp"

#ifndef DAYDREAM_VERSION
#define DAYDREAM_VERSION "unknown"
#endif

namespace py = pybind11;
using namespace daydream::python;

namespace daydream::python {
void init_cli(py::module_& m);        // cli.cpp: _run_cli, for `python -m daydream`
void init_collector(py::module_& m);  // collector.cpp: the daydream.collector submodule
void init_predict(py::module_& m);    // predict.cpp: scenarios, predictions, sweeps, timelines
void init_analyze_data_parallel(py::module_& m);  // analyze_data_parallel.cpp: what ddp and p3 are made of
}

PYBIND11_MODULE(_core, m) {
  m.doc() = "daydream's compiled core: trace loading, the task graph, transformations and the simulator. "
            "Import the `daydream` package instead of this module.";
  m.attr("__version__") = DAYDREAM_VERSION;

  // daydream::Error -> daydream.Error (a RuntimeError) with the same message.
  auto error = py::register_exception<daydream::Error>(m, "Error", PyExc_RuntimeError);
  error.attr("__doc__") =
      "Raised for input that cannot be read (the message names the file, the event index and the field) "
      "and for requests that would make a graph invalid (cycles, removing a task twice). A RuntimeError.";

  // Classes first, so that every signature below names them.
  py::class_<GraphBox, GraphPtr>(m, "Graph",
      "A task dependency graph built from a trace: tasks on execution units (CPU threads, GPU streams, "
      "communication channels) joined by typed edges. Change it with select()/insert()/remove(), predict "
      "with simulate(). Changes are in place: copy() first to keep the original.");
  py::class_<TaskRef>(m, "Task",
      "One task of a graph (a CPU work segment, a CUDA API call, a GPU kernel/copy/memset or a "
      "communication task). Keeps its graph alive. Equal when it is the same task of the same graph.");
  py::class_<TaskSetRef>(m, "TaskSet",
      "A set of tasks of one graph, from Graph.select(), changed in bulk (scale, set_duration, shrink, "
      "remove). Iterating yields Task objects in id order.");
  py::class_<ResultData, std::shared_ptr<ResultData>>(m, "Result",
      "The outcome of Graph.simulate(): predicted iteration times, makespan, critical path and the "
      "start/end of every task.");

  m.attr("TASK_KINDS") = py::tuple(py::cast(task_kind_names()));
  m.attr("PHASES") = py::tuple(py::cast(phase_names()));
  m.attr("UNIT_KINDS") = py::tuple(py::cast(unit_kind_names()));
  m.attr("EDGE_TYPES") = py::tuple(py::cast(edge_type_names()));

  init_graph(m);
  init_transform(m);
  init_primitives(m);
  init_analyze_dataloader(m);
  init_transform_blocks(m);
  init_analyze_data_parallel(m);
  init_device(m);
  init_roofline(m);
  init_bottleneck(m);
  init_simulate(m);
  init_load(m);
  init_predict(m);
  init_collector(m);
  init_cli(m);
}
