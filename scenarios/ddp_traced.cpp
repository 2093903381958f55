// ddp on a trace of a DDP run, which launched its all-reduces (NCCL kernels): nothing is inserted,
// the trace's own buckets change (the model: scenarios/ddp.cpp; docs/scenarios/ddp.md, "Traces of
// DDP runs"). broadcast_buffers=0 and gradient_as_bucket_view=1 remove DDP's per-forward buffer
// broadcasts and its end-of-backward copies into .grad; a given cluster re-costs every traced
// all-reduce of known size with the ring model; given bucket caps merge each pass's consecutive
// all-reduces under DDP's rule, a merged bucket costed on the traced cluster unless one is given.
#include "ddp_traced.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/text.hpp"
#include "data_parallel.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

/// gradient_as_bucket_view=True: DDP's copy-back into .grad goes with its launch calls, in every
/// pass where it moves the recorded all-reduce bytes (checked_copy_back).
std::string remove_copy_back(Graph& graph, const std::vector<TracedPass>& passes, const LaunchIndex& launches) {
  const CopyBack found = checked_copy_back(graph, launches, passes);
  const std::size_t calls = remove_with_launches(graph, found.copies);
  return fmt::format(
      "gradient_as_bucket_view: removed DDP's copy-back into .grad (the device-to-device copies launched after "
      "each pass's last all-reduce by its thread): {} copies of {} per pass in {} of {} passes, {} copies and "
      "{} launch calls in all{}",
      text::count_range(found.copies_per_pass), text::megabytes_range(found.bytes_per_pass),
      found.copies_per_pass.size(), passes.size(), found.copies.size(), calls,
      found.mismatched > 0 ? fmt::format("; {} passes kept theirs: their bytes differ from the recorded all-reduce "
                                         "sizes", found.mismatched)
                           : "");
}

/// broadcast_buffers=False: the per-forward buffer broadcasts (buffer_broadcast_tasks) go, with
/// their launch calls.
std::string remove_buffer_broadcasts(Graph& graph, const LaunchIndex& launches) {
  const auto tasks = buffer_broadcast_tasks(graph, launches);
  const auto count = [&](TaskKind kind) {
    return std::count_if(tasks.begin(), tasks.end(), [&](TaskId t) { return graph.task(t).kind == kind; });
  };
  const auto broadcasts = count(TaskKind::communication), kernels = count(TaskKind::kernel);
  const std::size_t calls = remove_with_launches(graph, tasks);
  return fmt::format(
      "broadcast_buffers: removed {} NCCL broadcast kernels inside iterations and the copies coalescing their "
      "buffers around them, {} copy kernels and {} device-to-device copies ({} launch calls){}",
      broadcasts, kernels, count(TaskKind::memcpy), calls,
      broadcasts == 0 ? ": the trace broadcasts no buffers (a model without buffers, or broadcast_buffers=False)" : "");
}

/// The trace's all-reduce tasks take the model's time for their size (those merged away too: as
/// when they were re-costed before the merge).
std::string recost_traced(Graph& graph, const TracedAllreduceSizes& sizes, const RingCost& cost) {
  for (const auto& [task, bytes] : sizes.bytes) graph.set_duration(task, cost.allreduce_ns(bytes));
  return fmt::format(
      "re-costed the trace's all-reduce tasks for n = {} GPUs: {} of recorded size, {} sized by spreading the given "
      "model size in proportion to their measured durations, {} unsized kept their measured time",
      cost.ranks, sizes.recorded, sizes.spread, sizes.unsized);
}

