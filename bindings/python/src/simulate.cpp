// Graph.simulate / Graph.replay and daydream.Result. Schedule priorities that come from Python
// (a dict or a callable) are computed first, with the GIL; the simulation itself runs without
// the GIL, under the graph's shared lock, through PrecomputedPolicy.
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "common.hpp"
#include "daydream/error.hpp"
#include "daydream/job.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/transform.hpp"

namespace daydream::python {
namespace {

using namespace pybind11::literals;
using GraphClass = py::class_<GraphBox, GraphPtr>;
using ResultClass = py::class_<ResultData, std::shared_ptr<ResultData>>;

double as_priority(py::handle value, TaskId id) {
  double p = 0;
  try {
    p = py::float_(py::reinterpret_borrow<py::object>(value)).cast<double>();
  } catch (py::error_already_set&) {
    throw py::type_error("schedule: the priority of task " + std::to_string(id) + " is not a number: " +
                         std::string(py::repr(value)));
  }
  if (std::isnan(p)) throw py::value_error("schedule: the priority of task " + std::to_string(id) + " is NaN");
  return p;
}

/// The policy for a `schedule` argument: None/"trace_order", "fifo", {task: priority} or a
/// callable Task -> priority. Dict and callable priorities default to trace order (recorded
/// start in ns) for tasks they leave out (missing from the dict, or None from the callable).
std::unique_ptr<SchedulePolicy> make_policy(const GraphPtr& box, py::handle schedule) {
  if (schedule.is_none()) return std::make_unique<TraceOrderPolicy>();
  if (py::isinstance<py::str>(schedule)) {
    const auto name = schedule.cast<std::string>();
    if (name == "trace_order") return std::make_unique<TraceOrderPolicy>();
    if (name == "fifo") return std::make_unique<FifoPolicy>();
    throw py::value_error("unknown schedule \"" + name +
                          "\" (expected \"trace_order\", \"fifo\", a dict {task id: priority} or a callable)");
  }
  const Graph& g = box->graph;
  const TraceOrderPolicy trace_order;
  std::vector<double> priorities(g.num_tasks());
  for (TaskId t = 0; t < g.num_tasks(); ++t) priorities[t] = trace_order.priority(g, t);
  if (py::isinstance<py::dict>(schedule)) {
    for (auto [key, value] : schedule.cast<py::dict>()) {
      const TaskId id = task_id_in(*box, key);
      priorities[id] = as_priority(value, id);
    }
    return std::make_unique<PrecomputedPolicy>(std::move(priorities), "dict");
  }
  if (PyCallable_Check(schedule.ptr())) {
    const std::uint64_t revision = box->revision;
    for (TaskId t = 0; t < priorities.size(); ++t) {
      if (g.task(t).removed) continue;
      py::object value = schedule(TaskRef{box, t});
      if (box->revision != revision)
        throw py::value_error("schedule: the callable changed the graph (called for task " + std::to_string(t) +
                              "); a schedule may only read it: make changes before simulate()");
      if (!value.is_none()) priorities[t] = as_priority(value, t);
    }
    return std::make_unique<PrecomputedPolicy>(std::move(priorities), "callable");
  }
  throw py::type_error("schedule must be None, \"trace_order\", \"fifo\", a dict {task id: priority} or a callable");
}

std::shared_ptr<ResultData> run(const GraphPtr& box, py::handle schedule, std::string* json = nullptr) {
  const auto policy = make_policy(box, schedule);
  auto data = std::make_shared<ResultData>();
  data->box = box;
  data->schedule = policy->name();
  {
    py::gil_scoped_release release;
    std::shared_lock lock(box->mutex);
    data->result = simulate(box->graph, *policy);
    const ReplayReport report = make_replay_report(box->graph, data->result);
    for (const auto& it : report.iterations) {
      data->iteration_names.push_back(it.name);
      data->iteration_ns.push_back(it.simulated_ns);
      data->measured_iteration_ns.push_back(it.measured_ns);
    }
    if (json) *json = box->graph.job() ? to_json(make_job_report(box->graph, data->result)) : to_json(report);
  }
  return data;
}

std::vector<double> to_ms(const std::vector<TimeNs>& ns) {
  std::vector<double> out;
  out.reserve(ns.size());
  for (TimeNs v : ns) out.push_back(ms(v));
  return out;
}

/// The job report of a job graph's replay (trace order), computed without the GIL.
JobReport job_report(const GraphPtr& box) {
  py::gil_scoped_release release;
  std::shared_lock lock(box->mutex);
  return make_job_report(box->graph, simulate(box->graph));
}

py::object job_straggler(const GraphPtr& box) {
  if (!box->graph.job()) return py::none();
  const std::int64_t straggler = job_report(box).straggler;
  return straggler == kNone ? py::none() : py::object(py::int_(straggler));
}

/// One row per rank and iteration of the job's replay.
py::object ranks_frame(const GraphPtr& box) {
  if (!box->graph.job())
    throw Error(box->graph.source_path + ": ranks_frame: not a multi-rank job graph (load every rank's trace)");
  py::module_ pandas = import_optional("pandas", "Graph.ranks_frame");
  const JobReport report = job_report(box);
  py::list rank, iteration, measured, simulated, error, waited, held_back, last, path, offset, start, trace;
  for (const RankReport& r : report.ranks)
    for (const IterationTime& it : r.iterations) {
      rank.append(r.rank), iteration.append(it.name), measured.append(ms(it.measured_ns));
      simulated.append(ms(it.simulated_ns)), error.append(it.error()), waited.append(ms(r.waited_ns));
      held_back.append(ms(r.held_back_ns)), last.append(r.last_arrivals), path.append(ms(r.critical_path_ns));
      offset.append(ms(r.clock_offset_ns)), start.append(ms(r.step_start_ns)), trace.append(r.trace);
    }
  py::object frame = pandas.attr("DataFrame")(py::dict(
      "rank"_a = rank, "iteration"_a = iteration, "measured_ms"_a = measured, "simulated_ms"_a = simulated,
      "error"_a = error, "waited_ms"_a = waited, "held_back_ms"_a = held_back, "last_arrivals"_a = last,
      "critical_path_ms"_a = path, "clock_offset_ms"_a = offset, "step_start_ms"_a = start, "trace"_a = trace));
  frame.attr("attrs")["straggler"] = report.straggler == kNone ? py::none() : py::object(py::int_(report.straggler));
  frame.attr("attrs")["slowest_rank"] =
      report.slowest_rank == kNone ? py::none() : py::object(py::int_(report.slowest_rank));
  frame.attr("attrs")["explanations"] = report.explanations;
  return frame;
}

TaskId simulated_id(const ResultData& r, py::handle task) {
  const TaskId id = task_id_in(*r.box, task);
  if (id >= r.result.start_ns.size())
    throw py::index_error("task " + std::to_string(id) + " was added after this simulation");
  return id;
}

py::object time_of(const ResultData& r, py::handle task, bool end) {
  const TaskId id = simulated_id(r, task);
  if (r.result.start_ns[id] < 0) return py::none();
  return py::int_(end ? r.result.end_ns[id] : r.result.start_ns[id]);
}

py::object to_pandas(const ResultData& r) {
  py::module_ pandas = import_optional("pandas", "Result.to_pandas()");
  py::module_ numpy = py::module_::import("numpy");
  const Graph& g = r.box->graph;
  TaskColumns tasks(g);
  std::vector<std::int64_t> start, end, duration;
  for (TaskId t = 0; t < r.result.start_ns.size() && t < g.num_tasks(); ++t) {
    if (r.result.start_ns[t] < 0) continue;  // removed when simulated
    tasks.add(t);
    start.push_back(r.result.start_ns[t]);
    end.push_back(r.result.end_ns[t]);
    duration.push_back(r.result.end_ns[t] - r.result.start_ns[t]);
  }
  py::dict columns;
  tasks.write_head(columns, numpy);
  columns["start_ns"] = int64_column(numpy, start);
  columns["end_ns"] = int64_column(numpy, end);
  columns["duration_ns"] = int64_column(numpy, duration);
  tasks.write_tail(columns, numpy, /*with_op=*/false);
  return pandas.attr("DataFrame")(columns);
}

std::string result_repr(const ResultData& r) {
  std::string times;
  for (std::size_t i = 0; i < r.iteration_ns.size() && i < 8; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", ms(r.iteration_ns[i]));
    times += (i ? ", " : "") + std::string(buf);
  }
  if (r.iteration_ns.size() > 8) times += ", ...";
  char total[32];
  std::snprintf(total, sizeof total, "%.3f", ms(r.result.makespan_ns));
  return "<daydream.Result (" + r.schedule + "): total " + total + " ms, iterations [" + times + "] ms>";
}

}  // namespace

void init_simulate(py::module_& m) {
  auto result = py::reinterpret_borrow<ResultClass>(m.attr("Result"));
  result
      .def_property_readonly("iteration_times_ms", [](const ResultData& r) { return to_ms(r.iteration_ns); },
                             "Predicted time of each ProfilerStep iteration, in ms, in order.")
      .def_property_readonly("iteration_times_ns", [](const ResultData& r) { return r.iteration_ns; },
                             "Predicted time of each ProfilerStep iteration, in ns (exact), in order.")
      .def_property_readonly("iteration_names", [](const ResultData& r) { return r.iteration_names; },
                             "Names of the iterations of iteration_times_ms (ProfilerStep#N).")
      .def_property_readonly("measured_iteration_times_ms", [](const ResultData& r) { return to_ms(r.measured_iteration_ns); },
                             "Measured (trace) time of each iteration, in ms.")
      .def_property_readonly("measured_iteration_times_ns", [](const ResultData& r) { return r.measured_iteration_ns; },
                             "Measured (trace) time of each iteration, in ns.")
      .def_property_readonly("total_ms", [](const ResultData& r) { return ms(r.result.makespan_ns); },
                             "Predicted makespan (end of the last task), in ms.")
      .def_property_readonly("total_ns", [](const ResultData& r) { return r.result.makespan_ns; },
                             "Predicted makespan, in ns.")
      .def_property_readonly("critical_path", [](const ResultData& r) {
             std::vector<TaskRef> path;
             for (TaskId t : r.result.critical_path) path.push_back({r.box, t});
             return path;
           }, "The critical path, first task to last, as a list of Task.")
      .def_property_readonly("schedule", [](const ResultData& r) { return r.schedule; },
                             "The schedule policy used: trace_order, fifo, dict or callable.")
      .def_property_readonly("graph", [](const ResultData& r) { return r.box; }, "The simulated graph.")
      .def_property_readonly("occupancy_holds", [](const ResultData& r) { return r.result.occupancy_holds; },
                             "Tasks the occupancy model held back for another stream's GPU-filling kernel.")
      .def_property_readonly("occupancy_hold_ms", [](const ResultData& r) {
             return static_cast<double>(r.result.occupancy_hold_ns) / 1e6;
           }, "Total time those tasks waited, in ms.")
      .def_property_readonly("lock_waits", [](const ResultData& r) { return r.result.lock_waits; },
                             "CUDA calls that waited for another thread's call holding the driver lock.")
      .def_property_readonly("lock_wait_ms", [](const ResultData& r) {
             return static_cast<double>(r.result.lock_wait_ns) / 1e6;
           }, "Total time those calls waited, in ms.")
      .def_property_readonly("static_order", [](const ResultData& r) { return r.result.static_order; },
                             "True when the one-pass static-order simulation ran (the event engine's result to the "
                             "ns; docs/simulator.md), False when the event engine did.")
      .def("start_ns", [](const ResultData& r, py::object task) { return time_of(r, task, false); }, py::arg("task"),
           "Predicted start of a task (Task or id), in ns from the graph origin; None for a removed task.")
      .def("end_ns", [](const ResultData& r, py::object task) { return time_of(r, task, true); }, py::arg("task"),
           "Predicted end of a task (Task or id), in ns from the graph origin; None for a removed task.")
      .def("to_pandas", &to_pandas,
           "A pandas DataFrame with one row per simulated task: id, name, kind, unit, start_ns, end_ns, "
           "duration_ns, iteration, phase, layer. Needs pandas (ImportError otherwise).")
      .def("__repr__", &result_repr, "Schedule, makespan and iteration times.");

  auto graph = py::reinterpret_borrow<GraphClass>(m.attr("Graph"));
  graph
      .def("simulate", [](const GraphPtr& g, py::object schedule) { return run(g, schedule); },
           py::arg("schedule") = py::none(),
           "Predicts when every task runs and returns a Result. schedule picks which ready task a free unit "
           "runs (lowest priority first, ties to the lower id): None or \"trace_order\" (recorded start), "
           "\"fifo\" (the task ready first), a dict {task or id: priority} or a callable Task -> priority "
           "(None keeps trace order for that task). Runs without the GIL; raises daydream.Error for a cycle.")
      .def_property_readonly("straggler", &job_straggler,
                             "A job graph's straggler: the rank the others waited for longest at collectives in "
                             "its replay (None: a single trace, or nobody waited). Simulates the job.")
      .def("ranks_frame", &ranks_frame,
           "A job graph's replay per rank: a pandas DataFrame with one row per rank and iteration (rank, "
           "iteration, measured_ms, simulated_ms, error, waited_ms, held_back_ms, last_arrivals, "
           "critical_path_ms, clock_offset_ms, step_start_ms, trace) and attrs straggler, slowest_rank and "
           "explanations (why they differ; what the critical path covers). Raises daydream.Error for a "
           "single trace.")
      .def("replay", [](const GraphPtr& g, py::object schedule) {
             std::string json;
             run(g, schedule, &json);
             return py::module_::import("json").attr("loads")(json);
           }, py::arg("schedule") = py::none(),
           "Measured vs simulated time of each iteration and of the GPU span, units and critical path: the "
           "dict that `daydream replay --json` prints; for a job graph (daydream.load([...])) the job's: "
           "{\"job\": {\"iterations\": [...], \"straggler\": ..., \"collectives\": [...]}, \"ranks\": [...]}.");
}

}  // namespace daydream::python
