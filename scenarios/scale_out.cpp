// scale_out: a multi-rank job graph replicated to `ranks` ranks (rank r copies traced rank r mod
// n), collectives re-costed for n ranks with the fitted model; past `gpus_per_machine` ranks a
// collective also crosses the `inter` link (the ring is as fast as its slowest link).
// docs/scenarios/scale_out.md.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "builtin.hpp"
#include "job_link.hpp"

namespace daydream::scenarios {
namespace {

ScenarioOutcome apply_scale_out(Graph& graph, const ScenarioParams& params) {
  const JobLayout& traced = job_of(graph);
  ScenarioOutcome outcome;
  const auto fitted = fit_job(graph, traced, params, outcome.notes);
  const std::int64_t ranks = params.integer("ranks");
  const auto per_machine = params.given("gpus_per_machine") ? params.integer("gpus_per_machine") : traced.world_size;
  LinkModel wanted = wanted_link(params, fitted);
  if (ranks > per_machine) wanted.ns_per_byte = std::max(wanted.ns_per_byte, ns_per_byte(params.number("inter")));
  const auto traced_ranks = static_cast<std::int64_t>(traced.ranks.size());  // `traced` dies with the old graph
  graph = replicate_ranks(graph, ranks);
  recost(graph, *graph.job(), fitted, wanted, ranks, outcome.notes);
  outcome.notes.push_back(fmt::format("{} ranks: {} traced, {} replicated ({} machines of {} GPUs)", ranks,
                                      traced_ranks, ranks - traced_ranks, (ranks + per_machine - 1) / per_machine,
                                      per_machine));
  return outcome;
}

}  // namespace

Scenario scale_out() {
  return {"scale_out",
          "multi-rank job replicated to more ranks (data parallel), collectives re-costed for them",
          {{"ranks", ParamKind::integer, 16, "ranks of the grown job (at least the traced ones)", 2, double(kMaxWorldSize)},
           ScenarioParam("gpus_per_machine", ParamKind::integer, 0, "GPUs per machine", 1, double(kMaxWorldSize))
               .automatic("the traced world size"),
           {"inter", ParamKind::bandwidth, 12.5e9, "link between machines (100 Gb Ethernet)", 0,
            std::numeric_limits<double>::infinity(), true},
           bandwidth_param("link within a machine"), latency_param()},
          apply_scale_out};
}

}  // namespace daydream::scenarios
