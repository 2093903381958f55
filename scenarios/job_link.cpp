// What the job scenarios (network, scale_out, rank_speed) share: the job graph they need, the
// alpha-beta link fitted to its own collectives (daydream/model.hpp), the link a spec asks for and
// the re-costing of every matched collective. docs/scenarios/network.md.
#include "job_link.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/checked.hpp"
#include "common/text.hpp"
#include "daydream/error.hpp"

namespace daydream::scenarios {

const JobLayout& job_of(const Graph& graph) {
  const JobLayout* job = graph.job();
  if (!job || job->collectives.empty())
    throw Error("needs a multi-rank job graph with matched collectives (load every rank's trace: `daydream predict "
                "DIR ...`, daydream.load([rank0, rank1, ...])); on one trace use faster_network or ddp");
  return *job;
}

namespace {

TimeNs median_transfer(const Graph& graph, const MatchedCollective& c) {
  std::vector<TimeNs> durations;
  for (TaskId t : c.transfers) durations.push_back(graph.task(t).duration_ns);
  return text::median(std::move(durations), text::EvenCount::upper);
}

}  // namespace

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
      graph.set_duration(t, checked::task_duration(std::max(0.0, double(base) + delta), [&] {
                           return fmt::format("collective {} #{}", c.name, c.sequence);
                         }));
    }
  }
  notes.push_back(fmt::format("{} collectives re-costed: latency {:.1f} us, bandwidth {:.2f} GB/s{}", job.collectives.size(),
                              wanted.latency_ns / 1e3, wanted.ns_per_byte > 0 ? 1.0 / wanted.ns_per_byte : INFINITY,  // bytes/ns = GB/s
                              unsized ? fmt::format(" ({} of unknown size: latency only)", unsized) : ""));
}

LinkModel wanted_link(const ScenarioParams& params, const std::optional<LinkModel>& fitted) {
  LinkModel wanted = fitted.value_or(LinkModel{});
  if (params.given("latency")) wanted.latency_ns = params.number("latency");
  if (params.given("bandwidth")) wanted.ns_per_byte = ns_per_byte(params.number("bandwidth"));
  return wanted;
}

namespace {

constexpr const char* kFitted = "fitted to the job's collectives";

}  // namespace

ScenarioParam latency_param() {
  return ScenarioParam("latency", ParamKind::duration, 0, "fixed cost of one collective", 0).automatic(kFitted);
}

ScenarioParam bandwidth_param(const char* description) {
  return ScenarioParam("bandwidth", ParamKind::bandwidth, 0, description, 0, std::numeric_limits<double>::infinity(),
                       true)
      .automatic(kFitted);
}

}  // namespace daydream::scenarios
