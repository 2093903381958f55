#pragma once
// Shared pieces of the Python bindings: the objects Python holds (a graph box, task and task-set
// handles, a simulation result) and the conversions between Python values and daydream enums.
// Every handle owns a shared_ptr to its graph's box, so a Task keeps its Graph alive.

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "daydream/device.hpp"
#include "daydream/graph.hpp"
#include "daydream/simulate.hpp"
#include "daydream/transform.hpp"

namespace daydream::python {

namespace py = pybind11;

/// A graph plus the lock that lets simulations run without the GIL. The rule: a change holds the
/// GIL and the lock exclusively (WriteLock) from start to end; a read holds the GIL, or releases
/// it and holds the lock shared (simulations, fingerprints, reports). So no read ever overlaps a
/// change, whichever thread makes it.
/// A graph made by daydream.load() also remembers where it came from, so that distributed sweeps
/// can rebuild it on other processes or machines (see daydream/_sweep.py).
struct GraphBox {
  explicit GraphBox(Graph g) : graph(std::move(g)) {}
  /// A deep copy of the graph that keeps its origin (trace files, layer file, load-time fingerprint).
  std::shared_ptr<GraphBox> copy() const {
    auto out = std::make_shared<GraphBox>(graph);
    out->sources = sources;
    out->layers = layers;
    out->loaded_fingerprint = loaded_fingerprint;
    return out;
  }
  Graph graph;
  mutable std::shared_mutex mutex;
  std::vector<std::string> sources;  ///< absolute paths of the trace files, in load order; empty if not loaded
  std::string layers;                ///< absolute path of the layer file, or empty
  std::optional<std::uint64_t> loaded_fingerprint;  ///< graph.fingerprint() right after load
  /// Changes made from Python so far (one per WriteLock): a schedule callable that changes the
  /// graph it is computing priorities for is caught by comparing it before and after.
  mutable std::atomic<std::uint64_t> revision{0};
};
using GraphPtr = std::shared_ptr<GraphBox>;

}  // namespace daydream::python

/// A `Graph` argument never takes None: pybind11 would pass an empty shared_ptr, and every
/// function taking a graph would dereference it. Refusing None here makes every such call raise
/// TypeError (naming the signatures it accepts) before any C++ code runs.
template <>
class pybind11::detail::type_caster<daydream::python::GraphPtr>
    : public copyable_holder_caster<daydream::python::GraphBox, daydream::python::GraphPtr> {
 public:
  bool load(handle source, bool convert) {
    if (source.is_none()) return false;
    return copyable_holder_caster<daydream::python::GraphBox, daydream::python::GraphPtr>::load(source, convert);
  }
};

namespace daydream::python {

/// Exclusive access for a change made from Python. Waits for running simulations without
/// holding the GIL, so they can finish and hand results back.
class WriteLock {
 public:
  explicit WriteLock(const GraphBox& box) : lock_(box.mutex, std::try_to_lock) {
    if (!lock_.owns_lock()) {
      py::gil_scoped_release release;
      lock_.lock();
    }
    ++box.revision;
  }

