// ddp: data-parallel training (PyTorch DistributedDataParallel) on n = machines x gpus GPUs.
//
// Model (docs/scenarios/ddp.md): each backward pass's gradients fill buckets in the order they
// become ready (DDP's rule: the first bucket closes at first_bucket bytes, later ones at bucket
// bytes). A gradient is ready when the last GPU task its backward thread launched up to its
// AccumulateGrad ends. Once a bucket's last gradient is ready, its ring all-reduce,
//     latency + 2(n-1)/n * bytes / bandwidth,
// runs on one communication channel, in bucket order. The optimizer's first GPU task waits for
// every bucket (DDP makes the default stream wait on its communication before the step), and so,
// in stream order, does the next forward pass.
// A trace of a DDP run that launched all-reduces (NCCL kernels) keeps them: re-costed for a given
// n and link (latency and bandwidth fitted to them unless given), re-bucketed for given caps (each
// pass's consecutive all-reduces merge under DDP's rule), else as measured; broadcast_buffers=0
// and gradient_as_bucket_view=1 remove DDP's per-forward buffer broadcasts and its end-of-backward
// copies into .grad (ddp_traced.cpp). A one-GPU DDP run records its buckets (record_param_comms)
// without launching any: those buckets are inserted where they were recorded.
// A split scenario (ScenarioSplit): restructure_ddp finds the passes and buckets and inserts or
// merges all-reduces, time_ddp costs them for the link (intra, inter, bandwidth, latency), so a
// sweep over the network buckets once.
#include <fmt/format.h>

#include <algorithm>
#include <any>
#include <cmath>
#include <optional>
#include <utility>

#include "builtin.hpp"
#include "common/text.hpp"
#include "data_parallel.hpp"
#include "ddp_traced.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

/// One all-reduce per bucket on the channel: after its ready task and the previous bucket, before
/// the pass's barrier. Inserted at 0 ns; time_ring_messages costs each for its bytes (appended to `timed`).
void insert_allreduces(Graph& graph, UnitId channel, const BackwardPass& pass, const std::vector<ReadyBucket>& buckets,
                       std::vector<std::pair<TaskId, std::int64_t>>& timed) {
  TaskId previous = kNoTask;
  for (const ReadyBucket& b : buckets) {
    NewTask task = backward_comm_task(fmt::format("ddp all_reduce ({})", text::megabytes(static_cast<double>(b.bytes))),
                                      channel, 0, b.ready);
    if (previous != kNoTask) task.after.push_back(previous);
    if (pass.barrier != kNoTask) task.before = {pass.barrier};
    previous = graph.insert(task);
    timed.emplace_back(previous, b.bytes);
  }
}

/// The trace's own buckets serve unless the user asked for other sizes or bucket caps.
bool use_recorded_buckets(const std::vector<BackwardPass>& passes, const ScenarioParams& params) {
  for (const char* name : {"bucket", "first_bucket", "params", "param_file"})
    if (params.given(name)) return false;
  return std::all_of(passes.begin(), passes.end(), [](const BackwardPass& p) { return !p.recorded_buckets.empty(); });
}

std::string barrier_note(const std::vector<BackwardPass>& passes) {
  const auto count = [&](auto pred) { return std::count_if(passes.begin(), passes.end(), pred); };
  return fmt::format(
      "the optimizer's first GPU task waits for the all-reduces in {} of {} passes ({} with no later "
      "GPU task to wait, the rest wait at the next task on the backward's stream)",
      count([](const BackwardPass& p) { return !p.update_tasks.empty(); }), passes.size(),
      count([](const BackwardPass& p) { return p.barrier == kNoTask; }));
}

/// What restructure_ddp leaves for time_ddp: a traced run's all-reduces to re-cost, or the
/// inserted ones.
struct DdpPlan {
  RingMessages inserted;  // its collectives serve a traced run too
  std::optional<TracedRunPlan> traced;
};

DdpPlan restructure_ddp(Graph& graph, const ScenarioParams& params) {
  DdpPlan plan;
  RingMessages& ring = plan.inserted;
  ring.collectives = read_trace_collectives(graph);
  record_world_size(graph, params);
  if (!traced_allreduce_tasks(ring.collectives).empty()) {
    plan.traced = restructure_traced_run(graph, ring.collectives, params);
    return plan;
  }
  if (params.given("broadcast_buffers") || params.given("gradient_as_bucket_view"))
    ring.notes_before.push_back(
        "broadcast_buffers and gradient_as_bucket_view apply to a trace of a DDP run only: the all-reduces "
        "inserted here model neither buffer broadcasts nor copies into .grad");
  if (ranks_of(params) == 1) {
    ring.notes_before.push_back("one GPU (machines = gpus = 1): nothing to all-reduce, the graph is unchanged");
    return plan;
  }
  ring.costed = true;
  auto passes = backward_passes(graph, ring.collectives, false);
  const UnitId channel = add_comm_channel(graph, "ddp all-reduce");
  const bool recorded = use_recorded_buckets(passes, params);
  ring.notes_after.push_back(recorded
                                 ? "buckets as the trace recorded them (record_param_comms all_reduce sizes and positions)"
                                 : assign_sizes(graph, passes, params));
  const LaunchIndex launches(graph);
  const auto first_cap = std::llround(params.number("first_bucket")), cap = std::llround(params.number("bucket"));
  for (const auto& pass : passes) {
    const auto buckets =
        recorded ? ready_recorded_buckets(pass, ring.collectives, launches) : gradient_buckets(pass, first_cap, cap);
    insert_allreduces(graph, channel, pass, buckets, ring.messages);
  }
  ring.notes_after.push_back(
      fmt::format("inserted {} bucket all-reduces over {} backward passes", ring.messages.size(), passes.size()));
  ring.notes_after.push_back(barrier_note(passes));
  return plan;
}

ScenarioOutcome time_ddp(Graph& graph, const ScenarioParams& params, const std::any& any_plan) {
  const auto& plan = std::any_cast<const DdpPlan&>(any_plan);
  ScenarioOutcome out;
  if (plan.traced) time_traced_run(graph, plan.inserted.collectives, params, *plan.traced, out.notes);
  else time_ring_messages(graph, params, plan.inserted, out.notes);
  return out;
}

/// The data-parallel parameters, and the two DDP options that add copies to a DDP run's trace.
std::vector<ScenarioParam> ddp_params() {
  auto params = data_parallel_params();
  params.emplace_back("broadcast_buffers", ParamKind::integer, 1,
                      "1: as traced; 0: DDP's broadcast_buffers=False, the per-forward buffer broadcasts (NCCL "
                      "broadcast kernels and their coalescing copies) go",
                      0, 1);
  params.emplace_back("gradient_as_bucket_view", ParamKind::integer, 0,
                      "0: as traced; 1: DDP's gradient_as_bucket_view=True, the end-of-backward copies of the "
                      "reduced buckets into .grad go",
                      0, 1);
  return params;
}

}  // namespace

Scenario ddp() {
  return split_scenario("ddp",
                        "data-parallel training (PyTorch DDP): bucketed ring all-reduces overlap the backward pass, "
                        "the step waits for all",
                        ddp_params(),
                        {link_params(),
                         [](Graph& graph, const ScenarioParams& params) { return std::any(restructure_ddp(graph, params)); },
                         time_ddp});
}

}  // namespace daydream::scenarios
