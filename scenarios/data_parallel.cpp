// What the data-parallel scenarios (ddp, p3) share: their parameters, the backward passes, and the
// gradient sizes they take from a parameter file, a parameter count or the trace
// (docs/scenarios/ddp.md). The ring model they cost all-reduces with: ring_cost.cpp.
#include "data_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "daydream/error.hpp"

namespace daydream::scenarios {

std::vector<ScenarioParam> model_size_params() {
  return {
      ScenarioParam("params", ParamKind::number, 0,
                    "total parameter count, when the trace records no gradient sizes (e.g. 25.6e6 for ResNet-50)", 0,
                    1e13, true)
          .automatic("the gradient sizes the trace records (record_param_comms)"),
      ScenarioParam("bytes_per_param", ParamKind::number, 4, "bytes per gradient element (4 = fp32, 2 = fp16)", 0, 64, true),
      ScenarioParam::text("param_file", "",
                          "JSON file of per-parameter counts in forward order: {\"parameters\": "
                          "[{\"name\": \"conv1.weight\", \"count\": 9408}, ...]}"),
  };
}

std::vector<ScenarioParam> data_parallel_params() {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr double kMinLink = 1e3;  // bytes/s: slower links would overflow the ns clock on large models
  const std::string kFitted = "the fit to the trace's all-reduces (where R^2 >= 0.5)";
  std::vector<ScenarioParam> params = {
      ScenarioParam("machines", ParamKind::integer, 1, "machines (nodes) in the job", 1, 1e6),
      ScenarioParam("gpus", ParamKind::integer, 1, "GPUs per machine", 1, 1e6),
      ScenarioParam("intra", ParamKind::bandwidth, 100e9, "ring bandwidth between the GPUs of one machine (NVLink class)",
                    kMinLink, kInf)
          .automatic(kFitted + " on one machine, else 800Gbps"),
      ScenarioParam("inter", ParamKind::bandwidth, 10e9 / 8, "ring bandwidth between machines", kMinLink, kInf)
          .automatic(kFitted + " across machines, else 10Gbps (10 Gb Ethernet)"),
      ScenarioParam("bandwidth", ParamKind::bandwidth, 0, "the ring's bandwidth, overriding intra and inter", kMinLink,
                    kInf)
          .automatic("intra on one machine, inter across machines"),
      ScenarioParam("latency", ParamKind::duration, 20e3, "fixed cost of one all-reduce (ring start-up)", 0, 1e15)
          .automatic(kFitted + ", else 20us"),
      ScenarioParam("bucket", ParamKind::bytes, 25 * kMiB, "DDP bucket cap (bucket_cap_mb = 25)", 0, kInf, true),
      ScenarioParam("first_bucket", ParamKind::bytes, 1 * kMiB, "cap of DDP's first bucket", 0, kInf, true),
  };
  for (ScenarioParam& p : model_size_params()) params.push_back(std::move(p));
  return params;
}

std::int64_t ranks_of(const ScenarioParams& params) { return params.integer("machines") * params.integer("gpus"); }

void record_world_size(Graph& graph, const ScenarioParams& params) {
  if (ranks_of(params) > 1) graph.world_size = ranks_of(params);
}

std::int64_t given_total_bytes(const ScenarioParams& params) {
  const double per_param = params.number("bytes_per_param");
  if (params.given("param_file")) {
    const auto counts = read_parameter_counts(params.text("param_file"));
    return std::llround(static_cast<double>(std::accumulate(counts.begin(), counts.end(), std::int64_t{0})) *
                        per_param);
  }
  return params.given("params") ? std::llround(params.number("params") * per_param) : kNone;
}

std::vector<BackwardPass> backward_passes(const Graph& graph, const TraceCollectives& collectives,
                                          bool need_gradients) {
  auto passes = find_backward_passes(graph, collectives);
  if (need_gradients) std::erase_if(passes, [](const BackwardPass& p) { return p.gradients.empty(); });
  if (passes.empty())
    throw Error(fmt::format("the trace shows no backward pass: no AccumulateGrad range "
                            "(torch::autograd::AccumulateGrad) tells when gradients become ready{}",
                            need_gradients ? "" : ", and no all_reduce is recorded"));
  return passes;
}

NewTask backward_comm_task(std::string name, UnitId channel, TimeNs duration_ns, TaskId ready) {
  NewTask task;
  task.name = std::move(name);
  task.kind = TaskKind::communication;
  task.unit = channel;
  task.duration_ns = duration_ns;
  task.after = {ready};
  task.phase = Phase::backward;
  return task;
}

std::string assign_sizes(const Graph& graph, std::vector<BackwardPass>& passes, const ScenarioParams& params) {
  if (params.given("param_file")) {
    const std::string& path = params.text("param_file");
    const auto counts = read_parameter_counts(path);
    for (BackwardPass& pass : passes)
      if (!set_gradient_bytes(pass, counts, params.number("bytes_per_param")))
        throw Error(fmt::format("param_file '{}' lists {} parameters but the backward pass of iteration {} has {} "
                                "AccumulateGrad ranges", path, counts.size(), pass.iteration, pass.gradients.size()));
    return fmt::format("gradient sizes from param_file '{}' ({} parameters, matched to the AccumulateGrad ranges in "
                       "reverse order)", path, counts.size());
  }
  const std::int64_t total = given_total_bytes(params);  // params given, else each pass's recorded sizes
  if (total == kNone && !std::all_of(passes.begin(), passes.end(), [](const BackwardPass& p) {
        return p.gradients.empty() || p.recorded_allreduce_bytes > 0;
      }))
    throw Error("the trace records no gradient sizes; give param_file (a JSON file of per-parameter counts) or params "
                "(the total parameter count, e.g. params=25.6e6 for ResNet-50)");
  std::set<std::string> used;
  for (BackwardPass& pass : passes)
    if (!pass.gradients.empty())
      used.insert(spread_over_gradients(graph, pass, total != kNone ? total : pass.recorded_allreduce_bytes));
  std::string proxies;
  for (const auto& p : used) proxies += (proxies.empty() ? "" : " / ") + p;
  if (total != kNone)
    return fmt::format("gradient sizes: params = {:g} x {:g} bytes spread in proportion to {}", params.number("params"),
                       params.number("bytes_per_param"), proxies);
  return fmt::format("gradient sizes: each pass's all_reduce sizes recorded in the trace (record_param_comms), spread "
                     "in proportion to {}", proxies);
}

}  // namespace daydream::scenarios
