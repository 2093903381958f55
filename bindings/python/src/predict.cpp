// Scenarios from Python: daydream.scenarios / describe / predict / apply_scenario /
// write_timeline, the Prediction class, and the _Predictor that the pure-Python sweep
// (daydream/_sweep.py) drives. Applying and simulating run in C++ without the GIL; only Python
// callables and the progress callback take it back.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <shared_mutex>
#include <utility>

#include "common.hpp"
#include "daydream/error.hpp"
#include "daydream/predict.hpp"
#include "daydream/report/chrome_trace.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/validate.hpp"

namespace daydream::python {
namespace {

using namespace pybind11::literals;

// --- the registry ---

/// daydream.scenarios(): the catalogue of `daydream scenarios --json`, parsed (one writer for both).
py::object scenario_list() {
  return py::module_::import("json").attr("loads")(scenarios_json(builtin_scenarios()))["scenarios"];
}

/// One spec, not a grid: predict and apply_scenario take exactly one scenario.
ScenarioSpec single_spec(const std::string& text, const char* caller) {
  if (text.find('|') != std::string::npos)
    throw Error(std::string(caller) + ": '" + text + "' is a grid (a value lists alternatives with '|'); use daydream.sweep");
  return parse_scenario_spec(text);
}

// --- results ---

/// A Result (as Graph.simulate returns) for a simulation made in C++: `box` holds the graph.
std::shared_ptr<ResultData> make_result(GraphPtr box, SimulationResult result, std::string schedule) {
  auto data = std::make_shared<ResultData>();
  data->box = std::move(box);
  data->result = std::move(result);
  data->schedule = std::move(schedule);
  py::gil_scoped_release release;
  for (const auto& it : make_replay_report(data->box->graph, data->result).iterations) {
    data->iteration_names.push_back(it.name);
    data->iteration_ns.push_back(it.simulated_ns);
    data->measured_iteration_ns.push_back(it.measured_ns);
  }
  return data;
}

/// A simulation made a Result on first use: the replay report a Result holds costs about as much
/// as a simulation, and most callers only read a Prediction's numbers.
class LazyResult {
 public:
  LazyResult() = default;
  explicit LazyResult(std::function<std::shared_ptr<ResultData>()> make) : make_(std::move(make)) {}
  py::object get() {
    if (!data_ && make_) {
      data_ = make_();
      make_ = nullptr;  // frees the simulation it held
    }
    return data_ ? py::cast(data_) : py::none();
  }

