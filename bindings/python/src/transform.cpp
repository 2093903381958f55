// Graph.select / insert / remove and daydream.TaskSet: the transformation primitives of
// transform.hpp, with Python-side validation (ValueError/TypeError) before anything changes.
#include <pybind11/stl.h>

#include <cmath>
#include <deque>
#include <unordered_set>

#include "common.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream::python {
namespace {

using GraphClass = py::class_<GraphBox, GraphPtr>;
using TaskSetClass = py::class_<TaskSetRef>;

constexpr const char* kFilterNames = "kind, name, name_not, op, layer, within, phase, unit, unit_kind, iteration, rank";

/// Calls `fn` on `value`, or on each item when it is a list/tuple/set (a str is one value).
template <typename Fn>
void for_each_value(py::handle value, Fn fn) {
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value) || py::isinstance<py::set>(value) ||
      py::isinstance<py::frozenset>(value)) {
    for (py::handle item : value) fn(item);
  } else {
    fn(value);
  }
}

std::string as_str(py::handle value, const std::string& filter) {
  if (!py::isinstance<py::str>(value))
    throw py::type_error("filter " + filter + "= takes a str or a list of str, got " +
                         std::string(py::str(py::type::of(value).attr("__name__"))));
  return value.cast<std::string>();
}

std::string as_pattern(py::handle value, const std::string& filter) {
  std::string pattern = as_str(value, filter);
  try {
    check_pattern(pattern, filter);
  } catch (const Error& e) {
    throw py::value_error("filter " + filter + "=: " + e.what());
  }
  return pattern;
}

TaskFilter make_filter(const GraphBox& box, const py::kwargs& filters, const char* caller) {
  TaskFilter f;
  for (auto [key_handle, value] : filters) {
    const auto key = key_handle.cast<std::string>();
    if (value.is_none()) continue;
    if (key == "kind") {
      for_each_value(value, [&](py::handle v) { f.kind(parse_task_kind(as_str(v, key))); });
    } else if (key == "name") {
      for_each_value(value, [&](py::handle v) { f.name(as_pattern(v, key)); });
    } else if (key == "name_not") {
      for_each_value(value, [&](py::handle v) { f.name_not(as_pattern(v, key)); });
    } else if (key == "op") {
      for_each_value(value, [&](py::handle v) { f.op(as_pattern(v, key)); });
    } else if (key == "layer") {
      for_each_value(value, [&](py::handle v) { f.layer(as_pattern(v, key)); });
    } else if (key == "within") {
      for_each_value(value, [&](py::handle v) { f.within(as_pattern(v, key)); });
    } else if (key == "phase") {
      for_each_value(value, [&](py::handle v) { f.phase(parse_phase(as_str(v, key))); });
    } else if (key == "unit") {
      for_each_value(value, [&](py::handle v) { f.unit(unit_id_in(box, v)); });
    } else if (key == "unit_kind") {
      for_each_value(value, [&](py::handle v) { f.unit_kind(parse_unit_kind(as_str(v, key))); });
    } else if (key == "iteration") {
      for_each_value(value, [&](py::handle v) {
        if (!py::isinstance<py::int_>(v) || py::isinstance<py::bool_>(v))
          throw py::type_error("filter iteration= takes an int or a list of int");
        f.iteration(v.cast<std::int32_t>());
      });
    } else if (key == "rank") {
      for_each_value(value, [&](py::handle v) {
        if (!py::isinstance<py::int_>(v) || py::isinstance<py::bool_>(v))
          throw py::type_error("filter rank= takes an int or a list of int");
        f.rank(v.cast<std::int64_t>());
      });
    } else {
      throw py::type_error(std::string(caller) + " got an unknown filter '" + key + "' (filters: " + kFilterNames + ")");
    }
  }
  return f;
}

std::string set_repr(const TaskSetRef& set) {
  return "<daydream.TaskSet of " + std::to_string(set.ids.size()) + " tasks>";
}

/// insert() creating a unit: check what Graph::insert would refuse first (with its messages),
/// so that a refused insert leaves no new, empty unit behind.
void check_insertable(const Graph& g, const NewTask& spec) {
  auto describe = [&](TaskId id) { return "task " + std::to_string(id) + " '" + std::string(g.name(id)) + "'"; };
  for (TaskId id : spec.after)
    if (g.task(id).removed) throw Error("insert (after): " + describe(id) + " was removed");
  for (TaskId id : spec.before)
    if (g.task(id).removed) throw Error("insert (before): " + describe(id) + " was removed");
  // A cycle closes when a successor-to-be reaches a predecessor-to-be.
  const std::unordered_set<TaskId> targets(spec.after.begin(), spec.after.end());
  std::vector<TaskId> parent(g.num_tasks(), kNoTask);
  std::vector<char> seen(g.num_tasks(), 0);
  std::deque<TaskId> queue;
  for (TaskId id : spec.before)
    if (!seen[id]) seen[id] = 1, queue.push_back(id);
  while (!queue.empty()) {
    const TaskId t = queue.front();
    queue.pop_front();
    if (targets.count(t)) {
      std::vector<TaskId> path{t};
      while (parent[path.back()] != kNoTask) path.push_back(parent[path.back()]);
      std::string chain;
      for (auto it = path.rbegin(); it != path.rend(); ++it) chain += describe(*it) + " -> ";
      throw Error("insert '" + spec.name + "' would create a cycle: " + chain + "the new task");
    }
    for (const auto& n : g.successors(t))
      if (!seen[n.task]) seen[n.task] = 1, parent[n.task] = t, queue.push_back(n.task);
  }
}

