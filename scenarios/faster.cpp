// faster_gpu: what if the GPU were `factor` times faster? Every GPU task of the chosen kind
// (kernels by default; copies, memsets, or all three) takes duration / factor. CPU work, launch
// latencies, stream gaps and collectives keep their recorded times (collectives are the
// network's: see faster_network).
//
// faster_network: what if communication were faster? Every communication task (collectives:
// NCCL kernels, or tasks a scenario inserted on a channel) takes duration / factor; or, with
// `bandwidth` given, bytes / bandwidth for each one of known size: its own (Task::bytes), else
// the size ddp gives a traced all-reduce (its record_param_comms range's bytes, or the model's
// gradient bytes from params / param_file spread over each iteration's all-reduces).
// docs/scenarios/faster_gpu.md and faster_network.md.
#include <fmt/format.h>

#include <array>
#include <map>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include "builtin.hpp"
#include "data_parallel.hpp"
#include "daydream/model.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

ScenarioParam factor_param(std::string description) {
  return {"factor", ParamKind::number, 2, std::move(description), 0, std::numeric_limits<double>::infinity(), true};
}

// The task kinds a `kind` word of faster_gpu selects.
std::vector<TaskKind> gpu_kinds(std::string_view word) {
  static constexpr std::array<std::pair<std::string_view, TaskKind>, 3> single = {
      {{"kernel", TaskKind::kernel}, {"memcpy", TaskKind::memcpy}, {"memset", TaskKind::memset}}};
  if (word == "all") return {TaskKind::kernel, TaskKind::memcpy, TaskKind::memset};
  for (const auto& [name, kind] : single)
    if (word == name) return {kind};
  throw Error(fmt::format("parameter 'kind' = '{}' is not a GPU task kind (valid: kernel, "
                          "memcpy, memset, all)",
                          word));
}

ScenarioOutcome apply_faster_gpu(Graph& graph, const ScenarioParams& params) {
  const double factor = params.number("factor");
  const std::string& kind = params.text("kind");
  TaskFilter filter;
  for (TaskKind k : gpu_kinds(kind)) filter.kind(k);
  auto tasks = graph.select(filter);
  const TimeNs before = tasks.total_duration_ns();
  tasks.scale(1.0 / factor);
  ScenarioOutcome outcome;
  outcome.notes.push_back(fmt::format("{} GPU tasks ({}) scaled by 1/{:g}: {:.3f} ms -> {:.3f} ms of GPU time", tasks.size(),
                                      kind, factor, static_cast<double>(before) / 1e6,
                                      static_cast<double>(tasks.total_duration_ns()) / 1e6));
  return outcome;
}

/// Each communication task's size: its own (Task::bytes), else the size ddp gives a traced
/// all-reduce (traced_allreduce_sizes). `from_trace` counts the second kind.
std::map<TaskId, std::int64_t> communication_sizes(const Graph& graph, const TaskSet& comms, const ScenarioParams& params,
                                                   std::size_t& from_trace) {
  std::map<TaskId, std::int64_t> sizes;
  for (TaskId t : comms)
    if (graph.task(t).bytes != kNone && graph.task(t).bytes >= 0) sizes[t] = graph.task(t).bytes;
  const TracedAllreduceSizes traced = traced_allreduce_sizes(graph, read_trace_collectives(graph), given_total_bytes(params));
  from_trace = 0;
  for (const auto& [task, bytes] : traced.bytes)
    if (sizes.emplace(task, bytes).second) ++from_trace;
  return sizes;
}

// bytes / bandwidth for every communication task of known size; the others keep theirs.
ScenarioOutcome apply_network_bandwidth(Graph& graph, const ScenarioParams& params) {
  const double bytes_per_s = params.number("bandwidth");
  auto comms = graph.select(TaskFilter().kind(TaskKind::communication));
  if (comms.empty())
    throw Error("parameter 'bandwidth' needs communication tasks, and the trace has none (no NCCL kernel, no inserted "
                "collective)");
  std::size_t from_trace = 0;
  const auto sizes = communication_sizes(graph, comms, params, from_trace);
  if (sizes.empty())
    throw Error(fmt::format("parameter 'bandwidth' needs communication tasks of known size, and none of the trace's "
                            "{} has one (no recorded bytes, no record_param_comms size); give params or param_file "
                            "(the model's gradient size), or use 'factor' instead",
                            comms.size()));
  for (const auto& [task, bytes] : sizes) graph.set_duration(task, transfer_ns(static_cast<double>(bytes), bytes_per_s));
  ScenarioOutcome outcome;
  outcome.notes.push_back(fmt::format("{} communication tasks set to bytes / {:g} GB/s ({} sized as ddp sizes the "
                                      "trace's all-reduces); {} of unknown size kept their duration",
                                      sizes.size(), bytes_per_s / 1e9, from_trace, comms.size() - sizes.size()));
  return outcome;
}

ScenarioOutcome apply_faster_network(Graph& graph, const ScenarioParams& params) {
  if (params.given("bandwidth") && params.given("factor"))
    throw Error("give either 'factor' or 'bandwidth', not both");
  if (params.given("bandwidth")) return apply_network_bandwidth(graph, params);
  const double factor = params.number("factor");
  auto comms = graph.select(TaskFilter().kind(TaskKind::communication));
  ScenarioOutcome outcome;
  if (comms.empty()) {
    outcome.notes.push_back("no communication tasks in the graph: nothing changed");
    return outcome;
  }
  comms.scale(1.0 / factor);
  outcome.notes.push_back(fmt::format("{} communication tasks scaled by 1/{:g}", comms.size(), factor));
  return outcome;
}

}  // namespace

Scenario faster_gpu() {
  return {"faster_gpu", "a GPU `factor` times faster: GPU task durations divided by factor",
          {factor_param("speed-up of the chosen GPU tasks (duration / factor)"),
           ScenarioParam::text("kind", "kernel", "which GPU tasks get faster: kernel, memcpy, memset or all (the three)")},
          apply_faster_gpu};
}

Scenario faster_network() {
  auto bandwidth = ScenarioParam("bandwidth", ParamKind::bandwidth, 0,
                                 "instead of factor: communication task = bytes / bandwidth (tasks of known size)",
                                 0, std::numeric_limits<double>::infinity(), true)
                       .automatic("none: factor applies");
  std::vector<ScenarioParam> params = {factor_param("speed-up of every communication task (duration / factor)"),
                                       bandwidth};
  for (ScenarioParam& p : model_size_params()) params.push_back(std::move(p));  // sizes for bandwidth, as ddp's
  return {"faster_network", "faster communication: collective durations divided by factor (or bytes / bandwidth)",
          std::move(params), apply_faster_network};
}

}  // namespace daydream::scenarios
