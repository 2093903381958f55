// Conversions between Python values and daydream's enums, ids and durations.
#include <pybind11/stl.h>

#include <array>
#include <cmath>
#include <string>

#include "common.hpp"
#include "daydream/transform.hpp"

namespace daydream::python {
namespace {

template <typename Enum>
std::vector<std::string> names_of(std::size_t count) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < count; ++i) names.emplace_back(to_string(static_cast<Enum>(i)));
  return names;
}

template <typename Enum>
Enum parse_enum(const std::string& text, const std::vector<std::string>& names, const char* what) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == text) return static_cast<Enum>(i);
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + ("\"" + n + "\"");
  throw py::value_error("unknown " + std::string(what) + " \"" + text + "\" (expected one of " + list + ")");
}

}  // namespace

std::vector<std::string> task_kind_names() { return names_of<TaskKind>(kTaskKindCount); }
std::vector<std::string> edge_type_names() { return names_of<EdgeType>(kEdgeTypeCount); }
std::vector<std::string> unit_kind_names() { return names_of<UnitKind>(3); }
std::vector<std::string> phase_names() {
  // Phase order in Python: the phases of an iteration first, unknown last.
  return {"forward", "backward", "update", "data_loading", "unknown"};
}

TaskKind parse_task_kind(const std::string& text) { return parse_enum<TaskKind>(text, task_kind_names(), "task kind"); }
EdgeType parse_edge_type(const std::string& text) { return parse_enum<EdgeType>(text, edge_type_names(), "edge type"); }
UnitKind parse_unit_kind(const std::string& text) { return parse_enum<UnitKind>(text, unit_kind_names(), "unit kind"); }
Phase parse_phase(const std::string& text) {
  return parse_enum<Phase>(text, names_of<Phase>(kPhaseCount), "phase");  // enum order: unknown, forward, ...
}

py::object task_or_none(const GraphPtr& box, TaskId id) {
  return id == kNoTask ? py::object(py::none()) : py::cast(TaskRef{box, id});
}

std::vector<TaskRef> task_refs(const GraphPtr& box, const std::vector<TaskId>& ids) {
  std::vector<TaskRef> out;
  out.reserve(ids.size());
  for (TaskId id : ids) out.push_back({box, id});
  return out;
}

NewTask new_task_of(py::handle spec) {
  const auto d = py::reinterpret_borrow<py::dict>(spec);
  NewTask task;
  task.name = d["name"].cast<std::string>();
  task.kind = parse_task_kind(d["kind"].cast<std::string>());
  task.duration_ns = non_negative_ns(d["duration_ns"], "duration_ns");
  if (d.contains("iteration")) task.iteration = d["iteration"].cast<std::int32_t>();
  if (d.contains("phase")) task.phase = parse_phase(d["phase"].cast<std::string>());
  return task;
}

py::object int_or_none(std::int64_t value) { return value == kNone ? py::object(py::none()) : py::int_(value); }

TaskId task_id_in(const GraphBox& box, py::handle handle) {
  if (py::isinstance<TaskRef>(handle)) {
    const auto& ref = handle.cast<const TaskRef&>();
    if (ref.box.get() != &box)
      throw py::value_error("task " + std::to_string(ref.id) + " '" + std::string(ref.box->graph.name(ref.id)) +
                            "' belongs to another graph");
    return ref.id;
  }
  if (py::isinstance<py::int_>(handle) && !py::isinstance<py::bool_>(handle)) {
    const auto id = handle.cast<long long>();
    if (id < 0 || static_cast<unsigned long long>(id) >= box.graph.num_tasks())
      throw py::index_error("task id " + std::to_string(id) + " out of range (the graph has " +
                            std::to_string(box.graph.num_tasks()) + " tasks)");
    return static_cast<TaskId>(id);
  }
  throw py::type_error("expected a daydream.Task or an int task id, got " +
                       std::string(py::str(py::type::of(handle).attr("__name__"))));
}

std::vector<TaskId> task_ids_in(const GraphBox& box, py::handle handle) {
  if (handle.is_none()) return {};
  if (py::isinstance<TaskRef>(handle) || py::isinstance<py::int_>(handle)) return {task_id_in(box, handle)};
  if (py::isinstance<TaskSetRef>(handle)) {
    const auto& set = handle.cast<const TaskSetRef&>();
    if (set.box.get() != &box) throw py::value_error("the task set belongs to another graph");
    return set.ids;
  }
  if (py::isinstance<py::str>(handle)) throw py::type_error("expected tasks, got a str");
  std::vector<TaskId> ids;
  for (py::handle item : py::iter(handle)) ids.push_back(task_id_in(box, item));
  return ids;
}