TaskRef insert(const GraphPtr& box, const std::string& name, py::object duration, py::object unit,
               const std::string& kind, py::object after, py::object before, std::optional<std::string> after_type,
               std::optional<std::string> before_type, const std::string& unit_kind, py::object after_delay,
               py::object before_delay, std::int32_t iteration, const std::string& phase) {
  NewTask task;
  task.iteration = iteration;
  task.phase = parse_phase(phase);
  task.name = name;
  task.duration_ns = non_negative_ns(duration, "duration_ns");
  task.kind = parse_task_kind(kind);
  task.after = task_ids_in(*box, after);
  task.before = task_ids_in(*box, before);
  if (after_type) task.after_type = parse_edge_type(*after_type);
  if (before_type) task.before_type = parse_edge_type(*before_type);
  task.after_delay_ns = non_negative_ns(after_delay, "after_delay_ns");
  task.before_delay_ns = non_negative_ns(before_delay, "before_delay_ns");
  const UnitKind new_unit_kind = parse_unit_kind(unit_kind);

  WriteLock lock(*box);
  Graph& g = box->graph;
  std::optional<UnitId> unit_id;
  if (py::isinstance<py::str>(unit)) unit_id = g.find_unit(unit.cast<std::string>());
  else unit_id = unit_id_in(*box, unit);
  if (!unit_id) {
    check_insertable(g, task);
    Unit u;
    u.kind = new_unit_kind;
    u.name = unit.cast<std::string>();
    unit_id = g.add_unit(std::move(u));
  }
  task.unit = *unit_id;
  return {box, g.insert(task)};
}

}  // namespace

std::vector<TaskId> select_ids(const GraphPtr& box, const std::vector<TaskId>* within, py::object pred,
                               const py::kwargs& filters, const char* caller) {
  const TaskFilter filter = make_filter(*box, filters, caller);
  if (!pred.is_none() && !PyCallable_Check(pred.ptr()))
    throw py::type_error(std::string(caller) + ": pred must be a callable taking a Task and returning bool");
  std::vector<TaskId> ids = within ? TaskSet(box->graph, *within).filter(filter).ids() : box->graph.select(filter).ids();
  if (pred.is_none()) return ids;
  std::vector<TaskId> kept;
  for (TaskId id : ids)
    if (py::bool_(pred(TaskRef{box, id}))) kept.push_back(id);
  return kept;
}

