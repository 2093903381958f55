// The primitives of transform.hpp and analyze.hpp that work on blocks of a window's work, for
// scenarios written in Python: the windows of a named range with their tasks (RangeTasks), a
// set's tasks per unit, runs of neighbours on a chain, the gaps inside a block, launches (one
// call, a CUDA graph, a GPU task with its call) and what a CPU task does with the GPU. Thin: every rule lives in the library; this file converts
// arguments and results.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "common.hpp"
#include "daydream/analyze.hpp"
#include "daydream/transform.hpp"

namespace daydream::python {
namespace {

using GraphClass = py::class_<GraphBox, GraphPtr>;

/// Python's `daydream.RangeTasks`: the C++ RangeTasks of one graph, which it keeps alive.
struct RangeTasksRef {
  GraphPtr box;
  RangeTasks ranges;
};

py::tuple window_tuple(const GraphBox& box, const RangeWindow& w) {
  return py::make_tuple(box.graph.units()[w.unit].name, w.start_ns, w.end_ns);
}

RangeWindow window_of(const GraphBox& box, py::handle window) {
  const auto t = py::reinterpret_borrow<py::tuple>(window);
  if (t.size() != 3) throw py::value_error("a window is a (thread, start_ns, end_ns) tuple");
  return {unit_id_in(box, t[0]), t[1].cast<TimeNs>(), t[2].cast<TimeNs>()};
}

py::list run_py(const GraphPtr& g, py::object task, std::size_t max, const std::function<bool(TaskRef)>& keep,
                bool after) {
  const TaskId id = task_id_in(*g, task);
  const auto keep_id = [&](TaskId t) { return keep(TaskRef{g, t}); };
  return py::cast(task_refs(g, after ? run_after(g->graph, id, max, keep_id) : run_before(g->graph, id, max, keep_id)));
}

void init_range_tasks(py::module_& m, GraphClass& graph) {
  py::class_<RangeTasksRef>(m, "RangeTasks",
      "The windows of a named range with every unit's tasks, taken once (Graph.range_tasks): tasks removed "
      "since are skipped, tasks inserted since are not seen.")
      .def_property_readonly("windows", [](const RangeTasksRef& r) {
             py::list out;
             for (const RangeWindow& w : r.ranges.windows()) out.append(window_tuple(*r.box, w));
             return out;
           }, "The windows, as Graph.range_windows gives them: (thread, start_ns, end_ns) in (thread, start) order.")
      .def("tasks", [](const RangeTasksRef& r, py::object window, py::object unit) {
             const RangeWindow w = window_of(*r.box, window);
             return task_refs(r.box, r.ranges.tasks(w, unit.is_none() ? w.unit : unit_id_in(*r.box, unit)));
           }, py::arg("window"), py::arg("unit") = py::none(),
           "The live tasks of `unit` (the window's own thread by default) whose recorded start lies in the window, "
           "in recorded order.")
      .def("around", [](const RangeTasksRef& r, py::object task) -> py::object {
             const RangeWindow* w = r.ranges.around(task_id_in(*r.box, task));
             return w ? py::object(window_tuple(*r.box, *w)) : py::object(py::none());
           }, py::arg("task"), "The window around a task (on its unit, holding its recorded start), or None.");
  graph.def("range_tasks", [](const GraphPtr& g, const std::string& pattern) {
             return RangeTasksRef{g, RangeTasks(g->graph, pattern)};
           }, py::arg("pattern"), "The windows of the CPU ranges the pattern names, with their tasks (RangeTasks).");
}

void init_blocks(GraphClass& graph) {
  graph.def("group_by_unit", [](const GraphPtr& g, py::object tasks) {
             py::dict out;
             for (const auto& [unit, ids] : group_by_unit(g->graph, task_ids_in(*g, tasks)))
               out[py::int_(unit)] = task_refs(g, ids);
             return out;
           }, py::arg("tasks"),
           "The tasks per unit id (in id order), each list in recorded-start order (ties by id).")
      .def("run_after", [](const GraphPtr& g, py::object task, std::size_t max, const std::function<bool(TaskRef)>& keep) {
             return run_py(g, task, max, keep, true);
           }, py::arg("task"), py::arg("max"), py::arg("keep"),
           "The tasks right after `task` on its unit's chain for as long as keep(task) is true, at most max.")
      .def("run_before", [](const GraphPtr& g, py::object task, std::size_t max, const std::function<bool(TaskRef)>& keep) {
             return run_py(g, task, max, keep, false);
           }, py::arg("task"), py::arg("max"), py::arg("keep"),
           "The same before `task`, in chain order (the farthest first).")
      .def("zero_inner_delays", [](const GraphPtr& g, py::object tasks) {
             const auto ids = task_ids_in(*g, tasks);
             WriteLock lock(*g);
             zero_inner_delays(g->graph, ids);
           }, py::arg("tasks"), "Every edge between two of the tasks loses its delay.")
      .def("remove_run", [](const GraphPtr& g, py::object run) {
             const auto ids = task_ids_in(*g, run);
             WriteLock lock(*g);
             remove_run(g->graph, ids);
           }, py::arg("run"),
           "Removes consecutive tasks of one chain as a block; the task after them keeps only its own gap.");
}

void init_launches(GraphClass& graph) {
  graph.def("connect_launch", [](const GraphPtr& g, py::object call, py::object task) {
             const TaskId a = task_id_in(*g, call), b = task_id_in(*g, task);
             WriteLock lock(*g);
             connect_launch(g->graph, a, b);
           }, py::arg("call"), py::arg("task"),
           "Adds the edge by which a call launches a GPU task (start-to-start, the calibrated launch latency).")
      .def("launch_graph", [](const GraphPtr& g, py::object call, py::dict streams) {
             const TaskId id = task_id_in(*g, call);
             std::map<UnitId, std::vector<TaskId>> work;
             for (const auto& [unit, tasks] : streams) work[unit_id_in(*g, unit)] = task_ids_in(*g, tasks);
             WriteLock lock(*g);
             return task_refs(g, launch_graph(g->graph, id, work));
           }, py::arg("call"), py::arg("streams"),
           "Makes the call launch GPU work as one CUDA graph: streams maps each stream (id or name) to its tasks in "
           "order (group_by_unit); the call launches each stream's first task, inside each stream runs back to "
           "back at the calibrated gap. Returns the last task of each stream.")
      .def("insert_launched", [](const GraphPtr& g, py::dict call, py::dict task, py::object call_next,
                                 py::object task_next) -> py::object {
             NewTask c = new_task_of(call), k = new_task_of(task);
             const TaskId a = task_id_in(*g, call_next), b = task_id_in(*g, task_next);
             WriteLock lock(*g);
             const auto ids = insert_launched(g->graph, std::move(c), std::move(k), a, b);
             if (!ids) return py::none();
             return py::make_tuple(TaskRef{g, ids->first}, TaskRef{g, ids->second});
           }, py::arg("call"), py::arg("task"), py::arg("call_next"), py::arg("task_next"),
           "Inserts a GPU task {name, kind, duration_ns, iteration, phase} right before task_next on its stream, "
           "launched by a new call right before call_next on its thread. Returns (call, task), or None when "
           "call_next starts its thread.")
      .def("gpu_use", [](const GraphPtr& g, py::object task) {
             return std::string(to_string(gpu_use(g->graph, task_id_in(*g, task))));
           }, py::arg("task"),
           "What a CPU task does with the GPU: 'none', 'kernels', 'device_work', 'host_copy' or 'wait'.")
      .def("waits_for_gpu", [](const GraphPtr& g, py::object task) {
             return waits_for_gpu(g->graph, task_id_in(*g, task));
           }, py::arg("task"), "Whether a CPU task waited for GPU work (an edge into it from a GPU task).");
}

}  // namespace

void init_transform_blocks(py::module_& m) {
  auto graph = py::reinterpret_borrow<GraphClass>(m.attr("Graph"));
  init_range_tasks(m, graph);
  init_blocks(graph);
  init_launches(graph);
  auto set = py::reinterpret_borrow<py::class_<TaskSetRef>>(m.attr("TaskSet"));
  set.def_property_readonly("median_duration_ns", [](const TaskSetRef& s) {
        return TaskSet(s.box->graph, s.ids).median_duration_ns();
      }, "The median duration (ns): the upper middle one for an even count; 0 for an empty set.");
}

}  // namespace daydream::python
