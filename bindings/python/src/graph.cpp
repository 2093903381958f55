// daydream.Graph (reading, copying, the tasks frame) and daydream.Task.
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <shared_mutex>
#include <unordered_set>

#include "common.hpp"
#include "daydream/job.hpp"
#include "daydream/report/replay.hpp"

namespace daydream::python {
namespace {

using namespace pybind11::literals;

using GraphClass = py::class_<GraphBox, GraphPtr>;
using TaskClass = py::class_<TaskRef>;

std::vector<TaskRef> neighbors(const TaskRef& ref, bool successors) {
  const auto list = successors ? ref.box->graph.successors(ref.id) : ref.box->graph.predecessors(ref.id);
  std::vector<TaskRef> out;
  std::unordered_set<TaskId> seen;
  for (const auto& n : list)
    if (seen.insert(n.task).second) out.push_back({ref.box, n.task});
  return out;
}

py::object optional_string(const Graph& graph, std::uint32_t index) {
  if (index == 0) return py::none();
  return py::str(std::string(graph.string(index)));
}

std::string task_repr(const TaskRef& ref) {
  const Graph& g = ref.box->graph;
  const Task& t = g.task(ref.id);
  return "<daydream.Task " + std::to_string(ref.id) + " " + std::string(to_string(t.kind)) + " \"" +
         std::string(g.name(ref.id)) + "\" on \"" + g.units()[t.unit].name + "\", " + std::to_string(t.duration_ns) +
         " ns" + (t.removed ? ", removed>" : ">");
}

/// Hashes without the GIL, under the graph's shared lock like a simulation (large graphs take a
/// while: every task and edge is read).
std::uint64_t fingerprint(const GraphPtr& box) {
  py::gil_scoped_release release;
  std::shared_lock lock(box->mutex);
  return box->graph.fingerprint();
}

py::object tasks_frame(const GraphPtr& box) {
  py::module_ pandas = import_optional("pandas", "Graph.tasks_frame()");
  py::module_ numpy = py::module_::import("numpy");
  const Graph& g = box->graph;
  TaskColumns tasks(g);
  std::vector<std::int64_t> duration, recorded_start;
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    const Task& task = g.task(t);
    if (task.removed) continue;
    tasks.add(t);
    duration.push_back(task.duration_ns);
    recorded_start.push_back(task.recorded_start_ns);
  }
  py::dict columns;
  tasks.write_head(columns, numpy);
  columns["duration_ns"] = int64_column(numpy, duration);
  columns["recorded_start_ns"] = int64_column(numpy, recorded_start);
  tasks.write_tail(columns, numpy, /*with_op=*/true);
  return pandas.attr("DataFrame")(columns);
}

/// A job's traces as one line: their common folder and count, not every path.
std::string job_source(const JobLayout& job) {
  std::string folder = job.ranks.empty() ? std::string() : job.ranks.front().trace;
  for (const RankInfo& r : job.ranks) {
    std::size_t same = 0;
    while (same < folder.size() && same < r.trace.size() && folder[same] == r.trace[same]) ++same;
    folder.resize(same);
  }
  folder.resize(folder.rfind('/') == std::string::npos ? 0 : folder.rfind('/') + 1);
  const std::string world = job.world_size > 0 ? " of " + std::to_string(job.world_size) : "";
  return "job: " + std::to_string(job.ranks.size()) + world + " ranks, traces in \"" +
         (folder.empty() ? "./" : folder) + "\"";
}

std::string graph_repr(const GraphPtr& g) {
  const Graph& graph = g->graph;
  const std::string source = graph.job() ? job_source(*graph.job()) : "\"" + graph.source_path + "\"";
  return "<daydream.Graph " + source + ": " + std::to_string(graph.num_live_tasks()) + " tasks, " +
         std::to_string(graph.num_edges()) + " edges, " + std::to_string(graph.units().size()) + " units, " +
         std::to_string(graph.iterations().size()) + " iterations>";
}

}  // namespace

