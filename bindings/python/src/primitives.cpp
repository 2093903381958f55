// The primitives scenarios are made of (transform.hpp, analyze.hpp), for scripts written in
// Python: neighbours by edge type, what a call launched, the windows of a named range, a block of
// tasks replaced by new ones, edges added, GPU work removed with its launches. Thin: every rule
// lives in the library; this file converts arguments and results.
#include <pybind11/stl.h>

#include "common.hpp"
#include "daydream/analyze.hpp"
#include "daydream/error.hpp"
#include "daydream/job.hpp"
#include "daydream/model.hpp"
#include "daydream/transform.hpp"

namespace daydream::python {
namespace {

using GraphClass = py::class_<GraphBox, GraphPtr>;

Replacement replacement_of(const GraphBox& box, py::handle spec) {
  if (!py::isinstance<py::dict>(spec))
    throw py::type_error("replace_block: each replacement is a dict {unit, tasks, gap_ns, take_over_edges}");
  const auto d = py::reinterpret_borrow<py::dict>(spec);
  Replacement r;
  r.unit = unit_id_in(box, d["unit"]);
  for (py::handle t : d["tasks"]) r.tasks.push_back(new_task_of(t));
  if (d.contains("gap_ns")) r.gap_ns = non_negative_ns(d["gap_ns"], "gap_ns");
  if (d.contains("take_over_edges")) r.take_over_edges = d["take_over_edges"].cast<bool>();
  return r;
}

py::list replace_block_py(const GraphPtr& box, py::object block, py::list replacements) {
  const auto ids = task_ids_in(*box, block);
  std::vector<Replacement> specs;
  for (py::handle r : replacements) specs.push_back(replacement_of(*box, r));
  std::vector<std::vector<TaskId>> inserted;
  {
    WriteLock lock(*box);
    inserted = replace_block(box->graph, ids, std::move(specs));
  }
  py::list out;
  for (const auto& list : inserted) out.append(task_refs(box, list));
  return out;
}

void connect_py(const GraphPtr& box, py::object from, py::object to, const std::string& type, py::object delay,
                const std::string& timing) {
  if (timing != "finish_to_start" && timing != "start_to_start")
    throw py::value_error("connect: timing is 'finish_to_start' or 'start_to_start', not '" + timing + "'");
  const Edge edge{parse_edge_type(type), timing == "start_to_start" ? Timing::start_to_start : Timing::finish_to_start,
                  non_negative_ns(delay, "delay_ns"), false};
  const TaskId a = task_id_in(*box, from), b = task_id_in(*box, to);
  WriteLock lock(*box);
  box->graph.connect(a, b, edge);
}

py::dict calibration_of(const GraphPtr& box) {
  const Calibration& c = box->graph.calibration();
  py::dict latency;
  for (TaskKind kind : {TaskKind::kernel, TaskKind::memcpy, TaskKind::memset, TaskKind::communication})
    latency[py::str(std::string(to_string(kind)))] = c.launch_latency_ns[static_cast<std::size_t>(kind)];
  py::dict out;
  out["launch_latency_ns"] = latency;
  out["gpu_gap_ns"] = c.gpu_gap_ns;
  return out;
}

/// (neighbour, edge type, delay_ns) of each edge out of (into) a task, in edge order.
py::list edges_of(const GraphPtr& box, py::object task, bool out) {
  const TaskId id = task_id_in(*box, task);
  py::list edges;
  const auto add = [&](TaskId other, const Edge& e) {
    edges.append(py::make_tuple(TaskRef{box, other}, std::string(to_string(e.type)), e.delay_ns));
    return true;
  };
  if (out) box->graph.visit_successors(id, add);
  else box->graph.visit_predecessors(id, add);
  return edges;
}

py::dict chain_spot_py(const GraphPtr& box, py::object first, py::object block) {
  const TaskId id = task_id_in(*box, first);
  std::vector<char> in_block(box->graph.num_tasks(), 0);
  for (TaskId t : task_ids_in(*box, block)) in_block[t] = 1;
  const ChainSpot spot = chain_spot(box->graph, id, in_block);
  py::dict out;
  out["prev"] = task_or_none(box, spot.prev);
  out["delay_in_ns"] = spot.delay_in_ns;
  out["next"] = task_or_none(box, spot.next);
  out["delay_out_ns"] = spot.delay_out_ns;
  out["release_ns"] = spot.release_ns;
  return out;
}

TaskId optional_task(const GraphBox& box, py::object task) { return task.is_none() ? kNoTask : task_id_in(box, task); }

TaskRef insert_between_py(const GraphPtr& box, py::dict spec, py::object unit, py::object prev, py::object next,
                          py::object delay_in, py::object delay_out, py::object release) {
  NewTask task = new_task_of(spec);
  task.unit = unit_id_in(*box, unit);
  const TaskId a = optional_task(*box, prev), b = optional_task(*box, next);
  const TimeNs in = non_negative_ns(delay_in, "delay_in_ns"), out = non_negative_ns(delay_out, "delay_out_ns");
  const auto at = release.cast<TimeNs>();  // relative to the origin: may lie before it
  WriteLock lock(*box);
  return {box, insert_between(box->graph, std::move(task), a, b, in, out, at)};
}

void init_walks(GraphClass& graph) {
  graph.def("successor", [](const GraphPtr& g, py::object task, const std::string& type) {
             return task_or_none(g, successor(g->graph, task_id_in(*g, task), parse_edge_type(type)));
           }, py::arg("task"), py::arg("edge_type"),
           "The first successor joined by an edge of edge_type (daydream.EDGE_TYPES; a sequential type only on "
           "the task's own unit), or None.")
      .def("predecessor", [](const GraphPtr& g, py::object task, const std::string& type) {
             return task_or_none(g, predecessor(g->graph, task_id_in(*g, task), parse_edge_type(type)));
           }, py::arg("task"), py::arg("edge_type"), "The first predecessor joined by an edge of edge_type, or None.")
      .def("out_edges", [](const GraphPtr& g, py::object t) { return edges_of(g, t, true); }, py::arg("task"),
           "(successor, edge_type, delay_ns) of every edge out of the task, in edge order.")
      .def("in_edges", [](const GraphPtr& g, py::object t) { return edges_of(g, t, false); }, py::arg("task"),
           "(predecessor, edge_type, delay_ns) of every edge into the task, in edge order.")
      .def("chain_next", [](const GraphPtr& g, py::object t) { return task_or_none(g, chain_next(g->graph, task_id_in(*g, t))); },
           py::arg("task"), "The task after this one on its unit, or None.")
      .def("chain_prev", [](const GraphPtr& g, py::object t) { return task_or_none(g, chain_prev(g->graph, task_id_in(*g, t))); },
           py::arg("task"), "The task before this one on its unit, or None.")
      .def("launching_call", [](const GraphPtr& g, py::object t) { return task_or_none(g, launching_call(g->graph, task_id_in(*g, t))); },
           py::arg("task"), "The CUDA call that launched a GPU task, or None (launched before profiling began).")
      .def("launched_by", [](const GraphPtr& g, py::object calls) {
             return task_refs(g, launched_by(g->graph, task_ids_in(*g, calls)));
           }, py::arg("calls"), "The GPU tasks a call (or each of several calls, in order) launched.")
      .def("range_windows", [](const GraphPtr& g, const std::string& pattern) {
             py::list out;
             for (const RangeWindow& w : range_windows(g->graph, pattern))
               out.append(py::make_tuple(g->graph.units()[w.unit].name, w.start_ns, w.end_ns));
             return out;
           }, py::arg("pattern"),
           "The outermost CPU ranges whose name the pattern finds, merged where they overlap, as (thread, start_ns, "
           "end_ns) tuples in (thread, start) order.")
      .def("tasks_by_unit", [](const GraphPtr& g) {
             py::dict out;
             const auto by_unit = tasks_by_unit(g->graph);
             for (UnitId u = 0; u < by_unit.size(); ++u) out[py::str(g->graph.units()[u].name)] = task_refs(g, by_unit[u]);
             return out;
           }, "Each unit's live tasks in recorded-start order (ties by id), by unit name.")
      .def("unit_info", [](const GraphPtr& g, py::object unit) {
             const Unit& u = g->graph.units()[unit_id_in(*g, unit)];
             return py::dict(py::arg("name") = u.name, py::arg("kind") = std::string(to_string(u.kind)),
                             py::arg("background") = u.background, py::arg("rank") = int_or_none(u.rank),
                             py::arg("process") = int_or_none(u.process));
           }, py::arg("unit"), "{name, kind, background, rank, process} of a unit (name or id; process: the pid of a "
              "CPU thread, the device of a GPU stream, None when unknown).")
      .def("chain_spot", &chain_spot_py, py::arg("first"), py::arg("block"),
           "Where a block sits on the chain of its first task's unit: {prev, delay_in_ns, next, delay_out_ns, "
           "release_ns} (prev/next None at the ends).")
      .def_property_readonly("calibration", &calibration_of,
           "The trace's calibrated latencies: launch_latency_ns per GPU task kind and gpu_gap_ns.")
      .def("median_launch_call_ns", [](const GraphPtr& g) { return median_launch_call_ns(g->graph); },
           "The median duration of the trace's kernel-launch calls (5 us when it has none).");
}

void init_edits(GraphClass& graph) {
  graph.def("replace_block", &replace_block_py, py::arg("block"), py::arg("replacements"),
           "Replaces a block of tasks by new ones, keeping the gaps around the block and dropping those inside. "
           "replacements: dicts {unit, tasks: [{name, kind, duration_ns, iteration, phase}], gap_ns, "
           "take_over_edges}, each placed where the block's first task on its unit was. Returns the new Tasks of "
           "each replacement.")
      .def("insert_between", &insert_between_py, py::arg("task"), py::arg("unit"), py::arg("prev"), py::arg("next"),
           py::arg("delay_in_ns") = 0, py::arg("delay_out_ns") = 0, py::arg("release_ns") = 0,
           "Inserts a task {name, kind, duration_ns, iteration, phase} on `unit` between prev and next (either "
           "None), exactly delay_in_ns after prev and delay_out_ns before next; without prev it is released at "
           "release_ns. Returns the new Task.")
      .def("connect", &connect_py, py::arg("from_task"), py::arg("to_task"), py::arg("edge_type"),
           py::arg("delay_ns") = 0, py::arg("timing") = "finish_to_start",
           "Adds an edge between two live tasks; daydream.Error when it would close a cycle.")
      .def("disconnect", [](const GraphPtr& g, py::object from, py::object to) {
             const TaskId a = task_id_in(*g, from), b = task_id_in(*g, to);
             WriteLock lock(*g);
             g->graph.disconnect(a, b);
           }, py::arg("from_task"), py::arg("to_task"),
           "Deletes every edge from -> to without bridging (a wait the optimization removes); daydream.Error when "
           "there is none.")
      .def("set_delay", [](const GraphPtr& g, py::object from, py::object to, py::object delay) {
             const TaskId a = task_id_in(*g, from), b = task_id_in(*g, to);
             const TimeNs ns = non_negative_ns(delay, "delay_ns");
             WriteLock lock(*g);
             g->graph.edge(a, b).delay_ns = ns;
           }, py::arg("from_task"), py::arg("to_task"), py::arg("delay_ns"),
           "Sets the delay of the first edge from -> to; daydream.Error when there is none.")
      .def("remove_block", [](const GraphPtr& g, py::object tasks) {
             const auto ids = task_ids_in(*g, tasks);
             WriteLock lock(*g);
             remove_block(g->graph, ids);
           }, py::arg("tasks"),
           "Removes tasks as one block: the bridges keep the gaps around it, never the gaps inside it.")
      .def("remove_with_launches", [](const GraphPtr& g, py::object tasks) {
             const auto ids = task_ids_in(*g, tasks);
             WriteLock lock(*g);
             return remove_with_launches(g->graph, ids);
           }, py::arg("tasks"), "Removes GPU tasks and the calls that launched only them; returns the calls removed.");
}

const JobLayout& job_of(const GraphBox& box) {
  if (!box.graph.job()) throw Error("not a multi-rank job graph (daydream.load of every rank's trace)");
  return *box.graph.job();
}

py::list job_collectives(const GraphPtr& box) {
  py::list out;
  for (const MatchedCollective& c : job_of(*box).collectives)
    out.append(py::dict(py::arg("name") = c.name, py::arg("sequence") = c.sequence,
                        py::arg("bytes") = int_or_none(c.bytes),
                        py::arg("ranks") = c.ranks, py::arg("transfers") = task_refs(box, c.transfers)));
  return out;
}

py::object fit_link_py(const std::vector<std::pair<double, TimeNs>>& samples) {
  const auto fit = fit_link(samples);
  if (!fit) return py::none();
  return py::dict(py::arg("latency_ns") = fit->link.latency_ns, py::arg("ns_per_byte") = fit->link.ns_per_byte,
                  py::arg("rms_residual_ns") = fit->rms_residual_ns, py::arg("r_squared") = fit->r_squared,
                  py::arg("samples") = fit->samples, py::arg("distinct_sizes") = fit->distinct_sizes);
}

void init_jobs(GraphClass& graph, py::module_& m) {
  graph.def("job_layout", [](const GraphPtr& g) {
             const JobLayout& job = job_of(*g);
             std::vector<std::int64_t> ranks;
             for (const RankInfo& r : job.ranks) ranks.push_back(r.rank);
             return py::dict(py::arg("world_size") = int_or_none(job.world_size), py::arg("ranks") = ranks,
                             py::arg("missing_ranks") = job.missing_ranks);
           }, "{world_size, ranks (in order), missing_ranks} of a job graph; daydream.Error for the graph of one "
              "trace.")
      .def("job_collectives", &job_collectives,
           "The collectives matched across a job graph's ranks: [{name, sequence, bytes (None: not recorded), "
           "ranks, transfers: [Task per participant]}].")
      .def("replicate_ranks", [](const GraphPtr& g, std::int64_t ranks) {
             Graph grown = replicate_ranks(g->graph, ranks);
             WriteLock lock(*g);
             g->graph = std::move(grown);
           }, py::arg("ranks"),
           "Grows a job graph in place to `ranks` ranks (rank r copies traced rank r mod n), the new ranks in "
           "every matched collective; collective costs stay as they are.");
  m.def("fit_link", &fit_link_py, py::arg("samples"),
        "Least-squares duration = latency + ns_per_byte * traffic over (traffic bytes, duration ns) samples: "
        "{latency_ns, ns_per_byte, rms_residual_ns, r_squared, samples, distinct_sizes}, or None with fewer "
        "than two distinct sizes.");
  m.def("collective_traffic_bytes", &collective_traffic_bytes, py::arg("name"), py::arg("ranks"), py::arg("bytes"),
        "Bytes one participant moves in a collective: all_reduce 2(n-1)/n, all_gather/reduce_scatter/all_to_all "
        "(n-1)/n, others 1 times bytes; 0 for one rank.");
}

}  // namespace

void init_primitives(py::module_& m) {
  auto graph = py::reinterpret_borrow<GraphClass>(m.attr("Graph"));
  init_walks(graph);
  init_edits(graph);
  init_jobs(graph, m);
  auto task = py::reinterpret_borrow<py::class_<TaskRef>>(m.attr("Task"));
  task.def_property(
          "blocking", [](const TaskRef& r) { return r.task().blocking; },
          [](const TaskRef& r, bool blocking) {
            WriteLock lock(*r.box);
            r.box->graph.set_blocking(r.id, blocking);
          },
          "True for a CPU call that waits for GPU work; settable.")
      .def_property_readonly("release_ns", [](const TaskRef& r) { return r.task().release_ns; },
                             "When a task without predecessors may start, relative to the origin (ns).")
      .def("rename", [](const TaskRef& r, const std::string& name) {
             WriteLock lock(*r.box);
             r.box->graph.rename(r.id, name);
           }, py::arg("name"), "Renames the task.")
      .def_property_readonly("unit_id", [](const TaskRef& r) { return r.task().unit; },
                             "Id of the task's unit (an index into Graph.units).")
      .def_property_readonly("bytes", [](const TaskRef& r) { return int_or_none(r.task().bytes); }, "Bytes a copy, memset or collective moved, or None when the trace does not say.")
      .def_property_readonly("op_event", [](const TaskRef& r) { return int_or_none(r.task().op_event); }, "The operator instance around the task (or its launch call), as the trace's event index; None.");
}

}  // namespace daydream::python
