// What the data-parallel scenarios (ddp, p3) share: their parameters, the gradient sizes they
// take from a parameter file, a parameter count or the trace, and the ring model of the cluster
// they cost all-reduces on (the link model of daydream/model.hpp, fitted to the trace's own
// all-reduces where they explain it). docs/scenarios/ddp.md.
#include "data_parallel.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "daydream/error.hpp"

namespace daydream::scenarios {
namespace {

/// Per-parameter counts, in forward (model.parameters()) order, from
/// {"parameters": [{"name": "conv1.weight", "count": 9408}, ...]}.
std::vector<std::int64_t> read_param_file(const std::string& path) {
  const auto fail = [&](const std::string& problem) {
    return Error(
        fmt::format("param_file '{}': {} (expected {{\"parameters\": [{{\"name\": \"conv1.weight\", "
                    "\"count\": 9408}}, ...]}} in forward order)",
                    path, problem));
  };
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (const auto error = parser.load(path).get(doc)) throw fail(simdjson::error_message(error));
  simdjson::dom::array list;
  if (doc["parameters"].get(list)) throw fail("no \"parameters\" array");
  std::vector<std::int64_t> counts;
  for (simdjson::dom::element entry : list) {
    std::int64_t count = 0;
    if (entry["count"].get(count) || count < 0)
      throw fail(fmt::format("parameter #{} has no whole, non-negative \"count\"", counts.size()));
    counts.push_back(count);
  }
  if (counts.empty()) throw fail("the list is empty");
  return counts;
}

std::string proxies_text(const std::set<std::string>& proxies) {
  std::string text;
  for (const auto& p : proxies) text += (text.empty() ? "" : " / ") + p;
  return text;
}

std::string sizes_from_file(std::vector<BackwardPass>& passes, const ScenarioParams& params) {
  const std::string& path = params.text("param_file");
  const auto counts = read_param_file(path);
  const double per_param = params.number("bytes_per_param");
  for (BackwardPass& pass : passes) {
    const std::size_t n = pass.gradients.size();
    if (n == 0) continue;
    if (n != counts.size())
      throw Error(
          fmt::format("param_file '{}' lists {} parameters but the backward pass of iteration {} has {} "
                      "AccumulateGrad ranges",
                      path, counts.size(), pass.iteration, n));
    for (std::size_t i = 0; i < n; ++i)  // gradients become ready in reverse forward order
      pass.gradients[i].bytes = std::llround(static_cast<double>(counts[n - 1 - i]) * per_param);
  }
  return fmt::format(
      "gradient sizes from param_file '{}' ({} parameters, matched to the AccumulateGrad ranges in "
      "reverse order)",
      path, counts.size());
}

}  // namespace

std::int64_t given_total_bytes(const ScenarioParams& params) {
  const double per_param = params.number("bytes_per_param");
  if (params.given("param_file")) {
    const auto counts = read_param_file(params.text("param_file"));
    return std::llround(static_cast<double>(std::accumulate(counts.begin(), counts.end(), std::int64_t{0})) *
                        per_param);
  }
  return params.given("params") ? std::llround(params.number("params") * per_param) : kNone;
}

std::string assign_sizes(const Graph& graph, std::vector<BackwardPass>& passes, const ScenarioParams& params) {
  if (params.given("param_file")) return sizes_from_file(passes, params);
  std::set<std::string> proxies;
  if (params.given("params")) {
    const auto total = std::llround(params.number("params") * params.number("bytes_per_param"));
    for (BackwardPass& pass : passes)
      if (!pass.gradients.empty()) proxies.insert(spread_over_gradients(graph, pass, total));
    return fmt::format("gradient sizes: params = {:g} x {:g} bytes spread in proportion to {}", params.number("params"),
                       params.number("bytes_per_param"), proxies_text(proxies));
  }
  const bool recorded = std::all_of(passes.begin(), passes.end(), [](const BackwardPass& p) {
    return p.gradients.empty() || p.recorded_allreduce_bytes > 0;
  });
  if (!recorded)
    throw Error(
        "the trace records no gradient sizes; give param_file (a JSON file of per-parameter counts) or params "
        "(the total parameter count, e.g. params=25.6e6 for ResNet-50)");
  for (BackwardPass& pass : passes)
    if (!pass.gradients.empty()) proxies.insert(spread_over_gradients(graph, pass, pass.recorded_allreduce_bytes));
  return fmt::format(
      "gradient sizes: each pass's all_reduce sizes recorded in the trace (record_param_comms), spread "
      "in proportion to {}",
      proxies_text(proxies));
}

// --- what ddp and p3 share ---

std::vector<ScenarioParam> data_parallel_params() {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr double kMinLink = 1e3;  // bytes/s: slower links would overflow the ns clock on large models
  const std::string kFitted = "the fit to the trace's all-reduces (where R^2 >= 0.5)";
  auto param_file = ScenarioParam::text("param_file", "",
                                        "JSON file of per-parameter counts in forward order: {\"parameters\": "
                                        "[{\"name\": \"conv1.weight\", \"count\": 9408}, ...]}");
  return {
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
      ScenarioParam("params", ParamKind::number, 0,
                    "total parameter count, when the trace records no gradient sizes (e.g. 25.6e6 for ResNet-50)", 0,
                    1e13, true)
          .automatic("the gradient sizes the trace records (record_param_comms)"),
      ScenarioParam("bytes_per_param", ParamKind::number, 4, "bytes per gradient element (4 = fp32, 2 = fp16)", 0, 64, true),
      param_file,
  };
}

std::int64_t ranks_of(const ScenarioParams& params) { return params.integer("machines") * params.integer("gpus"); }

std::string format_bytes(double bytes) { return fmt::format("{:.2f} MB", bytes / 1e6); }

namespace {

std::string bandwidth_text(double ns_per_byte) {
  return ns_per_byte > 0 ? fmt::format("{:.3g} GB/s", 1.0 / ns_per_byte) : std::string("infinite");
}

/// A fit explaining less of the variance of the traced times than this is not used.
constexpr double kMinRSquared = 0.5;

/// The fit of the ring model to the trace's all-reduces of known size, when it explains them;
/// notes say what was fitted and whether it is used.
std::optional<LinkFit> fit_trace(const TraceCollectives& collectives, std::vector<std::string>& notes) {
  std::vector<MeasuredCollective> samples;
  std::size_t unsized = 0;
  for (const auto& c : collectives.list) {
    if (!c.allreduce || c.tasks.empty()) continue;
    if (c.bytes == kNone)
      ++unsized;
    else
      samples.push_back({c.bytes, c.tasks_ns});
  }
  if (unsized > 0) notes.push_back(fmt::format("{} traced all-reduces record no size: left out of the fit", unsized));
  if (samples.empty()) return std::nullopt;
  const auto fit = fit_ring(samples, collectives.world_size);
  if (!fit) {
    notes.push_back(
        fmt::format("no fit: the trace's {} all-reduces of known size have fewer than 2 distinct sizes or "
                    "the world size ({}) is under 2",
                    samples.size(), collectives.world_size));
    return std::nullopt;
  }
  notes.push_back(
      fmt::format("fit to the trace's {} all-reduces ({} sizes, n = {}): latency {:.1f} us, bandwidth {}, "
                  "rms residual {:.1f} us, R^2 {:.2f}",
                  fit->samples, fit->distinct_sizes, collectives.world_size, fit->link.latency_ns / 1e3,
                  bandwidth_text(fit->link.ns_per_byte), fit->rms_residual_ns / 1e3, fit->r_squared));
  if (fit->r_squared >= kMinRSquared && fit->link.latency_ns >= 0 && fit->link.ns_per_byte > 0) return fit;
  notes.push_back(
      fmt::format("fit not used (needs R^2 >= {} and positive latency and bandwidth): the traced "
                  "all-reduce times are not explained by their sizes (NCCL kernels also wait for the "
                  "slowest rank)",
                  kMinRSquared));
  return std::nullopt;
}

}  // namespace

RingCost cluster_cost(const ScenarioParams& params, const TraceCollectives& collectives,
                      std::vector<std::string>& notes) {
  RingCost cost;
  cost.ranks = ranks_of(params);
  const bool one_machine = params.integer("machines") == 1;
  const std::string link = params.given("bandwidth") ? "bandwidth" : one_machine ? "intra" : "inter";
  const double bytes_per_s = params.number(link);
  cost.link.ns_per_byte = ns_per_byte(bytes_per_s);
  cost.link.latency_ns = params.number("latency");
  std::string latency_source = params.given("latency") ? "given" : "default";
  std::string link_source = (params.given(link) ? "given " : "default ") + link;
  if (const auto fit = fit_trace(collectives, notes)) {
    if (!params.given("latency")) cost.link.latency_ns = fit->link.latency_ns, latency_source = "fitted";
    if (!params.given(link)) cost.link.ns_per_byte = fit->link.ns_per_byte, link_source = "fitted";
  }
  notes.push_back(fmt::format("ring all-reduce over n = {} GPUs ({} x {}): latency {:.1f} us ({}), bandwidth {} ({})",
                              cost.ranks, params.integer("machines"), params.integer("gpus"), cost.link.latency_ns / 1e3,
                              latency_source, bandwidth_text(cost.link.ns_per_byte), link_source));
  return cost;
}

namespace {

/// The bandwidth at which latency + ns_per_byte * traffic adds up to the measured durations of
/// the all-reduces in `bytes`; 0 (an infinite link) when nothing is left after the latencies.
double measured_ns_per_byte(const Graph& graph, const std::map<TaskId, std::int64_t>& bytes, const RingCost& cost) {
  double busy_ns = 0, traffic = 0;
  for (const auto& [task, size] : bytes) {
    busy_ns += static_cast<double>(graph.task(task).duration_ns) - cost.link.latency_ns;
    traffic += ring_traffic_bytes(cost.ranks, static_cast<double>(size));
  }
  return traffic > 0 && busy_ns > 0 ? busy_ns / traffic : 0;
}

}  // namespace

RingCost traced_cluster_cost(const Graph& graph, const TraceCollectives& collectives,
                             const std::map<TaskId, std::int64_t>& bytes, const ScenarioParams& params,
                             std::vector<std::string>& notes) {
  RingCost cost;
  const bool known_ranks = collectives.world_size >= 2;
  cost.ranks = known_ranks ? collectives.world_size : 2;
  cost.link.latency_ns = params.number("latency");
  const std::string ranks_text =
      known_ranks ? fmt::format("n = {} (the trace's world size)", cost.ranks)
                  : std::string("n unknown (the trace has no world size; its 2(n-1)/n cancels out)");
  if (const auto fit = fit_trace(collectives, notes)) {
    if (!params.given("latency")) cost.link.latency_ns = fit->link.latency_ns;
    cost.link.ns_per_byte = fit->link.ns_per_byte;
    notes.push_back(fmt::format("merged all-reduces on the traced cluster, {}: latency {:.1f} us, bandwidth {} (fitted)",
                                ranks_text, cost.link.latency_ns / 1e3, bandwidth_text(cost.link.ns_per_byte)));
    return cost;
  }
  cost.link.ns_per_byte = measured_ns_per_byte(graph, bytes, cost);
  notes.push_back(fmt::format(
      "merged all-reduces on the traced cluster, {}: latency {:.1f} us ({}), bandwidth {} (from the measured "
      "durations of the {} traced all-reduces of known size: their time beyond the latency over their traffic; "
      "no fit, their sizes are not recorded or do not explain their times)",
      ranks_text, cost.link.latency_ns / 1e3, params.given("latency") ? "given" : "default", bandwidth_text(cost.link.ns_per_byte),
      bytes.size()));
  return cost;
}

}  // namespace daydream::scenarios
