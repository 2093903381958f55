// network: on a multi-rank job graph (daydream::load_job), every matched collective re-costed with
// the alpha-beta model fitted to the job's own collectives: transfer + (alpha' + beta' * traffic)
// - (alpha + beta * traffic), where traffic is what one participant moves
// (collective_traffic_bytes) and alpha', beta' come from `latency` and `bandwidth` (the fitted
// values where not given). docs/scenarios/network.md.
#include "builtin.hpp"
#include "job_link.hpp"

namespace daydream::scenarios {
namespace {

ScenarioOutcome apply_network(Graph& graph, const ScenarioParams& params) {
  const JobLayout& job = job_of(graph);
  ScenarioOutcome outcome;
  const auto fitted = fit_job(graph, job, params, outcome.notes);
  recost(graph, job, fitted, wanted_link(params, fitted), static_cast<std::int64_t>(job.ranks.size()), outcome.notes);
  return outcome;
}

}  // namespace

Scenario network() {
  return {"network",
          "multi-rank job: collectives re-costed with the alpha-beta model fitted to the job's own collectives",
          {bandwidth_param("link bandwidth"), latency_param()},
          apply_network};
}

}  // namespace daydream::scenarios