void init_transform(py::module_& m) {
  auto set = py::reinterpret_borrow<TaskSetClass>(m.attr("TaskSet"));
  set.def("__len__", [](const TaskSetRef& s) { return s.ids.size(); }, "Number of tasks in the set.")
      .def("__iter__", [](const TaskSetRef& s) {
             py::list tasks;
             for (TaskId id : s.ids) tasks.append(py::cast(TaskRef{s.box, id}));
             return py::iter(tasks);
           }, "Iterates over the tasks (Task objects), in id order.")
      .def("__contains__", [](const TaskSetRef& s, py::object task) {
             if (!py::isinstance<TaskRef>(task)) return false;
             const auto& r = task.cast<const TaskRef&>();
             return r.box == s.box && std::binary_search(s.ids.begin(), s.ids.end(), r.id);
           }, "Whether this Task is in the set.")
      .def_property_readonly("ids", [](const TaskSetRef& s) { return s.ids; }, "The task ids, in increasing order.")
      .def_property_readonly("total_duration_ns", [](const TaskSetRef& s) {
             return TaskSet(s.box->graph, s.ids).total_duration_ns();
           }, "Sum of the tasks' current durations, in ns.")
      .def_property_readonly("graph", [](const TaskSetRef& s) { return s.box; }, "The graph holding these tasks.")
      .def("scale", [](TaskSetRef& s, py::object factor) -> TaskSetRef& {
             if (py::isinstance<py::bool_>(factor) || !(py::isinstance<py::int_>(factor) || py::isinstance<py::float_>(factor)))
               throw py::type_error("scale(): factor must be a number");
             const double f = factor.cast<double>();
             if (!std::isfinite(f) || f < 0)
               throw py::value_error("scale(): factor must be finite and >= 0, got " + std::string(py::repr(factor)));
             WriteLock lock(*s.box);
             TaskSet(s.box->graph, s.ids).scale(f);
             return s;
           }, py::arg("factor"), py::return_value_policy::reference_internal,
           "Multiplies every duration by factor (finite, >= 0), rounding to the nearest ns. Returns the set.")
      .def("set_duration", [](TaskSetRef& s, py::object ns) -> TaskSetRef& {
             const TimeNs d = non_negative_ns(ns, "set_duration(): duration_ns");
             WriteLock lock(*s.box);
             TaskSet(s.box->graph, s.ids).set_duration(d);
             return s;
           }, py::arg("duration_ns"), py::return_value_policy::reference_internal,
           "Sets every duration to duration_ns (an int >= 0). Returns the set.")
      .def("shrink", [](TaskSetRef& s, py::object ns) -> TaskSetRef& {
             const TimeNs by = non_negative_ns(ns, "shrink(): by_ns");
             WriteLock lock(*s.box);
             TaskSet(s.box->graph, s.ids).shrink(by);
             return s;
           }, py::arg("by_ns"), py::return_value_policy::reference_internal,
           "Shortens every duration by by_ns (an int >= 0), not below zero. Returns the set.")
      .def("remove", [](TaskSetRef& s) {
             WriteLock lock(*s.box);
             TaskSet(s.box->graph, s.ids).remove();
           }, "Removes every task of the set from the graph, bridging its dependencies (see Graph.remove).")
      .def("filter", [](const TaskSetRef& s, py::object pred, const py::kwargs& filters) {
             return TaskSetRef{s.box, select_ids(s.box, &s.ids, std::move(pred), filters, "TaskSet.filter()")};
           }, py::arg("pred") = py::none(), "The tasks of this set that pass the filters of Graph.select() and pred.")
      .def("__repr__", &set_repr, "The number of tasks.");

  auto graph = py::reinterpret_borrow<GraphClass>(m.attr("Graph"));
  graph.def("select", [](const GraphPtr& g, py::object pred, const py::kwargs& filters) {
             return TaskSetRef{g, select_ids(g, nullptr, std::move(pred), filters, "select()")};
           }, py::arg("pred") = py::none(),
           "The live tasks passing every given filter (all live tasks without one), then pred(task) if given.\n\n"
           "Filters (each takes one value or a list, which matches any of them; None means no filter):\n"
           "  kind: 'cpu', 'runtime', 'kernel', 'memcpy', 'memset', 'communication'\n"
           "  name / name_not / op / layer: RE2 regular expressions searched in the task name, "
           "the operator name, the layer name (case-sensitive)\n"
           "  within: a regular expression naming CPU ranges (operators, annotations such as "
           "'Optimizer.step' or 'DataLoader'): tasks inside one, GPU tasks by their launch call\n"
           "  phase: 'forward', 'backward', 'update', 'data_loading', 'unknown'\n"
           "  unit: a unit name or id;  unit_kind: 'cpu_thread', 'gpu_stream', 'comm_channel'\n"
           "  iteration: an iteration index;  rank: a rank of a multi-rank job graph\n"
           "An unknown filter name raises TypeError.")
      .def("insert", &insert, py::arg("name"), py::arg("duration_ns"), py::arg("unit"),
           py::arg("kind") = "communication", py::arg("after") = py::tuple(), py::arg("before") = py::tuple(),
           py::arg("after_type") = py::none(), py::arg("before_type") = py::none(),
           py::arg("unit_kind") = "comm_channel", py::arg("after_delay_ns") = 0, py::arg("before_delay_ns") = 0,
           py::arg("iteration") = -1, py::arg("phase") = "unknown",
           "Adds a task and returns it. unit: an existing unit's name or id, or a new name (a unit of kind "
           "unit_kind is created). The new task starts after every task in after and before every task in "
           "before (Tasks of this graph or ids); after_type/before_type name the edge types (see "
           "daydream.EDGE_TYPES; derived from the two ends when None); iteration (-1: the first predecessor's) and "
           "phase label the new task. Raises ValueError for a task of another "
           "graph and daydream.Error for a removed task or an edge that would close a cycle.")
      .def("remove", [](const GraphPtr& g, py::object task) {
             const TaskId id = task_id_in(*g, task);
             WriteLock lock(*g);
             g->graph.remove(id);
           }, py::arg("task"),
           "Removes a task (Task or id): each predecessor -> successor pair is bridged, as if the task took no "
           "time. daydream.Error when it is already removed.")
      .def("add_unit", [](const GraphPtr& g, const std::string& name, const std::string& kind, py::object thread) {
             Unit unit{parse_unit_kind(kind), name, kNone, thread.is_none() ? kNone : thread.cast<std::int64_t>(), false};
             WriteLock lock(*g);
             return g->graph.add_unit(std::move(unit));
           }, py::arg("name"), py::arg("kind") = "cpu_thread", py::arg("thread") = py::none(),
           "Adds an execution unit (daydream.UNIT_KINDS) without tasks and returns its id; thread: its tid or "
           "stream id, or None.")
      .def("set_release", [](const GraphPtr& g, py::object task, TimeNs release_ns) {
             const TaskId id = task_id_in(*g, task);
             WriteLock lock(*g);
             g->graph.set_release(id, release_ns);
           }, py::arg("task"), py::arg("release_ns"),
           "Sets when a task without predecessors may start (ns from the origin; Task.release_ns).");
}

}  // namespace daydream::python
