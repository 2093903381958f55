// What-ifs on a multi-rank job graph (daydream::load_job; model in include/daydream/job.hpp):
//
// network: every matched collective re-costed with the alpha-beta model fitted to the job's own
// collectives: transfer + (alpha' + beta' * traffic) - (alpha + beta * traffic), where traffic is
// what one participant moves (collective_traffic_bytes) and alpha', beta' come from `latency` and
// `bandwidth` (the fitted values where not given).
// rank_speed: one rank's compute (GPU kernels, copies, memsets and CPU work) `factor` times as
// fast; by default the straggler of the baseline replay (the rank the others waited for longest).
// scale_out: the job replicated to `ranks` ranks (rank r copies traced rank r mod n), collectives
// re-costed for n ranks with the fitted model; past `gpus_per_machine` ranks a collective also
// crosses the `inter` link (the ring is as fast as its slowest link).
// docs/scenarios/network.md, rank_speed.md, scale_out.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "builtin.hpp"
#include "data_parallel.hpp"
#include "daydream/analyze.hpp"
#include "daydream/transform.hpp"
#include "common/text.hpp"
#include "daydream/error.hpp"
#include "daydream/job.hpp"
#include "daydream/simulate.hpp"

namespace daydream::scenarios {
namespace {

const JobLayout& job_of(const Graph& graph) {
  const JobLayout* job = graph.job();
  if (!job || job->collectives.empty())
    throw Error("needs a multi-rank job graph with matched collectives (load every rank's trace: `daydream predict "
                "DIR ...`, daydream.load([rank0, rank1, ...])); on one trace use faster_network or ddp");
  return *job;
}

TimeNs median_transfer(const Graph& graph, const MatchedCollective& c) {
  std::vector<TimeNs> durations;
  for (TaskId t : c.transfers) durations.push_back(graph.task(t).duration_ns);
  return text::median(std::move(durations), text::EvenCount::upper);
}

/// The fitted model, or nullopt when the job's collectives cannot be fitted and the spec gives
/// both latency and bandwidth (the transfers are then set to the model's cost outright).
std::optional<LinkModel> fit_job(const Graph& graph, const JobLayout& job, const ScenarioParams& params,
                                 std::vector<std::string>& notes) {
  std::vector<std::pair<double, TimeNs>> samples;
  for (const auto& c : job.collectives)
    if (c.bytes != kNone)
      samples.emplace_back(collective_traffic_bytes(c.name, static_cast<std::int64_t>(c.ranks.size()), double(c.bytes)),
                           median_transfer(graph, c));
  const auto fit = fit_link(samples);
  if (!fit || fit->link.ns_per_byte <= 0) {
    if (params.given("latency") && params.given("bandwidth")) {
      notes.push_back(fmt::format("no fit ({} collectives of known size): transfers set to latency + traffic / bandwidth",
                                  samples.size()));
      return std::nullopt;
    }
    throw Error(fmt::format("cannot fit latency and bandwidth to the job's {} collectives of known size (needs two "
                            "distinct sizes and a positive slope); give both latency and bandwidth",
                            samples.size()));
  }
  notes.push_back(fmt::format("fitted to {} collectives ({} sizes): latency {:.1f} us, bandwidth {:.2f} GB/s, R^2 {:.2f}",
                              fit->samples, fit->distinct_sizes, fit->link.latency_ns / 1e3, 1.0 / fit->link.ns_per_byte,
                              fit->r_squared));
  return LinkModel{std::max(0.0, fit->link.latency_ns), fit->link.ns_per_byte};
}

/// Moves every collective's transfers by new cost - traced cost, for `ranks` participants
/// (without a traced model: sets them to the new cost).
void recost(Graph& graph, const JobLayout& job, const std::optional<LinkModel>& traced, const LinkModel& wanted,
            std::int64_t ranks, std::vector<std::string>& notes) {
  std::size_t unsized = 0;
  for (const auto& c : job.collectives) {
    const auto traced_ranks = static_cast<std::int64_t>(job.ranks.size());
    const double before = c.bytes == kNone ? 0 : collective_traffic_bytes(c.name, traced_ranks, double(c.bytes));
    const double after = c.bytes == kNone ? 0 : collective_traffic_bytes(c.name, ranks, double(c.bytes));
    unsized += c.bytes == kNone;
    const double delta = wanted.cost_ns(after) - (traced ? traced->cost_ns(before) : 0.0);
    if (!std::isfinite(delta)) throw Error(fmt::format("collective {} #{}: cost is not finite", c.name, c.sequence));
    for (TaskId t : c.transfers) {
      const TimeNs base = traced ? graph.task(t).duration_ns : 0;
      graph.set_duration(t, std::max<TimeNs>(0, base + static_cast<TimeNs>(std::llround(delta))));
    }
  }
  notes.push_back(fmt::format("{} collectives re-costed: latency {:.1f} us, bandwidth {:.2f} GB/s{}", job.collectives.size(),
                              wanted.latency_ns / 1e3, wanted.ns_per_byte > 0 ? 1.0 / wanted.ns_per_byte : INFINITY  /* bytes/ns = GB/s */,
                              unsized ? fmt::format(" ({} of unknown size: latency only)", unsized) : ""));
}

LinkModel wanted_link(const ScenarioParams& params, const std::optional<LinkModel>& fitted) {
  LinkModel wanted = fitted.value_or(LinkModel{});
  if (params.given("latency")) wanted.latency_ns = params.number("latency");
  if (params.given("bandwidth")) wanted.ns_per_byte = ns_per_byte(params.number("bandwidth"));
  return wanted;
}

ScenarioOutcome apply_network(Graph& graph, const ScenarioParams& params) {
  const JobLayout& job = job_of(graph);
  ScenarioOutcome outcome;
  const auto fitted = fit_job(graph, job, params, outcome.notes);
  recost(graph, job, fitted, wanted_link(params, fitted), static_cast<std::int64_t>(job.ranks.size()), outcome.notes);
  return outcome;
}

bool is_compute(const Graph& graph, const Task& task) {
  return !task.removed && task.kind != TaskKind::communication && graph.units()[task.unit].kind != UnitKind::comm_channel;
}

ScenarioOutcome apply_rank_speed(Graph& graph, const ScenarioParams& params) {
  const JobLayout& job = job_of(graph);
  ScenarioOutcome outcome;
  std::int64_t rank = params.integer("rank");
  if (!params.given("rank")) {
    rank = make_job_report(graph, simulate(graph)).straggler;
    if (rank == kNone) throw Error("no rank held the others back; give 'rank'");
    outcome.notes.push_back(fmt::format("rank {} is the straggler of the baseline", rank));
  }
  const bool traced = std::any_of(job.ranks.begin(), job.ranks.end(), [&](const RankInfo& r) { return r.rank == rank; });
  if (!traced) throw Error(fmt::format("rank {} is not in the job", rank));
  const double factor = params.number("factor");
  TimeNs compute_ns = 0;  // before the change, for the note
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (!is_compute(graph, task) || graph.units()[task.unit].rank != rank) continue;
    compute_ns += task.duration_ns;
    graph.set_duration(t, static_cast<TimeNs>(std::llround(double(task.duration_ns) / factor)));
  }
  outcome.notes.push_back(fmt::format("rank {}'s compute ({:.3f} ms of GPU and CPU task time) {:g} times as fast", rank,
                                      double(compute_ns) / 1e6, factor));
  return outcome;
}

ScenarioOutcome apply_scale_out(Graph& graph, const ScenarioParams& params) {
  const JobLayout& traced = job_of(graph);
  ScenarioOutcome outcome;
  const auto fitted = fit_job(graph, traced, params, outcome.notes);
  const std::int64_t ranks = params.integer("ranks");
  const auto per_machine = params.given("gpus_per_machine") ? params.integer("gpus_per_machine") : traced.world_size;
  LinkModel wanted = wanted_link(params, fitted);
  if (ranks > per_machine) wanted.ns_per_byte = std::max(wanted.ns_per_byte, ns_per_byte(params.number("inter")));
  graph = replicate_ranks(graph, ranks);
  recost(graph, *graph.job(), fitted, wanted, ranks, outcome.notes);
  outcome.notes.push_back(fmt::format("{} ranks: {} traced, {} replicated ({} machines of {} GPUs)", ranks,
                                      traced.ranks.size(), ranks - static_cast<std::int64_t>(traced.ranks.size()),
                                      (ranks + per_machine - 1) / per_machine, per_machine));
  return outcome;
}

constexpr const char* kFitted = "fitted to the job's collectives";

ScenarioParam latency_param() {
  return ScenarioParam("latency", ParamKind::duration, 0, "fixed cost of one collective", 0).automatic(kFitted);
}

ScenarioParam bandwidth_param(const char* description) {
  return ScenarioParam("bandwidth", ParamKind::bandwidth, 0, description, 0, std::numeric_limits<double>::infinity(),
                       true)
      .automatic(kFitted);
}

}  // namespace

