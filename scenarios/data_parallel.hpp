#pragma once
// What the data-parallel scenarios (ddp, p3) share: their parameters, gradient sizes, and the ring
// model of the cluster (docs/scenarios/ddp.md).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "daydream/analyze.hpp"
#include "daydream/model.hpp"
#include "daydream/scenario.hpp"

namespace daydream::scenarios {

/// Sets every Gradient::bytes from, in this order: the param_file parameter, the params
/// parameter, or the trace's recorded all_reduce sizes of each pass (spread over the gradients by
/// a proxy). Throws Error naming both parameters when none is available. Returns a note saying
/// which source (and proxy) was used.
std::string assign_sizes(const Graph& graph, std::vector<BackwardPass>& passes, const ScenarioParams& params);

/// The model's gradient bytes from param_file or params (times bytes_per_param), kNone when
/// neither is given.
std::int64_t given_total_bytes(const ScenarioParams& params);

/// machines, gpus, intra, inter, latency, bucket, first_bucket, params, bytes_per_param, param_file.
std::vector<ScenarioParam> data_parallel_params();

/// n = machines * gpus.
std::int64_t ranks_of(const ScenarioParams& params);

/// The cost model for the requested cluster: the link is `intra` on one machine and `inter`
/// across machines (a flat ring is as fast as its slowest link). Where the trace holds
/// all-reduces of known size, their least-squares fit replaces the defaults of latency and
/// bandwidth that were not given. Appends what it used to `notes`.
RingCost cluster_cost(const ScenarioParams& params, const TraceCollectives& collectives,
                      std::vector<std::string>& notes);

/// The ring model for the cluster the trace ran on, to cost all-reduces the trace does not have
/// (merged buckets): the fit to the trace's all-reduces of recorded size where it explains them;
/// otherwise `latency` (given, or its default) and the bandwidth at which the model's times add
/// up to the measured times of the traced all-reduces of known size (`bytes`, recorded or
/// spread): ns_per_byte = sum(duration - latency) / sum(traffic). n is the trace's world size
/// (2 when the trace does not say: the traffic factor 2(n-1)/n then cancels between the
/// measured bandwidth and the costed all-reduces). Appends what it used to `notes`.
RingCost traced_cluster_cost(const Graph& graph, const TraceCollectives& collectives,
                             const std::map<TaskId, std::int64_t>& bytes, const ScenarioParams& params,
                             std::vector<std::string>& notes);

/// "25.2 MB" style size for task names and notes.
std::string format_bytes(double bytes);

}  // namespace daydream::scenarios
