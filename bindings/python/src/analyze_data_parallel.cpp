// What the data-parallel scenarios (ddp, p3) are made of (analyze.hpp, model.hpp), for scripts
// written in Python: the trace's collectives and what they say about its ring, the backward passes
// with their gradients and sizes, a traced DDP run's passes and the copies around them, DDP's
// buckets, the ring all-reduce cost. Thin: every rule lives in the library; this file converts
// arguments and results. The values (TraceCollectives, BackwardPass, TracedPass, LaunchIndex) hold
// their graph, so that they hand out Tasks and refuse another graph's.
#include <pybind11/stl.h>

#include "common.hpp"
#include "daydream/analyze.hpp"
#include "daydream/model.hpp"
#include "daydream/transform.hpp"

namespace daydream::python {
namespace {

using namespace pybind11::literals;
using GraphClass = py::class_<GraphBox, GraphPtr>;

/// A library value read off one graph (read_trace_collectives, find_backward_passes, ...).
template <class T>
struct Of {
  GraphPtr box;
  T value;
};
using CollectivesRef = Of<TraceCollectives>;
using BackwardPassRef = Of<BackwardPass>;
using TracedPassRef = Of<TracedPass>;
using LaunchIndexRef = Of<LaunchIndex>;

/// The value of `ref`, which must come from `box`'s graph (ValueError otherwise).
template <class T>
const T& value_in(const GraphPtr& box, const Of<T>& ref, const char* what) {
  if (ref.box != box) throw py::value_error(std::string(what) + " was read off another graph");
  return ref.value;
}

py::list tasks_of(const GraphPtr& box, const std::vector<TaskId>& ids) {
  py::list out;
  for (TaskId id : ids) out.append(TaskRef{box, id});
  return out;
}

template <class T>
py::list refs_of(const GraphPtr& box, std::vector<T> values) {
  py::list out;
  for (T& v : values) out.append(Of<T>{box, std::move(v)});
  return out;
}

/// {Task: bytes} from the library's task -> bytes map, and back.
py::dict bytes_dict(const GraphPtr& box, const std::map<TaskId, std::int64_t>& bytes) {
  py::dict out;
  for (const auto& [task, size] : bytes) out[py::cast(TaskRef{box, task})] = size;
  return out;
}
std::map<TaskId, std::int64_t> bytes_map(const GraphBox& box, const py::dict& bytes) {
  std::map<TaskId, std::int64_t> out;
  for (auto [task, size] : bytes) out[task_id_in(box, task)] = size.cast<std::int64_t>();
  return out;
}

py::list ready_buckets(const GraphPtr& box, const std::vector<ReadyBucket>& buckets) {
  py::list out;
  for (const ReadyBucket& b : buckets) out.append(py::make_tuple(TaskRef{box, b.ready}, b.bytes));
  return out;
}

py::dict collective_dict(const GraphPtr& box, const TraceCollective& c) {
  return py::dict("name"_a = c.name, "bytes"_a = int_or_none(c.bytes), "thread"_a = box->graph.units()[c.thread].name,
                  "start_ns"_a = c.start_ns, "end_ns"_a = c.end_ns, "tasks"_a = tasks_of(box, c.tasks),
                  "tasks_ns"_a = c.tasks_ns, "allreduce"_a = c.allreduce);
}

py::dict ring_fit_dict(const TracedRingFit& traced) {
  py::object fit = py::none();
  if (traced.fit)
    fit = py::dict("latency_ns"_a = traced.fit->link.latency_ns, "ns_per_byte"_a = traced.fit->link.ns_per_byte,
                   "r_squared"_a = traced.fit->r_squared, "rms_residual_ns"_a = traced.fit->rms_residual_ns,
                   "usable"_a = traced.fit->usable());
  return py::dict("sized"_a = traced.sized, "unsized"_a = traced.unsized, "fit"_a = fit);
}

void init_collectives(py::module_& m) {
  py::class_<CollectivesRef>(m, "TraceCollectives",
      "The collectives a graph's trace records (Graph.trace_collectives(); record_param_comms), with the "
      "communication tasks each launched.")
      .def_property_readonly("world_size", [](const CollectivesRef& c) { return int_or_none(c.value.world_size); },
                             "The trace's world size (distributedInfo, else the collectives' group size), or None.")
      .def_property_readonly("list", [](const CollectivesRef& c) {
             py::list out;
             for (const auto& one : c.value.list) out.append(collective_dict(c.box, one));
             return out;
           }, "By start: [{name, bytes (None: not recorded), thread, start_ns, end_ns, tasks, tasks_ns, allreduce}].")
      .def("allreduce_tasks", [](const CollectivesRef& c) { return tasks_of(c.box, traced_allreduce_tasks(c.value)); },
           "The all-reduce communication tasks (NCCL kernels), by id (C++ traced_allreduce_tasks).")
      .def("fit_ring", [](const CollectivesRef& c) { return ring_fit_dict(fit_traced_allreduces(c.value)); },
           "The ring model fitted to the all-reduces of recorded size (C++ fit_traced_allreduces): {sized, unsized, "
           "fit: {latency_ns, ns_per_byte, r_squared, rms_residual_ns, usable} or None}.")
      .def("ring_ranks", [](const CollectivesRef& c) { return traced_ring_ranks(c.value); },
           "n of the traced ring: the world size, else 2 (C++ traced_ring_ranks).");
}

py::dict gradient_dict(const GraphPtr& box, const Gradient& g) {
  return py::dict("ready"_a = TaskRef{box, g.ready}, "ready_ns"_a = g.ready_ns, "own_gpu_ns"_a = g.own_gpu_ns,
                  "bytes"_a = g.bytes);
}

void init_passes(py::module_& m) {
  py::class_<BackwardPassRef>(m, "BackwardPass",
      "One backward pass and the optimizer step after it (Graph.backward_passes()).")
      .def_property_readonly("iteration", [](const BackwardPassRef& p) { return p.value.iteration; },
                             "Index into Graph.iterations, -1 without iterations.")
      .def_property_readonly("gradients", [](const BackwardPassRef& p) {
             py::list out;
             for (const Gradient& g : p.value.gradients) out.append(gradient_dict(p.box, g));
             return out;
           }, "In ready order (reverse forward order): [{ready: Task, ready_ns, own_gpu_ns, bytes}].")
      .def_property_readonly("update_tasks",
                             [](const BackwardPassRef& p) { return tasks_of(p.box, p.value.update_tasks); },
                             "The optimizer step's GPU tasks, in launch order.")
      .def_property_readonly("barrier", [](const BackwardPassRef& p) { return task_or_none(p.box, p.value.barrier); },
                             "The first GPU task that waits for every gradient, or None.")
      .def_property_readonly("recorded_allreduce_bytes",
                             [](const BackwardPassRef& p) { return p.value.recorded_allreduce_bytes; },
                             "Sum of the trace's all_reduce sizes in the pass's window.")
      .def_property_readonly("recorded_buckets", [](const BackwardPassRef& p) { return p.value.recorded_buckets; },
                             "The recorded all_reduces that launched nothing: indices into TraceCollectives.list.")
      .def("update_tasks_per_gradient", [](const BackwardPassRef& p) { return update_tasks_per_gradient(p.value); },
           "Optimizer GPU tasks per gradient, 0 when they do not split evenly.")
      .def("set_gradient_bytes", [](BackwardPassRef& p, const std::vector<std::int64_t>& counts, double per_element) {
             return set_gradient_bytes(p.value, counts, per_element);
           }, "counts"_a, "bytes_per_element"_a,
           "Sets the gradient sizes from per-parameter counts in forward order; False when they do not match.")
      .def("gradient_buckets", [](const BackwardPassRef& p, std::int64_t first_cap, std::int64_t cap) {
             return ready_buckets(p.box, gradient_buckets(p.value, first_cap, cap));
           }, "first_cap"_a, "cap"_a, "DDP's buckets of the gradients: [(ready Task, bytes)].")
      .def("ready_recorded_buckets", [](const BackwardPassRef& p, const CollectivesRef& c, const LaunchIndexRef& l) {
             return ready_buckets(p.box, ready_recorded_buckets(p.value, value_in(p.box, c, "collectives"),
                                                                value_in(p.box, l, "launches")));
           }, "collectives"_a, "launches"_a,
           "The recorded buckets, each ready with the last GPU task its thread launched before it: "
           "[(ready Task, bytes)].");

  py::class_<TracedPassRef>(m, "TracedPass", "One iteration's traced all-reduces (Graph.traced_passes()).")
      .def_property_readonly("iteration", [](const TracedPassRef& p) { return p.value.iteration; },
                             "Index into Graph.iterations.")
      .def_property_readonly("end_ns", [](const TracedPassRef& p) { return p.value.end_ns; }, "End of the iteration.")
      .def_property_readonly("allreduces", [](const TracedPassRef& p) { return tasks_of(p.box, p.value.allreduces); },
                             "The all-reduce tasks, in launch order.")
      .def_property_readonly("recorded_bytes", [](const TracedPassRef& p) {
             py::list out;
             for (std::int64_t b : p.value.recorded_bytes) out.append(int_or_none(b));
             return out;
           }, "Each one's recorded size, or None.")
      .def("rebucket", [](const TracedPassRef& p, const py::dict& bytes, std::int64_t first_cap, std::int64_t cap) {
             py::list out;
             for (const Bucket& b : rebucket_traced_pass(p.value, bytes_map(*p.box, bytes), first_cap, cap))
               out.append(py::make_tuple(b.first, b.last, b.bytes));
             return out;
           }, "bytes"_a, "first_cap"_a, "cap"_a,
           "DDP's buckets over the all-reduces for new caps, sizes from {Task: bytes}: [(first, last, bytes)] "
           "(C++ rebucket_traced_pass).");

  py::class_<LaunchIndexRef>(m, "LaunchIndex", "The GPU tasks each CPU thread launched, by launch-call start.")
      .def(py::init([](const GraphPtr& g) { return LaunchIndexRef{g, LaunchIndex(g->graph)}; }), "graph"_a,
           "Indexes the graph's launches as they are now.")
      .def("last_before", [](const LaunchIndexRef& l, py::object thread, TimeNs time_ns) {
             return task_or_none(l.box, l.value.last_before(unit_id_in(*l.box, thread), time_ns));
           }, "thread"_a, "time_ns"_a,
           "The last GPU task the thread launched by a call starting before time_ns, or None.")
      .def("launched_in", [](const LaunchIndexRef& l, py::object thread, TimeNs from_ns, TimeNs to_ns) {
             return tasks_of(l.box, l.value.launched_in(unit_id_in(*l.box, thread), from_ns, to_ns));
           }, "thread"_a, "from_ns"_a, "to_ns"_a, "The GPU tasks launched by calls starting in [from_ns, to_ns).");
}

void init_graph_facts(GraphClass& graph) {
  graph.def("trace_collectives", [](const GraphPtr& g) { return CollectivesRef{g, read_trace_collectives(g->graph)}; },
            "The collectives the trace records, as a TraceCollectives.")
      .def("backward_passes", [](const GraphPtr& g, const CollectivesRef& c) {
             return refs_of(g, find_backward_passes(g->graph, value_in(g, c, "collectives")));
           }, "collectives"_a, "The backward passes (AccumulateGrad ranges by iteration), gradient sizes 0.")
      .def("traced_passes", [](const GraphPtr& g, const CollectivesRef& c) {
             return refs_of(g, traced_passes(g->graph, value_in(g, c, "collectives")));
           }, "collectives"_a, "The traced all-reduce tasks grouped by iteration, as TracedPass.")
      .def("spread_over_gradients", [](const GraphPtr& g, BackwardPassRef& p, std::int64_t total_bytes) {
             value_in(g, p, "pass");
             return spread_over_gradients(g->graph, p.value, total_bytes);
           }, "backward_pass"_a, "total_bytes"_a,
           "Spreads total_bytes over the pass's gradients by a size proxy; returns the proxy's name.")
      .def("traced_allreduce_sizes", [](const GraphPtr& g, const CollectivesRef& c, std::optional<std::int64_t> model) {
             const auto s = traced_allreduce_sizes(g->graph, value_in(g, c, "collectives"), model.value_or(kNone));
             return py::dict("bytes"_a = bytes_dict(g, s.bytes), "recorded"_a = s.recorded, "spread"_a = s.spread,
                             "unsized"_a = s.unsized);
           }, "collectives"_a, "model_bytes"_a = py::none(),
           "Each all-reduce task's size, recorded or model_bytes spread by duration: {bytes: {Task: bytes}, "
           "recorded, spread, unsized}.")
      .def("measured_ns_per_byte", [](const GraphPtr& g, const py::dict& bytes, std::int64_t ranks, double latency_ns) {
             return measured_ns_per_byte(g->graph, bytes_map(*g, bytes), ranks, latency_ns);
           }, "bytes"_a, "ranks"_a, "latency_ns"_a,
           "The ns per byte at which the ring model adds up to the measured durations of {Task: bytes}.")
      .def("copy_back_copies", [](const GraphPtr& g, const LaunchIndexRef& l, const TracedPassRef& p) {
             return tasks_of(g, copy_back_copies(g->graph, value_in(g, l, "launches"), value_in(g, p, "pass")));
           }, "launches"_a, "traced_pass"_a, "DDP's copies into .grad after the pass's last all-reduce.")
      .def("checked_copy_back", [](const GraphPtr& g, const LaunchIndexRef& l, const std::vector<TracedPassRef>& ps) {
             std::vector<TracedPass> passes;
             for (const auto& p : ps) passes.push_back(value_in(g, p, "pass"));
             const CopyBack c = checked_copy_back(g->graph, value_in(g, l, "launches"), passes);
             return py::dict("copies"_a = tasks_of(g, c.copies), "copies_per_pass"_a = c.copies_per_pass,
                             "bytes_per_pass"_a = c.bytes_per_pass, "mismatched"_a = c.mismatched);
           }, "launches"_a, "traced_passes"_a,
           "The copy-back of each pass that moves its recorded bytes: {copies, copies_per_pass, bytes_per_pass, "
           "mismatched}.")
      .def("buffer_broadcast_tasks", [](const GraphPtr& g, const LaunchIndexRef& l) {
             return tasks_of(g, buffer_broadcast_tasks(g->graph, value_in(g, l, "launches")));
           }, "launches"_a, "DDP's buffer broadcasts inside iterations with their coalescing copies, by id.")
      .def("next_forward", [](const GraphPtr& g, const BackwardPassRef& p, const BackwardPassRef& next) {
             return tasks_of(g, next_forward(g->graph, value_in(g, p, "pass"), value_in(g, next, "next")));
           }, "backward_pass"_a, "next"_a, "The next forward's GPU tasks along the stream, or [].")
      .def("forward_use_tasks", [](const GraphPtr& g, const BackwardPassRef& p, py::object forward) {
             return tasks_of(g, forward_use_tasks(g->graph, value_in(g, p, "pass"), task_ids_in(*g, forward)));
           }, "backward_pass"_a, "forward"_a, "Where the forward first uses each parameter (forward order).")
      .def("add_comm_channel", [](const GraphPtr& g, const std::string& name) {
             WriteLock lock(*g);
             return add_comm_channel(g->graph, name);
           }, "name"_a, "Adds a communication channel unit (name made unique) and returns its id.");
}

void init_ring(py::module_& m) {
  py::class_<RingCost>(m, "RingCost", "A ring all-reduce over `ranks` GPUs on a link of latency and ns per byte.")
      .def(py::init([](double latency_ns, double ns_per_byte, std::int64_t ranks) {
             return RingCost{{latency_ns, ns_per_byte}, ranks};
           }), "latency_ns"_a, "ns_per_byte"_a, "ranks"_a, "The model; ns_per_byte 0 is an infinite link.")
      .def_property_readonly("latency_ns", [](const RingCost& c) { return c.link.latency_ns; }, "Alpha, in ns.")
      .def_property_readonly("ns_per_byte", [](const RingCost& c) { return c.link.ns_per_byte; }, "Beta.")
      .def_readonly("ranks", &RingCost::ranks, "n.")
      .def("allreduce_ns", &RingCost::allreduce_ns, "bytes"_a,
           "latency + 2(n-1)/n * bytes * ns_per_byte, rounded; 0 for one GPU.");
  m.def("ns_per_byte", &ns_per_byte, "bytes_per_s"_a, "ns per byte of a link of bytes_per_s; 0 for an infinite link.");
  m.def("read_parameter_counts", &read_parameter_counts, "path"_a,
        "Per-parameter counts in forward order from {\"parameters\": [{\"name\", \"count\"}, ...]}.");
}

}  // namespace

void init_analyze_data_parallel(py::module_& m) {
  auto graph = py::reinterpret_borrow<GraphClass>(m.attr("Graph"));
  init_collectives(m);
  init_passes(m);
  init_graph_facts(graph);
  init_ring(m);
}

}  // namespace daydream::python
