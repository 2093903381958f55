// The ring all-reduce cost of the data-parallel scenarios (ddp, p3): the link model of
// daydream/model.hpp for the requested cluster or the traced one, fitted to the trace's own
// all-reduces where the fit explains them (docs/scenarios/ddp.md, "Model").
#include <fmt/format.h>

#include "common/text.hpp"
#include "data_parallel.hpp"

namespace daydream::scenarios {

std::optional<LinkFit> usable_fit(const TraceCollectives& collectives, std::vector<std::string>& notes) {
  const TracedRingFit traced = fit_traced_allreduces(collectives);
  if (traced.unsized > 0)
    notes.push_back(fmt::format("{} traced all-reduces record no size: left out of the fit", traced.unsized));
  const auto& fit = traced.fit;
  if (traced.sized > 0 && !fit)
    notes.push_back(fmt::format("no fit: the trace's {} all-reduces of known size have fewer than 2 distinct sizes or "
                                "the world size ({}) is under 2", traced.sized, collectives.world_size));
  if (!fit) return std::nullopt;
  notes.push_back(fmt::format("fit to the trace's {} all-reduces ({} sizes, n = {}): latency {:.1f} us, bandwidth {}, "
                              "rms residual {:.1f} us, R^2 {:.2f}", fit->samples, fit->distinct_sizes,
                              collectives.world_size, fit->link.latency_ns / 1e3,
                              text::bandwidth_text(fit->link.ns_per_byte), fit->rms_residual_ns / 1e3, fit->r_squared));
  if (fit->usable()) return fit;
  notes.push_back(fmt::format("fit not used (needs R^2 >= {} and positive latency and bandwidth): the traced "
                              "all-reduce times are not explained by their sizes (NCCL kernels also wait for the "
                              "slowest rank)", kMinFitRSquared));
  return std::nullopt;
}

RingCost cluster_cost(const ScenarioParams& params, const TraceCollectives& collectives,
                      std::vector<std::string>& notes) {
  const std::string link = params.given("bandwidth")            ? "bandwidth"
                           : params.integer("machines") == 1 ? "intra"
                                                             : "inter";
  RingCost cost{{params.number("latency"), ns_per_byte(params.number(link))}, ranks_of(params)};
  std::string latency_source = params.given("latency") ? "given" : "default";
  std::string link_source = (params.given(link) ? "given " : "default ") + link;
  if (const auto fit = usable_fit(collectives, notes)) {
    if (!params.given("latency")) cost.link.latency_ns = fit->link.latency_ns, latency_source = "fitted";
    if (!params.given(link)) cost.link.ns_per_byte = fit->link.ns_per_byte, link_source = "fitted";
  }
  notes.push_back(fmt::format("ring all-reduce over n = {} GPUs ({} x {}): latency {:.1f} us ({}), bandwidth {} ({})",
                              cost.ranks, params.integer("machines"), params.integer("gpus"), cost.link.latency_ns / 1e3,
                              latency_source, text::bandwidth_text(cost.link.ns_per_byte), link_source));
  return cost;
}

void time_ring_messages(Graph& graph, const ScenarioParams& params, const RingMessages& ring,
                        std::vector<std::string>& notes) {
  notes.insert(notes.end(), ring.notes_before.begin(), ring.notes_before.end());
  if (!ring.costed) return;
  const RingCost cost = cluster_cost(params, ring.collectives, notes);
  for (const auto& [task, bytes] : ring.messages) graph.set_duration(task, cost.allreduce_ns(bytes));
  notes.insert(notes.end(), ring.notes_after.begin(), ring.notes_after.end());
}

RingCost traced_cluster_cost(const Graph& graph, const TraceCollectives& collectives,
                             const std::map<TaskId, std::int64_t>& bytes, const ScenarioParams& params,
                             std::vector<std::string>& notes) {
  const auto fit = usable_fit(collectives, notes);
  RingCost cost{{params.number("latency"), 0}, traced_ring_ranks(collectives)};
  if (fit && !params.given("latency")) cost.link.latency_ns = fit->link.latency_ns;
  cost.link.ns_per_byte =
      fit ? fit->link.ns_per_byte : measured_ns_per_byte(graph, bytes, cost.ranks, cost.link.latency_ns);
  const std::string ranks = collectives.world_size >= 2
                                ? fmt::format("n = {} (the trace's world size)", cost.ranks)
                                : "n unknown (the trace has no world size; its 2(n-1)/n cancels out)";
  const std::string on =
      fmt::format("merged all-reduces on the traced cluster, {}: latency {:.1f} us", ranks, cost.link.latency_ns / 1e3);
  const std::string bandwidth = text::bandwidth_text(cost.link.ns_per_byte);
  notes.push_back(fit ? fmt::format("{}, bandwidth {} (fitted)", on, bandwidth) : fmt::format(
      "{} ({}), bandwidth {} (from the measured durations of the {} traced all-reduces of known size: their time "
      "beyond the latency over their traffic; no fit, their sizes are not recorded or do not explain their times)",
      on, params.given("latency") ? "given" : "default", bandwidth, bytes.size()));
  return cost;
}

}  // namespace daydream::scenarios