UnitId unit_id_in(const GraphBox& box, py::handle handle) {
  const auto& units = box.graph.units();
  if (py::isinstance<py::str>(handle)) {
    const auto name = handle.cast<std::string>();
    if (auto id = box.graph.find_unit(name)) return *id;
    throw py::value_error("no unit named \"" + name + "\" (see Graph.units)");
  }
  if (py::isinstance<py::int_>(handle) && !py::isinstance<py::bool_>(handle)) {
    const auto id = handle.cast<long long>();
    if (id < 0 || static_cast<unsigned long long>(id) >= units.size())
      throw py::value_error("no unit with id " + std::to_string(id) + " (the graph has " +
                            std::to_string(units.size()) + " units)");
    return static_cast<UnitId>(id);
  }
  throw py::type_error("a unit is a unit name (str) or a unit id (int)");
}

TimeNs non_negative_ns(py::handle value, const char* what) {
  const auto refuse = [&] {
    throw py::value_error(std::string(what) + " must be a finite number of ns from 0 to one day (" +
                          std::to_string(kMaxTaskDurationNs) + "), got " + std::string(py::repr(value)));
  };
  if (py::isinstance<py::bool_>(value) || !py::isinstance<py::int_>(value)) {
    // A float rounds to the nearest ns, as TaskSet.scale does (task.duration_ns /= 3 works).
    if (!py::isinstance<py::float_>(value))
      throw py::type_error(std::string(what) + " must be an int or a float (ns), got " +
                           std::string(py::str(py::type::of(value).attr("__name__"))));
    const double v = value.cast<double>();
    if (!(v >= 0 && v <= static_cast<double>(kMaxTaskDurationNs))) refuse();  // NaN too
    return static_cast<TimeNs>(std::llround(v));
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);  // any int, however large
  if (overflow != 0 || v < 0 || v > kMaxTaskDurationNs) refuse();
  return static_cast<TimeNs>(v);
}

py::module_ import_optional(const char* module, const char* needed_by) {
  try {
    return py::module_::import(module);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_ImportError)) throw;
    throw py::import_error(std::string(needed_by) + " needs " + module + ", which is not installed: " +
                           "python3 -m pip install pandas numpy (" + std::string(py::str(e.value())) + ")");
  }
}

py::object int64_column(const py::module_& numpy, const std::vector<std::int64_t>& values) {
  using namespace pybind11::literals;
  return numpy.attr("array")(py::cast(values), "dtype"_a = "int64");
}

TaskColumns::TaskColumns(const Graph& graph) : graph_(graph) {
  for (const auto& u : graph.units()) unit_names_.push_back(py::str(u.name));
  for (std::size_t k = 0; k < kTaskKindCount; ++k) kind_names_.push_back(py::str(std::string(to_string(static_cast<TaskKind>(k)))));
  for (const auto phase : {Phase::unknown, Phase::forward, Phase::backward, Phase::update, Phase::data_loading})
    phase_names_.push_back(py::str(std::string(to_string(phase))));
}

py::object TaskColumns::string_of(std::uint32_t index) {
  if (index >= strings_.size()) strings_.resize(index + 1);
  if (!strings_[index]) strings_[index] = py::str(std::string(graph_.string(index)));
  return strings_[index];
}

void TaskColumns::add(TaskId id) {
  const Task& task = graph_.task(id);
  id_.push_back(id);
  iteration_.push_back(task.iteration);
  name_.append(string_of(task.name));
  kind_.append(kind_names_[static_cast<std::size_t>(task.kind)]);
  unit_.append(unit_names_.at(task.unit));
  phase_.append(phase_names_[static_cast<std::size_t>(task.phase)]);
  layer_.append(optional_string_of(task.layer));
  op_.append(optional_string_of(task.op_name));
}

void TaskColumns::write_head(py::dict& columns, const py::module_& numpy) const {
  columns["id"] = int64_column(numpy, id_);
  columns["name"] = name_;
  columns["kind"] = kind_;
  columns["unit"] = unit_;
}

void TaskColumns::write_tail(py::dict& columns, const py::module_& numpy, bool with_op) const {
  columns["iteration"] = int64_column(numpy, iteration_);
  columns["phase"] = phase_;
  columns["layer"] = layer_;
  if (with_op) columns["op"] = op_;
}

}  // namespace daydream::python