 private:
  std::function<std::shared_ptr<ResultData>()> make_;
  std::shared_ptr<ResultData> data_;
};

/// Python's daydream.Prediction. daydream.predict sets the changed graph and both simulations;
/// sweep rows leave them empty (None).
struct PredictionData {
  Prediction prediction;
  std::string trace_path;  ///< the "trace" field of to_dict()
  GraphPtr graph;
  LazyResult result, baseline_result;
};

py::dict critical_path_dict(const PathBreakdown& path) {
  py::dict by_category;
  for (std::size_t c = 0; c < kPathCategoryCount; ++c)
    by_category[py::str(std::string(to_string(static_cast<PathCategory>(c))))] = ms(path.by_category_ns[c]);
  py::list by_layer;
  for (const auto& [layer, ns] : path.by_layer_ns) by_layer.append(py::make_tuple(layer, ms(ns)));
  return py::dict("length_ms"_a = ms(path.length_ns), "dominant"_a = std::string(to_string(path.dominant())),
                  "by_category_ms"_a = by_category, "by_layer_ms"_a = by_layer);
}

py::object iterations_frame(const Prediction& p) {
  py::module_ pandas = import_optional("pandas", "Prediction.iterations");
  py::list name, measured, baseline, predicted, speedup;
  for (const auto& it : p.iterations) {
    name.append(it.name);
    measured.append(ms(it.measured_ns));
    baseline.append(ms(it.baseline_ns));
    predicted.append(ms(it.predicted_ns));
    speedup.append(it.predicted_ns > 0 ? static_cast<double>(it.baseline_ns) / static_cast<double>(it.predicted_ns)
                                       : std::numeric_limits<double>::quiet_NaN());
  }
  return pandas.attr("DataFrame")(py::dict("name"_a = name, "measured_ms"_a = measured, "baseline_ms"_a = baseline,
                                           "predicted_ms"_a = predicted, "speedup"_a = speedup));
}

std::string prediction_repr(const PredictionData& d) {
  const Prediction& p = d.prediction;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.3f ms -> %.3f ms (%.3fx), critical path mostly %s", ms(p.baseline_median_ns),
                ms(p.predicted_median_ns), p.speedup(), std::string(to_string(p.critical_path.dominant())).c_str());
  return "<daydream.Prediction \"" + p.scenario + "\": " + buf + ">";
}

// --- the predictor ---

/// daydream._core._Predictor: the base graph (a copy of the caller's) and its baseline
/// simulation, for one predict() or sweep() call.
struct PredictorData {
  std::shared_ptr<const Predictor> predictor;  // shared with the baseline_result of predictions
  std::string trace_path;
};

PredictorData make_predictor(const GraphPtr& box) {
  PredictorData data;
  data.trace_path = box->graph.source_path;
  py::gil_scoped_release release;
  Graph base;
  {
    std::shared_lock lock(box->mutex);
    base = box->graph;  // cheap: copies share the edge structure until one changes
  }
  data.predictor = std::make_shared<const Predictor>(std::move(base));
  return data;
}

PredictionData predict_with_graphs(const PredictorData& pd, const std::string& text) {
  const ScenarioSpec spec = single_spec(text, "predict");
  PredictionData out;
  out.trace_path = pd.trace_path;
  out.graph = std::make_shared<GraphBox>(Graph{});
  SimulationResult result;
  {
    py::gil_scoped_release release;
    out.prediction = pd.predictor->predict(spec, out.graph->graph, result);
  }
  auto simulated = std::make_shared<SimulationResult>(std::move(result));
  out.result = LazyResult([box = out.graph, simulated, schedule = out.prediction.scenario] {
    return make_result(box, std::move(*simulated), schedule);
  });
  out.baseline_result = LazyResult([predictor = pd.predictor] {
    return make_result(std::make_shared<GraphBox>(predictor->base()), predictor->baseline(), "trace_order");
  });
  return out;
}

/// Calls the Python progress callback from sweep's worker threads (serialised by sweep). The
/// first exception it raises is kept and re-raised once the sweep is over.
class ProgressRelay {
 public:
  explicit ProgressRelay(py::object callback) : callback_(std::move(callback)) {}
  ~ProgressRelay() {
    py::gil_scoped_acquire gil;
    error_.reset();
    callback_ = py::object();
  }
  std::function<void(std::size_t, std::size_t)> function() {
    if (callback_.is_none()) return {};
    return [this](std::size_t done, std::size_t total) {
      py::gil_scoped_acquire gil;
      if (error_) return;
      try {
        callback_(done, total);
      } catch (py::error_already_set& e) {
        error_.emplace(e);
      }
    };
  }
  void rethrow() {
    if (error_) throw py::error_already_set(*error_);
  }