/// New bucket caps: each pass's consecutive all-reduces merge under DDP's rule (rebucket_traced_pass).
/// A merged bucket is the task of its last member (launched once that member was ready, after the
/// previous bucket on the NCCL stream), costed for the summed size by time_traced_run; the other
/// members go with their launch calls. A traced all-reduce left alone keeps its time.
void rebucket_traced(Graph& graph, const std::vector<TracedPass>& passes, const ScenarioParams& params,
                     TracedRunPlan& plan) {
  const auto first_cap = std::llround(params.number("first_bucket")), cap = std::llround(params.number("bucket"));
  std::vector<TaskId> merged_away;
  std::vector<std::size_t> before, after;
  for (const TracedPass& pass : passes) {
    const auto buckets = rebucket_traced_pass(pass, plan.sizes.bytes, first_cap, cap);
    for (const Bucket& b : buckets) {
      if (b.last - b.first < 2) continue;
      plan.merged.emplace_back(pass.allreduces[b.last - 1], b.bytes);
      merged_away.insert(merged_away.end(), pass.allreduces.begin() + static_cast<std::ptrdiff_t>(b.first),
                         pass.allreduces.begin() + static_cast<std::ptrdiff_t>(b.last - 1));
    }
    before.push_back(pass.allreduces.size());
    after.push_back(buckets.size());
  }
  const std::size_t calls = remove_with_launches(graph, merged_away);
  plan.rebucket_note = fmt::format(
      "re-bucketed the traced all-reduces of {} passes at bucket {} (first bucket {}): {} -> {} per pass; {} "
      "merged all-reduces costed by the ring model, {} merged-away all-reduce tasks and {} launch calls removed",
      passes.size(), text::megabytes(static_cast<double>(cap)), text::megabytes(static_cast<double>(first_cap)),
      text::count_range(before), text::count_range(after), plan.merged.size(), merged_away.size(), calls);
}

/// Machines, GPUs or a link given: the traced all-reduces are re-costed for that cluster.
bool cluster_given(const ScenarioParams& params) {
  for (const char* name : {"machines", "gpus", "intra", "inter", "bandwidth"})
    if (params.given(name)) return true;
  return false;
}

}  // namespace

TracedRunPlan restructure_traced_run(Graph& graph, const TraceCollectives& collectives, const ScenarioParams& params) {
  TracedRunPlan plan;
  const LaunchIndex launches(graph);
  const auto passes = traced_passes(graph, collectives);
  if (params.integer("gradient_as_bucket_view") == 1) plan.notes.push_back(remove_copy_back(graph, passes, launches));
  if (params.integer("broadcast_buffers") == 0) plan.notes.push_back(remove_buffer_broadcasts(graph, launches));
  plan.recost = cluster_given(params);
  plan.rebucket = params.given("bucket") || params.given("first_bucket");
  if (!plan.recost && !plan.rebucket) {
    plan.notes.push_back("the trace's all-reduces kept as measured (no machines, gpus or link given)");
    return plan;
  }
  plan.sizes = traced_allreduce_sizes(graph, collectives, given_total_bytes(params));
  if (plan.recost && plan.sizes.bytes.empty())
    throw Error(fmt::format("the trace's {} all-reduce tasks record no message size (record_param_comms 'In msg "
                            "nelems' and dtype); give params or param_file to re-cost them for another cluster",
                            plan.sizes.unsized));
  if (plan.rebucket) rebucket_traced(graph, passes, params, plan);
  return plan;
}

void time_traced_run(Graph& graph, const TraceCollectives& collectives, const ScenarioParams& params,
                     const TracedRunPlan& plan, std::vector<std::string>& notes) {
  notes.insert(notes.end(), plan.notes.begin(), plan.notes.end());
  if (!plan.recost && !plan.rebucket) return;
  const RingCost cost = plan.recost ? cluster_cost(params, collectives, notes)
                                    : traced_cluster_cost(graph, collectives, plan.sizes.bytes, params, notes);
  if (plan.recost) notes.push_back(recost_traced(graph, plan.sizes, cost));
  if (!plan.rebucket) return;
  for (const auto& [task, bytes] : plan.merged) graph.set_duration(task, cost.allreduce_ns(bytes));
  notes.push_back(plan.rebucket_note);
}

}  // namespace daydream::scenarios
