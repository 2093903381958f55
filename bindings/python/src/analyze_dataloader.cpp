// A DataLoader's batches as the trace shows them (analyze.hpp, docs/scenarios/dataloader_workers.md),
// for scripts written in Python: where the main thread loaded or took each batch, the load times
// that the waits of a run recorded with worker processes imply, those waits and the threads idle
// across them. Thin: every rule lives in lib/analyze/dataloader.cpp; this file converts.
#include <pybind11/stl.h>

#include "common.hpp"
#include "daydream/analyze.hpp"

namespace daydream::python {
namespace {

using GraphClass = py::class_<GraphBox, GraphPtr>;

py::list tasks_of(const GraphPtr& box, const std::vector<TaskId>& ids) {
  py::list out;
  for (TaskId id : ids) out.append(TaskRef{box, id});
  return out;
}

py::list batch_loads_py(const GraphPtr& box) {
  py::list out;
  for (const BatchLoad& load : batch_loads(box->graph))
    out.append(py::dict(py::arg("name") = std::string(box->graph.string(load.range.name)),
                        py::arg("thread") = box->graph.units()[load.range.unit].name,
                        py::arg("start_ns") = load.range.start_ns, py::arg("end_ns") = load.range.end_ns,
                        py::arg("tasks") = tasks_of(box, load.tasks), py::arg("in_workers") = load.in_workers));
  return out;
}

py::list batch_takes_py(const GraphPtr& box) {
  py::list out;
  for (const BatchTake& take : batch_takes(box->graph, batch_loads(box->graph)))
    out.append(py::dict(py::arg("task") = TaskRef{box, take.task}, py::arg("wait_from") = task_or_none(box, take.wait_from),
                        py::arg("gap_ns") = take.gap_ns, py::arg("taken_ns") = take.taken_ns));
  return out;
}

/// Takes as Graph.batch_takes() gives them. Only the times matter without a graph (`box` null);
/// with one, the tasks must be its own.
std::vector<BatchTake> takes_of(py::handle takes, const GraphBox* box) {
  std::vector<BatchTake> out;
  for (py::handle item : takes) {
    const auto d = py::reinterpret_borrow<py::dict>(item);
    const auto id = [&](py::handle task) {
      if (task.is_none()) return kNoTask;
      return box ? task_id_in(*box, task) : task.cast<const TaskRef&>().id;
    };
    out.push_back({id(d["task"]), id(d["wait_from"]), d["gap_ns"].cast<TimeNs>(), d["taken_ns"].cast<TimeNs>()});
  }
  return out;
}

py::dict estimate_dict(const LoadEstimate& e) {
  return py::dict(py::arg("fetch_ns") = e.fetch_ns, py::arg("load_ns") = e.load_ns, py::arg("measured") = e.measured,
                  py::arg("waited_for") = e.waited_for, py::arg("typical_ns") = e.typical_ns,
                  py::arg("waited") = e.waited, py::arg("measured_count") = e.measured_count,
                  py::arg("upper_bound") = e.upper_bound);
}

LoadEstimate estimate_of(const py::dict& d) {
  LoadEstimate e;
  e.fetch_ns = d["fetch_ns"].cast<TimeNs>();
  e.load_ns = d["load_ns"].cast<std::vector<TimeNs>>();
  e.measured = d["measured"].cast<std::vector<bool>>();
  e.waited_for = d["waited_for"].cast<std::vector<bool>>();
  e.typical_ns = d["typical_ns"].cast<TimeNs>();
  e.waited = d["waited"].cast<std::size_t>();
  e.measured_count = d["measured_count"].cast<std::size_t>();
  e.upper_bound = d["upper_bound"].cast<bool>();
  return e;
}

std::vector<TimeNs> first_starts_py(const py::object& takes, const py::dict& estimate, std::size_t recorded, TimeNs fetch_ns) {
  const std::vector<BatchTake> list = takes_of(takes, nullptr);
  const LoadEstimate e = estimate_of(estimate);
  if (e.load_ns.size() != list.size() || e.waited_for.size() != list.size())
    throw py::value_error("recorded_first_starts: the estimate is not of these takes");
  return recorded_first_starts(list, e, recorded, fetch_ns);
}

py::list wait_windows_py(const GraphPtr& box, const py::object& takes, const std::vector<bool>& waited_for) {
  const std::vector<BatchTake> list = takes_of(takes, box.get());
  if (waited_for.size() != list.size()) throw py::value_error("wait_windows: one waited_for flag per take");
  py::list out;
  for (const RangeWindow& w : wait_windows(box->graph, list, waited_for))
    out.append(py::make_tuple(box->graph.units()[w.unit].name, w.start_ns, w.end_ns));
  return out;
}

py::list idle_across_py(const GraphPtr& box, const py::object& windows) {
  std::vector<RangeWindow> list;
  for (py::handle w : windows) {
    const auto t = py::reinterpret_borrow<py::tuple>(w);
    list.push_back({unit_id_in(*box, t[0]), t[1].cast<TimeNs>(), t[2].cast<TimeNs>()});
  }
  py::list out;
  for (const IdleAcross& i : idle_across(box->graph, list))
    out.append(py::dict(py::arg("from_task") = TaskRef{box, i.from}, py::arg("to_task") = TaskRef{box, i.to},
                        py::arg("waker") = TaskRef{box, i.waker}, py::arg("lag_ns") = i.lag_ns));
  return out;
}

}  // namespace

void init_analyze_dataloader(py::module_& m) {
  auto graph = py::reinterpret_borrow<GraphClass>(m.attr("Graph"));
  graph.def("batch_loads", &batch_loads_py,
            "The outermost DataLoader __next__ ranges with their CPU tasks, in time order: [{name, thread, start_ns, "
            "end_ns, tasks, in_workers (a _MultiProcessingDataLoaderIter's: loaded in a worker process)}].")
      .def("batch_takes", &batch_takes_py,
           "Where the main thread took each batch: in the DataLoader ranges, or before each step when the trace has "
           "none: [{task (goes on with the batch), wait_from (whose edge into task holds the wait, or None), gap_ns "
           "(waiting and taking; -1: not recorded), taken_ns}].")
      .def("wait_windows", &wait_windows_py, py::arg("takes"), py::arg("waited_for"),
           "The main thread's waits for the batches waited for, as (thread, start_ns, end_ns) in batch order.")
      .def("idle_across", &idle_across_py, py::arg("windows"),
           "Edges that hold another CPU thread idle across a whole window of the windows' thread (by end): "
           "[{from_task, to_task, waker (the windows' thread's task that last started before to_task), lag_ns}].");
  m.def("estimate_loads", [](const py::object& takes, std::size_t recorded) {
          return estimate_dict(estimate_loads(takes_of(takes, nullptr), recorded));
        }, py::arg("takes"), py::arg("recorded"),
        "Per-batch load times that the waits of a run recorded with `recorded` workers imply (more takes than "
        "workers): {fetch_ns, load_ns, measured, waited_for, typical_ns, waited, measured_count, upper_bound}.");
  m.def("recorded_first_starts", &first_starts_py, py::arg("takes"), py::arg("estimate"), py::arg("recorded"),
        py::arg("fetch_ns"),
        "When each recorded worker started its first batch of the trace (ns from the origin; may be negative), from "
        "an estimate_loads() result (its load_ns and waited_for).");
}

}  // namespace daydream::python