 private:
  py::object callback_;
  std::optional<py::error_already_set> error_;
};

/// Predicts every spec (no grids) in parallel. Returns one (Prediction or None, error or None)
/// pair per spec, in order. Bad specs raise Error before any work starts.
py::list sweep_specs(const PredictorData& pd, const std::vector<std::string>& texts, unsigned threads,
                     py::object progress) {
  std::vector<ScenarioSpec> specs;
  for (const auto& text : texts) specs.push_back(single_spec(text, "sweep"));
  ProgressRelay relay(std::move(progress));
  std::vector<SweepRow> rows;
  {
    py::gil_scoped_release release;
    rows = sweep(*pd.predictor, specs, SweepOptions{threads, relay.function()});
  }
  relay.rethrow();
  py::list out;
  for (auto& row : rows) {
    if (!row.prediction) {
      out.append(py::make_tuple(py::none(), row.error));
      continue;
    }
    out.append(py::make_tuple(PredictionData{std::move(*row.prediction), pd.trace_path, {}, {}, {}}, py::none()));
  }
  return out;
}

PredictionData evaluate_changed(const PredictorData& pd, const std::string& label, const GraphPtr& changed) {
  PredictionData out;
  out.trace_path = pd.trace_path;
  py::gil_scoped_release release;
  std::shared_lock lock(changed->mutex);
  const SimulationResult result = simulate(changed->graph);
  out.prediction = pd.predictor->compare(label, changed->graph, result);
  return out;
}

// --- a sweep's parameter columns ---

py::object cell_value(const std::optional<GivenParameter>& cell) {
  if (!cell) return py::none();
  if (cell->kind == ParamKind::text) return py::str(cell->text);
  if (!cell->number) return py::none();
  if (cell->kind == ParamKind::integer) return py::int_(static_cast<std::int64_t>(*cell->number));
  return py::float_(*cell->number);
}

py::tuple parameter_columns(const std::vector<std::string>& texts, const std::vector<std::string>& reserved) {
  std::vector<ScenarioSpec> specs;
  for (const std::string& text : texts) specs.push_back(parse_scenario_spec(text));
  const ParameterTable table = parameter_table(specs, builtin_scenarios(), reserved);
  py::list rows;
  for (const auto& cells : table.cells) {
    py::list row;
    for (const auto& cell : cells) row.append(cell_value(cell));
    rows.append(std::move(row));
  }
  return py::make_tuple(table.columns, rows);
}

// --- apply_scenario and write_timeline ---

std::vector<std::string> apply_in_place(const GraphPtr& box, const std::string& text) {
  const ScenarioSpec spec = single_spec(text, "apply_scenario");
  ScenarioOutcome outcome;
  {
    // The GIL stays held: Python threads read graphs under the GIL alone (GraphBox), so a change
    // made without it could be seen half done.
    WriteLock lock(*box);
    outcome = apply_scenario(box->graph, spec);
  }
  if (outcome.policy && outcome.policy->name() != "trace_order") {
    const std::string warning = "scenario '" + spec.name + "' also schedules with policy '" + outcome.policy->name() +
                                "', which Graph.simulate() does not use: daydream.predict applies both";
    if (PyErr_WarnEx(PyExc_UserWarning, warning.c_str(), 1) < 0) throw py::error_already_set();
  }
  return std::move(outcome.notes);
}

/// A timeline value: a Result (its own graph) or a (Graph, Result) pair.
std::pair<GraphPtr, std::shared_ptr<ResultData>> timeline_parts(const std::string& label, py::handle value) {
  if (py::isinstance<ResultData>(value)) {
    auto result = value.cast<std::shared_ptr<ResultData>>();
    return {result->box, result};
  }
  if (py::isinstance<py::tuple>(value) && py::len(value) == 2) {
    auto pair = value.cast<py::tuple>();
    if (py::isinstance<GraphBox>(pair[0]) && py::isinstance<ResultData>(pair[1]))
      return {pair[0].cast<GraphPtr>(), pair[1].cast<std::shared_ptr<ResultData>>()};
  }
  throw py::type_error("write_timeline: timeline '" + label + "' must be a Result or a (Graph, Result) pair");
}

void write_timeline(const std::filesystem::path& path, const py::dict& timelines, bool align) {
  std::vector<std::pair<GraphPtr, std::shared_ptr<ResultData>>> parts;
  std::vector<Timeline> out;
  for (auto [key, value] : timelines) {
    const auto label = py::str(key).cast<std::string>();
    auto [box, result] = timeline_parts(label, value);
    if (result->result.start_ns.size() != box->graph.num_tasks())
      throw py::value_error("write_timeline: timeline '" + label + "' simulates " +
                            std::to_string(result->result.start_ns.size()) + " tasks but its graph has " +
                            std::to_string(box->graph.num_tasks()) + " (simulate that graph again)");
    out.push_back({label, &box->graph, &result->result});
    parts.emplace_back(std::move(box), std::move(result));
  }
  std::set<const GraphBox*> boxes;  // each graph locked once, even when two timelines share it
  for (const auto& part : parts) boxes.insert(part.first.get());
  py::gil_scoped_release release;
  std::vector<std::shared_lock<std::shared_mutex>> locks;
  for (const GraphBox* box : boxes) locks.emplace_back(box->mutex);
  write_chrome_trace(path.string(), out, {align});
}

/// daydream.validate's core: the JSON of `daydream validate --json` (the pure-Python
/// daydream/_validate.py makes it a DataFrame). Without the GIL.
std::string validate_json(const GraphPtr& before, const GraphPtr& after, const std::string& text) {
  const ScenarioSpec spec = single_spec(text, "validate");
  resolve_params(builtin_scenarios().find(spec.name), spec);  // Error before the baseline is simulated
  const PredictorData predictor = make_predictor(before);
  py::gil_scoped_release release;
  std::shared_lock lock(after->mutex);
  return to_json(validate(*predictor.predictor, after->graph, spec));
}

}  // namespace

