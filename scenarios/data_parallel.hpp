#pragma once
// What the data-parallel scenarios (ddp, p3) share: their parameters, the backward passes and their
// gradient sizes (data_parallel.cpp), and the ring model of the cluster (ring_cost.cpp).
// docs/scenarios/ddp.md.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daydream/analyze.hpp"
#include "daydream/model.hpp"
#include "daydream/scenario.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {

/// machines, gpus, intra, inter, bandwidth, latency, bucket, first_bucket, then model_size_params().
std::vector<ScenarioParam> data_parallel_params();

/// The parameters of data_parallel_params() that only cost the messages (the link): what ddp and
/// p3 retime (ScenarioSplit); the machines, GPUs, buckets and slices are structure.
inline std::vector<std::string> link_params() { return {"intra", "inter", "bandwidth", "latency"}; }
/// params, bytes_per_param, param_file: the model's gradient bytes (given_total_bytes), for the
/// all-reduces whose size the trace does not record (ddp, p3, faster_network's bandwidth).
std::vector<ScenarioParam> model_size_params();

/// n = machines * gpus.
std::int64_t ranks_of(const ScenarioParams& params);
/// With machines x gpus above 1 the changed graph models one rank of a job of that many ranks: its
/// world size says so (the sweep's cost counts the job's GPUs by it).
void record_world_size(Graph& graph, const ScenarioParams& params);

/// The model's gradient bytes from param_file or params (times bytes_per_param), kNone when
/// neither is given.
std::int64_t given_total_bytes(const ScenarioParams& params);

/// The trace's backward passes (find_backward_passes), only those with gradients when
/// `need_gradients`; throws Error when none is left.
std::vector<BackwardPass> backward_passes(const Graph& graph, const TraceCollectives& collectives,
                                          bool need_gradients);

/// A communication task of the backward phase on `channel`, after `ready` (what ddp and p3 insert:
/// an all-reduce, a slice).
NewTask backward_comm_task(std::string name, UnitId channel, TimeNs duration_ns, TaskId ready);

/// Sets every Gradient::bytes from, in this order: the param_file parameter, the params
/// parameter, or the trace's recorded all_reduce sizes of each pass (spread over the gradients by
/// a proxy). Throws Error naming both parameters when none is available. Returns a note saying
/// which source (and proxy) was used.
std::string assign_sizes(const Graph& graph, std::vector<BackwardPass>& passes, const ScenarioParams& params);

/// The fit of the ring model to the trace's all-reduces of known size (fit_traced_allreduces)
/// where it is usable; appends to `notes` what was fitted and whether it is used.
std::optional<LinkFit> usable_fit(const TraceCollectives& collectives, std::vector<std::string>& notes);

/// The cost model for the requested cluster: the link is `intra` on one machine and `inter`
/// across machines (a flat ring is as fast as its slowest link). Where the trace holds
/// all-reduces of known size, their usable fit replaces the defaults of latency and bandwidth
/// that were not given. Appends what it used to `notes`.
RingCost cluster_cost(const ScenarioParams& params, const TraceCollectives& collectives,
                      std::vector<std::string>& notes);

/// All-reduces a split scenario inserted at 0 ns (ddp's buckets, p3's slices), for its retime to
/// cost for the link, with the notes around the link's.
struct RingMessages {
  TraceCollectives collectives;  ///< read before any change: the fit reads them
  std::vector<std::string> notes_before, notes_after;
  bool costed = false;  ///< inserted for more than one GPU: the link is costed and noted
  std::vector<std::pair<TaskId, std::int64_t>> messages;  ///< each inserted all-reduce and its bytes
};

/// Appends notes_before; where costed, cluster_cost's notes, each message timed by its ring cost,
/// and notes_after.
void time_ring_messages(Graph& graph, const ScenarioParams& params, const RingMessages& ring,
                        std::vector<std::string>& notes);

/// The ring model of the cluster the trace ran on, to cost all-reduces the trace does not have
/// (merged buckets), among traced_ring_ranks: the usable fit (with the given latency, if any);
/// otherwise `latency` (given, or its default) and the bandwidth at which the model's times add up
/// to the measured times of the traced all-reduces of known size, `bytes` (recorded or spread):
/// measured_ns_per_byte. Appends what it used to `notes`.
RingCost traced_cluster_cost(const Graph& graph, const TraceCollectives& collectives,
                             const std::map<TaskId, std::int64_t>& bytes, const ScenarioParams& params,
                             std::vector<std::string>& notes);

}  // namespace daydream::scenarios