 private:
  std::unique_lock<std::shared_mutex> lock_;
};

/// Python's `daydream.Task`: one task of one graph.
struct TaskRef {
  GraphPtr box;
  TaskId id = kNoTask;
  Task task() const { return box->graph.task(id); }
};

/// Python's `daydream.TaskSet`: task ids of one graph, in increasing order.
struct TaskSetRef {
  GraphPtr box;
  std::vector<TaskId> ids;
};

/// Python's `daydream.Result`: one simulation of one graph.
struct ResultData {
  GraphPtr box;
  SimulationResult result;
  std::string schedule;
  std::vector<std::string> iteration_names;
  std::vector<TimeNs> iteration_ns;
  std::vector<TimeNs> measured_iteration_ns;
};

// --- conversions (common.cpp) ---
TaskKind parse_task_kind(const std::string& text);
Phase parse_phase(const std::string& text);
UnitKind parse_unit_kind(const std::string& text);
EdgeType parse_edge_type(const std::string& text);
std::vector<std::string> task_kind_names();
std::vector<std::string> phase_names();
std::vector<std::string> unit_kind_names();
std::vector<std::string> edge_type_names();

/// The id of `handle` (a Task of this graph, or an int id) in `box`'s graph. ValueError for a
/// Task of another graph, IndexError for an id out of range, TypeError otherwise.
TaskId task_id_in(const GraphBox& box, py::handle handle);
/// A single task or an iterable of tasks (Task, int id or TaskSet), as ids in `box`'s graph.
std::vector<TaskId> task_ids_in(const GraphBox& box, py::handle handle);
/// A unit named or numbered by `handle`; ValueError when there is none.
UnitId unit_id_in(const GraphBox& box, py::handle handle);
/// The Task `id` of `box`'s graph, or None for kNoTask.
py::object task_or_none(const GraphPtr& box, TaskId id);
/// The Tasks `ids` of `box`'s graph, in that order.
std::vector<TaskRef> task_refs(const GraphPtr& box, const std::vector<TaskId>& ids);
/// A NewTask from a task dict {"name", "kind", "duration_ns", "iteration", "phase"} (the last two
/// optional); its unit and edges are for the primitive that places it.
NewTask new_task_of(py::handle spec);
/// `value` as an int, or None for kNone (a size, an event index, a rank the trace does not give).
py::object int_or_none(std::int64_t value);
/// ns as the float milliseconds every *_ms value of the Python API is.
inline double ms(TimeNs ns) { return static_cast<double>(ns) / 1e6; }
/// `value` as a number of ns from 0 to one day (kMaxTaskDurationNs, the longest task daydream
/// accepts): an int, or a float rounded to the nearest ns (as TaskSet.scale rounds); ValueError
/// (naming `what`) for a negative, NaN, infinite or larger value, TypeError for another type.
TimeNs non_negative_ns(py::handle value, const char* what);

/// The built-in GPU catalogue plus the GPUs of the devices file `devices` (device.cpp): the
/// `devices=` argument of daydream.gpus, Graph.traced_gpu, autocast_time_ratio and roofline.
DeviceCatalog catalog_with(const std::optional<std::string>& devices);

/// The `python3 -m pip install pandas` hint around an import of pandas (or numpy).
py::module_ import_optional(const char* module, const char* needed_by);

/// A numpy int64 array holding `values` (the frames' integer columns).
py::object int64_column(const py::module_& numpy, const std::vector<std::int64_t>& values);

/// The columns that describe tasks in the pandas frames (Graph.tasks_frame, Result.to_pandas),
/// one row per add(). Names become Python str objects once per distinct string. A frame writes
/// write_head() (id, name, kind, unit), its own columns, then write_tail() (iteration, phase,
/// layer, and op when asked).
class TaskColumns {
 public:
  explicit TaskColumns(const Graph& graph);
  void add(TaskId id);
  void write_head(py::dict& columns, const py::module_& numpy) const;
  void write_tail(py::dict& columns, const py::module_& numpy, bool with_op) const;

 private:
  py::object string_of(std::uint32_t index);
  py::object optional_string_of(std::uint32_t index) { return index == 0 ? py::object(py::none()) : string_of(index); }

  const Graph& graph_;
  std::vector<py::object> strings_, unit_names_, kind_names_, phase_names_;
  std::vector<std::int64_t> id_, iteration_;
  py::list name_, kind_, unit_, phase_, layer_, op_;
};

// --- module parts ---
void init_graph(py::module_& m);
void init_transform(py::module_& m);
void init_primitives(py::module_& m);
void init_analyze_dataloader(py::module_& m);
void init_transform_blocks(py::module_& m);
void init_device(py::module_& m);  // device.cpp: the GPU model
void init_roofline(py::module_& m);  // roofline.cpp: the roofline report
void init_bottleneck(py::module_& m);  // bottleneck.cpp: what limits the unmodified run
void init_simulate(py::module_& m);
void init_load(py::module_& m);

// --- used across parts ---
/// Applies the built-in filters of `Graph.select()` / `TaskSet.filter()` and then `pred`.
std::vector<TaskId> select_ids(const GraphPtr& box, const std::vector<TaskId>* within, py::object pred,
                               const py::kwargs& filters, const char* caller);

}  // namespace daydream::python
