// faster_gpu: what if the GPU were `factor` times faster? Every GPU task of the chosen kind
// (kernels by default; copies, memsets, or all three) takes duration / factor. CPU work, launch
// latencies, stream gaps and collectives keep their recorded times (collectives are the
// network's: see faster_network).
//
// faster_network: what if communication were faster? Every communication task (collectives:
// NCCL kernels, or tasks a scenario inserted on a channel) takes duration / factor; or, with
// `bandwidth` given, bytes / bandwidth for each one whose size the trace records (Task::bytes).
// docs/scenarios/faster_gpu.md and faster_network.md.
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include "builtin.hpp"
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

// bytes / bandwidth for every communication task with a known size; the others keep theirs.
ScenarioOutcome apply_network_bandwidth(Graph& graph, double bytes_per_s) {
  auto comms = graph.select(TaskFilter().kind(TaskKind::communication));
  std::size_t sized = 0;
  for (TaskId t : comms) {
    const std::int64_t bytes = graph.task(t).bytes;
    if (bytes == kNone || bytes < 0) continue;
    graph.set_duration(t, transfer_ns(static_cast<double>(bytes), bytes_per_s));
    ++sized;
  }
  if (sized == 0)
    throw Error(fmt::format("parameter 'bandwidth' needs communication tasks with a known size "
                            "(bytes), and none of the trace's {} has one; use 'factor' instead",
                            comms.size()));
  ScenarioOutcome outcome;
  outcome.notes.push_back(fmt::format("{} communication tasks set to bytes / {:g} GB/s; {} without a recorded size kept "
                                      "their duration",
                                      sized, bytes_per_s / 1e9, comms.size() - sized));
  return outcome;
}

ScenarioOutcome apply_faster_network(Graph& graph, const ScenarioParams& params) {
  if (params.given("bandwidth") && params.given("factor"))
    throw Error("give either 'factor' or 'bandwidth', not both");
  if (params.given("bandwidth")) return apply_network_bandwidth(graph, params.number("bandwidth"));
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
                                 "instead of factor: communication task = bytes / bandwidth (tasks with a known size)",
                                 0, std::numeric_limits<double>::infinity(), true)
                       .automatic("none: factor applies");
  return {"faster_network", "faster communication: collective durations divided by factor (or bytes / bandwidth)",
          {factor_param("speed-up of every communication task (duration / factor)"), bandwidth}, apply_faster_network};
}

}  // namespace daydream::scenarios