void init_predict(py::module_& m) {
  py::class_<PredictionData>(m, "Prediction",
      "One scenario predicted against a trace's graph: per-iteration baseline vs predicted time, medians, "
      "speedup, the predicted run's critical path and the scenario's notes.")
      .def_property_readonly("scenario", [](const PredictionData& d) { return d.prediction.scenario; },
                             "The scenario spec as written (name:key=value,...), or a sweep callable's name.")
      .def_property_readonly("iterations", [](const PredictionData& d) { return iterations_frame(d.prediction); },
                             "pandas DataFrame, one row per iteration present in both runs: name, measured_ms, "
                             "baseline_ms, predicted_ms, speedup (baseline / predicted).")
      .def_property_readonly("baseline_ms", [](const PredictionData& d) { return ms(d.prediction.baseline_median_ns); },
                             "Median simulated iteration time of the unchanged graph, in ms (whole run without iterations).")
      .def_property_readonly("predicted_ms", [](const PredictionData& d) { return ms(d.prediction.predicted_median_ns); },
                             "Median predicted iteration time with the scenario, in ms.")
      .def_property_readonly("baseline_ns", [](const PredictionData& d) { return d.prediction.baseline_median_ns; },
                             "baseline_ms in ns (exact).")
      .def_property_readonly("predicted_ns", [](const PredictionData& d) { return d.prediction.predicted_median_ns; },
                             "predicted_ms in ns (exact).")
      .def_property_readonly("total_baseline_ms", [](const PredictionData& d) { return ms(d.prediction.baseline_total_ns); },
                             "Whole simulated run (first start to last end) of the unchanged graph, in ms.")
      .def_property_readonly("total_predicted_ms", [](const PredictionData& d) { return ms(d.prediction.predicted_total_ns); },
                             "Whole predicted run with the scenario, in ms.")
      .def_property_readonly("speedup", [](const PredictionData& d) { return d.prediction.speedup(); },
                             "baseline_ms / predicted_ms (above 1: faster).")
      .def_property_readonly("critical_path", [](const PredictionData& d) { return critical_path_dict(d.prediction.critical_path); },
                             "The predicted run's critical path inside the iterations: {length_ms, dominant, "
                             "by_category_ms {category: ms}, by_layer_ms [(layer, ms), ...] longest first}.")
      .def_property_readonly("notes", [](const PredictionData& d) { return d.prediction.notes; },
                             "What the scenario reported (fitted constants, tasks changed), as a list of str.")
      .def_property_readonly("gpu", [](const PredictionData& d) { return d.prediction.gpu; },
                             "The GPU the prediction runs on, as its graph records it (the gpu scenario's target, "
                             "else the trace's GPU; \"\" when the trace records none).")
      .def_property_readonly("gpu_memory_bytes", [](const PredictionData& d) { return d.prediction.gpu_memory_bytes; },
                             "That GPU's memory in bytes (0 if unknown).")
      .def_property_readonly("gpus", [](const PredictionData& d) { return d.prediction.gpus; },
                             "GPUs of the predicted job: its world size (1 when the trace records none).")
      .def_property_readonly("graph", [](const PredictionData& d) { return d.graph ? py::cast(d.graph) : py::none(); },
                             "The changed graph (a Graph of its own), or None for a sweep row.")
      .def_property_readonly("result", [](PredictionData& d) { return d.result.get(); },
                             "The changed graph's simulation (a Result; its schedule is the scenario spec), or None.")
      .def_property_readonly("baseline_result", [](PredictionData& d) { return d.baseline_result.get(); },
                             "The unchanged graph's simulation (a Result on a copy of the graph), or None.")
      .def("to_dict", [](const PredictionData& d) {
             return py::module_::import("json").attr("loads")(to_json(d.prediction, d.trace_path));
           }, "The dict that `daydream predict --json` prints (trace, scenario, iterations, total, median, "
              "speedup, critical_path, notes).")
      .def("__repr__", &prediction_repr, "Scenario, median times, speedup and the critical path's main category.");

  py::class_<PredictorData>(m, "_Predictor",
      "Internal: a copy of a graph and its baseline simulation, shared by the scenarios of one sweep.")
      .def(py::init(&make_predictor), py::arg("graph"), "Copies the graph and simulates it (without the GIL).")
      .def("predict", &predict_with_graphs, py::arg("spec"),
           "One scenario, with the changed graph and both simulations.")
      .def("sweep", &sweep_specs, py::arg("specs"), py::arg("threads"), py::arg("progress"),
           "[(Prediction or None, error or None)] per spec (no grids), in parallel on `threads` (0: all cores).")
      .def("evaluate", &evaluate_changed, py::arg("label"), py::arg("changed"),
           "Simulates a graph changed in Python and compares it with the baseline.")
      .def("baseline", [](const PredictorData& pd) {
             const Predictor& p = *pd.predictor;
             return PredictionData{p.compare("baseline", p.base(), p.baseline()), pd.trace_path, {}, {}, {}};
           }, "The baseline compared with itself (no simulation): its medians, critical path and GPU.")
      .def_property_readonly("baseline_ms", [](const PredictorData& pd) {
             const Predictor& p = *pd.predictor;
             return ms(p.baseline_median_ns());
           }, "Median simulated iteration time of the base graph, in ms.");

  m.def("scenarios", &scenario_list,
        "The registered scenarios, by name, as `daydream scenarios --json` lists them: [{name, summary, "
        "params: [{name, kind, default, min, max, min_exclusive, unit, description, auto}], help}]. Numbers "
        "are in canonical units (unit: bytes/s, bytes, ns or ''), whole ones as int; an unbounded min/max is "
        "None; a parameter the scenario works out itself has default 'auto' and auto says from what (None "
        "otherwise).");
  m.def("describe", [](const std::string& name) { return describe_scenario(builtin_scenarios().find(name)); }, py::arg("name"),
        "Help for one scenario: summary, parameters with units, ranges and defaults. daydream.Error for an "
        "unknown name (the message lists the valid ones).");
  m.def("predict", [](const GraphPtr& graph, const std::string& spec) { return predict_with_graphs(make_predictor(graph), spec); },
        py::arg("graph"), py::arg("spec"),
        "Applies a scenario (\"name\" or \"name:key=value,...\") to a copy of the graph, simulates both and "
        "returns a Prediction. The graph is not changed. Runs without the GIL; daydream.Error for an unknown "
        "scenario or parameter, a value out of range, or a graph the scenario cannot apply to.");
  m.def("_validate", &validate_json, py::arg("before"), py::arg("after"), py::arg("spec"),
        "Internal (daydream.validate): predicts spec from `before` and compares it with the iterations `after` "
        "measured; returns the JSON of `daydream validate --json`.");
  m.def("apply_scenario", &apply_in_place, py::arg("graph"), py::arg("spec"),
        "Applies a scenario to the graph in place (to combine it with your own changes) and returns its notes. "
        "A scenario that also picks a schedule warns: Graph.simulate() keeps trace order.");
  m.attr("MAX_SPECS") = kDefaultMaxSweepSpecs;
  m.def("_expand_grid", [](const std::string& text, std::size_t max_specs) {
          std::vector<std::string> out;
          for (const auto& spec : expand_scenario_grid(text, max_specs)) {
            resolve_params(builtin_scenarios().find(spec.name), spec);  // Error now, before any work
            out.push_back(spec.text());
          }
          return out;
        }, py::arg("spec"), py::arg("max_specs"),
        "Internal: the spec of every combination of a grid (first key slowest), each checked against its "
        "scenario's parameters; daydream.Error past max_specs combinations.");
  m.def("_parameter_table", &parameter_columns, py::arg("specs"), py::arg("reserved"),
        "Internal: (columns, rows) of a sweep's parameter columns (daydream::parameter_table): canonical numbers "
        "(int for integer parameters), texts, None where a spec does not give the parameter or gives auto.");
  m.def("write_timeline", &write_timeline, py::arg("path"), py::arg("timelines"), py::kw_only(),
        py::arg("align") = true,
        "Writes simulations as one Chrome trace JSON file, gzip-compressed when path ends in .gz (open it in "
        "https://ui.perfetto.dev or chrome://tracing): timelines is {label: Result or (Graph, Result)}, one process "
        "per label with an iterations track, a critical-path track and one thread per unit; CPU operators nest as "
        "in the trace, flow arrows join launches to their GPU tasks. align: shift each iteration so that iteration k "
        "starts at the same time in every timeline (when they have the same number of iterations).");
}

}  // namespace daydream::python