Scenario network() {
  return {"network",
          "multi-rank job: collectives re-costed with the alpha-beta model fitted to the job's own collectives",
          {bandwidth_param("link bandwidth"), latency_param()},
          apply_network};
}

Scenario rank_speed() {
  return {"rank_speed",
          "multi-rank job: one rank's compute (GPU and CPU) factor times as fast (straggler removal)",
          {ScenarioParam("rank", ParamKind::integer, -1, "the rank whose compute gets faster", 0)
               .automatic("the straggler of the baseline replay (the rank the others waited for longest)"),
           {"factor", ParamKind::number, 2, "speed-up of its compute", 0, std::numeric_limits<double>::infinity(), true}},
          apply_rank_speed};
}

Scenario scale_out() {
  return {"scale_out",
          "multi-rank job replicated to more ranks (data parallel), collectives re-costed for them",
          {{"ranks", ParamKind::integer, 16, "ranks of the grown job (at least the traced ones)", 2},
           ScenarioParam("gpus_per_machine", ParamKind::integer, 0, "GPUs per machine", 1).automatic("the traced world size"),
           {"inter", ParamKind::bandwidth, 12.5e9, "link between machines (100 Gb Ethernet)", 0,
            std::numeric_limits<double>::infinity(), true},
           bandwidth_param("link within a machine"), latency_param()},
          apply_scale_out};
}

}  // namespace daydream::scenarios