void init_graph(py::module_& m) {
  auto task = py::reinterpret_borrow<TaskClass>(m.attr("Task"));
  task.def_property_readonly("id", [](const TaskRef& r) { return r.id; }, "Dense task id (never changes, even when removed).")
      .def_property_readonly("name", [](const TaskRef& r) { return std::string(r.box->graph.name(r.id)); },
                             "Kernel, CUDA call or operator name.")
      .def_property_readonly("kind", [](const TaskRef& r) { return std::string(to_string(r.task().kind)); },
                             "One of daydream.TASK_KINDS: cpu, runtime, kernel, memcpy, memset, communication.")
      .def_property_readonly("unit", [](const TaskRef& r) { return r.box->graph.units()[r.task().unit].name; },
                             "Name of the execution unit (CPU thread, GPU stream, channel) running the task.")
      .def_property(
          "duration_ns", [](const TaskRef& r) { return r.task().duration_ns; },
          [](const TaskRef& r, py::object value) {
            const TimeNs ns = non_negative_ns(value, "duration_ns");
            WriteLock lock(*r.box);
            r.box->graph.set_duration(r.id, ns);
          },
          "Duration in ns; settable (an int >= 0, else ValueError).")
      .def_property_readonly("layer", [](const TaskRef& r) { return optional_string(r.box->graph, r.task().layer); },
                             "Layer name, or None when the task is mapped to no layer.")
      .def_property_readonly("phase", [](const TaskRef& r) { return std::string(to_string(r.task().phase)); },
                             "forward, backward, update or unknown.")
      .def_property_readonly("iteration", [](const TaskRef& r) { return r.task().iteration; },
                             "Index of the ProfilerStep iteration (see Graph.iterations), or -1.")
      .def_property_readonly("predecessors", [](const TaskRef& r) { return neighbors(r, false); },
                             "Tasks this one depends on (one entry per task), as a list of Task.")
      .def_property_readonly("successors", [](const TaskRef& r) { return neighbors(r, true); },
                             "Tasks depending on this one (one entry per task), as a list of Task.")
      .def_property_readonly("recorded_start_ns", [](const TaskRef& r) { return r.task().recorded_start_ns; },
                             "Start in the trace, in ns from the graph origin (reference only).")
      .def_property_readonly("op", [](const TaskRef& r) { return optional_string(r.box->graph, r.task().op_name); },
                             "Name of the operator around the task (or around its launch), or None.")
      .def_property_readonly("removed", [](const TaskRef& r) { return r.task().removed; },
                             "True once Graph.remove() took the task out.")
      .def_property_readonly("held_by", [](const TaskRef& r) { return task_or_none(r.box, r.box->graph.holds(r.id).sm_held_by); },
           "The kernel of another stream that filled the GPU and held this task back in the trace (the "
              "occupancy model makes the task wait for it), or None.")
      .def_property_readonly("lock_held_by", [](const TaskRef& r) { return task_or_none(r.box, r.box->graph.holds(r.id).lock_held_by); },
           "The CUDA call of another thread that held the driver while this call blocked in the trace (the "
              "simulator makes the call wait for it when that call's thread reached it first), or None.")
      .def_property_readonly("graph", [](const TaskRef& r) { return r.box; }, "The graph holding this task.")
      .def("__repr__", &task_repr, "The id, kind, name, unit and duration.")
      .def("__eq__", [](const TaskRef& a, py::object b) {
             if (!py::isinstance<TaskRef>(b)) return false;
             const auto& r = b.cast<const TaskRef&>();
             return a.box == r.box && a.id == r.id;
           }, "Same task of the same graph.")
      .def("__hash__", [](const TaskRef& r) {
             return std::hash<const void*>()(r.box.get()) ^ (std::hash<TaskId>()(r.id) * 0x9e3779b97f4a7c15ull);
           }, "Hash of (graph, id).");

  auto graph = py::reinterpret_borrow<GraphClass>(m.attr("Graph"));
  graph.def("__len__", [](const GraphPtr& g) { return g->graph.num_live_tasks(); }, "Number of live (not removed) tasks.")
      .def_property_readonly("num_tasks", [](const GraphPtr& g) { return g->graph.num_tasks(); },
                             "Number of task ids, removed tasks included.")
      .def_property_readonly("units", [](const GraphPtr& g) {
             std::vector<std::string> names;
             for (const auto& u : g->graph.units()) names.push_back(u.name);
             return names;
           }, "Names of the execution units, indexed by unit id.")
      .def_property_readonly("iterations", [](const GraphPtr& g) {
             std::vector<std::string> names;
             for (const auto& it : g->graph.iterations()) names.push_back(it.name);
             return names;
           }, "Names of the iterations (ProfilerStep#N, step N, ...), in order (Task.iteration indexes this list).")
      .def_property_readonly("iteration_rule", [](const GraphPtr& g) {
             const IterationRule& rule = g->graph.iteration_rule;
             py::dict d;
             d["pattern"] = rule.pattern.empty() ? py::object(py::none()) : py::object(py::str(rule.pattern));
             d["form"] = rule.form;
             d["measure"] = std::string(to_string(rule.measure));
             d["thread"] = rule.thread;
             d["description"] = describe(rule);
             return d;
           }, "Which ranges are the iterations and how they are measured: {pattern (the iterations= regex or "
              "None), form, measure ('range' or 'start_to_start'), thread, description}.")
      .def("import_report", [](const GraphPtr& g) {
             py::list out;
             for (const ImportStat& s : g->graph.report().stats()) {
               py::dict d;
               d["key"] = s.key;
               d["severity"] = std::string(to_string(s.severity));
               d["count"] = s.count;
               d["first_event"] = s.first_event;
               if (s.total_ns > 0) d["total_ms"] = ms(s.total_ns);
               d["description"] = s.description;
               out.append(std::move(d));
             }
             return out;
           }, "The import report, as `daydream stats --json` prints it: a list of {key, severity, count, "
              "first_event (source index, -1 for none), total_ms (only for counters of stretches of time), description}.")
      .def_property_readonly("source_path", [](const GraphPtr& g) { return g->graph.source_path; },
                             "The trace file the graph was built from.")
      .def_property(
          "world_size", [](const GraphPtr& g) { return int_or_none(g->graph.world_size); },
          [](const GraphPtr& g, std::int64_t ranks) {
            if (ranks < 1 || ranks > (std::int64_t{1} << 32))
              throw py::value_error("world_size: a job has 1 to 2**32 ranks, not " + std::to_string(ranks));
            WriteLock lock(*g);
            g->graph.world_size = ranks;
          },
          "Ranks of the job this graph is (one rank of): distributedInfo.world_size, or None. ddp and p3 set it to "
          "machines x gpus when that is above 1; sweep(price=...) counts the job's GPUs by it.")
      .def("edge_counts", [](const GraphPtr& g) {
             py::dict out;
             const auto counts = g->graph.edge_counts();
             for (std::size_t k = 0; k < kEdgeTypeCount; ++k) out[py::str(std::string(to_string(static_cast<EdgeType>(k))))] = counts[k];
             return out;
           }, "Number of edges of each dependency type, as {type name: count}.")
      .def("task_counts", [](const GraphPtr& g) {
             py::dict out;
             const auto counts = g->graph.task_counts();
             for (std::size_t k = 0; k < kTaskKindCount; ++k) out[py::str(std::string(to_string(static_cast<TaskKind>(k))))] = counts[k];
             return out;
           }, "Number of tasks of each kind, as {kind: count}.")
      .def("task", [](const GraphPtr& g, py::object id) { return TaskRef{g, task_id_in(*g, id)}; }, py::arg("id"),
           "The task with this id (IndexError when out of range).")
      .def("copy", [](const GraphPtr& g) { return g->copy(); },
           "An independent deep copy: what-ifs change copies and keep the original. The copy keeps sources and "
           "layer_file.")
      .def("__copy__", [](const GraphPtr& g) { return g->copy(); }, "Same as copy().")
      .def("__deepcopy__", [](const GraphPtr& g, py::object) { return g->copy(); }, py::arg("memo"), "Same as copy().")
      .def("fingerprint", &fingerprint,
           "A 64-bit hash (int) of everything a simulation depends on: tasks, edges, units, iterations. Equal graphs "
           "have equal fingerprints on every machine; any change to a duration or an edge changes it.")
      .def_property_readonly("sources", [](const GraphPtr& g) { return py::tuple(py::cast(g->sources)); },
                             "The trace files the graph was loaded from (absolute paths, in order), as a tuple of "
                             "str; empty for a graph not made by daydream.load().")
      .def_property_readonly("layer_file", [](const GraphPtr& g) {
             return g->layers.empty() ? py::object(py::none()) : py::object(py::str(g->layers));
           }, "The layer file given to daydream.load() (absolute path), or None.")
      .def_property_readonly("_loaded_fingerprint", [](const GraphPtr& g) { return g->loaded_fingerprint; },
                             "Internal: fingerprint() right after daydream.load(), or None; a graph changed since "
                             "differs from it.")
      .def("tasks_frame", &tasks_frame,
           "A pandas DataFrame with one row per live task: id, name, kind, unit, duration_ns, recorded_start_ns, "
           "iteration, phase, layer, op. Needs pandas (ImportError otherwise).")
      .def("__repr__", &graph_repr, "Source (for a job: its ranks and their traces' folder), task, edge, unit and "
                                    "iteration counts.");
}

}  // namespace daydream::python
