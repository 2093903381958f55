#pragma once
// What the job scenarios (network, scale_out, rank_speed) share (job_link.cpp).
#include <optional>
#include <string>
#include <vector>

#include "daydream/job.hpp"
#include "daydream/model.hpp"
#include "daydream/scenario.hpp"

namespace daydream::scenarios {

/// The graph's job layout; throws Error when it is not a job graph with matched collectives.
const JobLayout& job_of(const Graph& graph);

/// The link model fitted to the job's collectives of known size (each one's median transfer over
/// its traffic), or nullopt when they cannot be fitted and the spec gives both latency and
/// bandwidth; otherwise such a job is an Error. Appends what it found to `notes`.
std::optional<LinkModel> fit_job(const Graph& graph, const JobLayout& job, const ScenarioParams& params,
                                 std::vector<std::string>& notes);

/// Moves every collective's transfers by new cost - traced cost, for `ranks` participants
/// (without a traced model: sets them to the new cost).
void recost(Graph& graph, const JobLayout& job, const std::optional<LinkModel>& traced, const LinkModel& wanted,
            std::int64_t ranks, std::vector<std::string>& notes);

/// The fitted link with the spec's latency and bandwidth where given.
LinkModel wanted_link(const ScenarioParams& params, const std::optional<LinkModel>& fitted);

/// `latency` and `bandwidth` parameters whose default is the fitted value.
ScenarioParam latency_param();
ScenarioParam bandwidth_param(const char* description);

}  // namespace daydream::scenarios
