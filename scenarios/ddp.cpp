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
// A trace of a DDP run that launched all-reduces (NCCL kernels) keeps them and gets them
// re-costed for the new n and link, with latency and bandwidth fitted to them unless given. A
// one-GPU DDP run records its buckets (record_param_comms) without launching any: those buckets
// are inserted where they were recorded.
#include <fmt/format.h>

#include <map>

#include "builtin.hpp"
#include "collectives.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

/// Sizes for the traced all-reduces that record none: the given model size of each iteration,
/// spread in proportion to their measured durations. Empty when no size is given.
std::map<TaskId, std::int64_t> guessed_sizes(const Graph& graph, const TraceCollectives& collectives,
                                             const ScenarioParams& params) {
  const std::int64_t total = given_total_bytes(params, "ddp");
  std::map<std::int32_t, std::vector<TaskId>> unsized;  // by iteration
  for (const TraceCollective& c : collectives.list)
    if (c.allreduce && c.bytes == kNone)
      for (TaskId t : c.tasks) unsized[graph.task(t).iteration].push_back(t);
  std::map<TaskId, std::int64_t> sizes;
  if (total == kNone) return sizes;
  for (const auto& [iteration, tasks] : unsized) {
    std::vector<double> weights;
    for (TaskId t : tasks) weights.push_back(static_cast<double>(graph.task(t).duration_ns));
    const auto parts = spread_bytes(total, weights);
    for (std::size_t i = 0; i < tasks.size(); ++i) sizes[tasks[i]] = parts[i];
  }
  return sizes;
}

/// The trace's all-reduce tasks take the model's time, for their recorded size or else a size
/// guessed from the given model size; throws when no task has either.
void recost_traced(Graph& graph, const TraceCollectives& collectives, const RingCost& cost,
                   const ScenarioParams& params, std::vector<std::string>& notes) {
  const auto guessed = guessed_sizes(graph, collectives, params);
  std::size_t recorded = 0, unsized = 0;
  for (const TraceCollective& c : collectives.list) {
    if (!c.allreduce) continue;
    for (TaskId t : c.tasks) {  // one NCCL kernel per call in practice
      const auto guess = guessed.find(t);
      const std::int64_t bytes = c.bytes != kNone         ? c.bytes / static_cast<std::int64_t>(c.tasks.size())
                                 : guess != guessed.end() ? guess->second
                                                          : kNone;
      if (bytes == kNone) {
        ++unsized;
        continue;
      }
      TaskSet(graph, {t}).set_duration(cost.allreduce_ns(bytes));
      recorded += c.bytes != kNone ? 1 : 0;
    }
  }
  if (recorded == 0 && guessed.empty())
    throw Error(
        fmt::format("ddp: the trace's {} all-reduce tasks record no message size (record_param_comms 'In msg "
                    "nelems' and dtype); give params or param_file to re-cost them for another cluster",
                    unsized));
  notes.push_back(
      fmt::format("re-costed the trace's all-reduce tasks for n = {} GPUs: {} of recorded size, {} sized "
                  "by spreading the given model size in proportion to their measured durations, {} "
                  "unsized kept their measured time",
                  cost.ranks, recorded, guessed.size(), unsized));
}

/// One all-reduce on the channel: after its ready task and the previous bucket, before the barrier.
TaskId insert_allreduce(Graph& graph, UnitId channel, std::int64_t bytes, const RingCost& cost, TaskId ready,
                        TaskId previous, TaskId barrier) {
  NewTask task;
  task.name = fmt::format("ddp all_reduce ({})", format_bytes(static_cast<double>(bytes)));
  task.kind = TaskKind::communication;
  task.unit = channel;
  task.duration_ns = cost.allreduce_ns(bytes);
  task.after = {ready};
  if (previous != kNoTask) task.after.push_back(previous);
  if (barrier != kNoTask) task.before = {barrier};
  task.phase = Phase::backward;
  return graph.insert(task);
}

std::size_t insert_buckets(Graph& graph, UnitId channel, const BackwardPass& pass, const RingCost& cost,
                           const ScenarioParams& params) {
  const auto buckets =
      fill_buckets(pass.gradients, std::llround(params.number("first_bucket")), std::llround(params.number("bucket")));
  TaskId previous = kNoTask;
  for (const Bucket& b : buckets)
    previous =
        insert_allreduce(graph, channel, b.bytes, cost, pass.gradients[b.last - 1].ready, previous, pass.barrier);
  return buckets.size();
}

std::size_t insert_recorded_buckets(Graph& graph, UnitId channel, const BackwardPass& pass,
                                    const TraceCollectives& collectives, const LaunchIndex& launches,
                                    const RingCost& cost) {
  TaskId previous = kNoTask;
  std::size_t inserted = 0;
  for (std::size_t i : pass.recorded_buckets) {
    const TraceCollective& c = collectives.list[i];
    const TaskId ready = launches.last_before(c.thread, c.start_ns);
    if (ready == kNoTask) continue;
    previous = insert_allreduce(graph, channel, c.bytes, cost, ready, previous, pass.barrier);
    ++inserted;
  }
  return inserted;
}

/// The trace's own buckets serve unless the user asked for other sizes or bucket caps.
bool use_recorded_buckets(const std::vector<BackwardPass>& passes, const ScenarioParams& params) {
  for (const char* name : {"bucket", "first_bucket", "params", "param_file"})
    if (params.given(name)) return false;
  return std::all_of(passes.begin(), passes.end(), [](const BackwardPass& p) { return !p.recorded_buckets.empty(); });
}

std::vector<BackwardPass> backward_passes(const Graph& graph, const TraceCollectives& collectives) {
  auto passes = find_backward_passes(graph, collectives);
  if (passes.empty())
    throw Error(
        "ddp: the trace shows no backward pass: no AccumulateGrad range (torch::autograd::AccumulateGrad) "
        "tells when gradients become ready, and no all_reduce is recorded");
  return passes;
}

std::string barrier_note(const std::vector<BackwardPass>& passes) {
  std::size_t optimizer = 0, none = 0;
  for (const auto& p : passes) {
    if (!p.update_tasks.empty()) ++optimizer;
    if (p.barrier == kNoTask) ++none;
  }
  return fmt::format(
      "the optimizer's first GPU task waits for the all-reduces in {} of {} passes ({} with no later "
      "GPU task to wait, the rest wait at the next task on the backward's stream)",
      optimizer, passes.size(), none);
}

ScenarioOutcome apply(Graph& graph, const ScenarioParams& params) {
  ScenarioOutcome out;
  const TraceCollectives collectives = read_trace_collectives(graph);
  if (!traced_allreduce_tasks(collectives).empty()) {
    recost_traced(graph, collectives, cluster_cost(params, collectives, out.notes), params, out.notes);
    if (params.given("bucket") || params.given("first_bucket"))
      out.notes.push_back("bucket and first_bucket do not apply: the trace's own buckets are re-costed");
    return out;
  }
  if (ranks_of(params) == 1) {
    out.notes.push_back("one GPU (machines = gpus = 1): nothing to all-reduce, the graph is unchanged");
    return out;
  }
  const RingCost cost = cluster_cost(params, collectives, out.notes);
  auto passes = backward_passes(graph, collectives);
  const UnitId channel = add_comm_channel(graph, "ddp all-reduce");
  std::size_t inserted = 0;
  if (use_recorded_buckets(passes, params)) {
    const LaunchIndex launches(graph);
    for (const auto& pass : passes)
      inserted += insert_recorded_buckets(graph, channel, pass, collectives, launches, cost);
    out.notes.push_back("buckets as the trace recorded them (record_param_comms all_reduce sizes and positions)");
  } else {
    out.notes.push_back(assign_sizes(graph, passes, params, "ddp"));
    for (const auto& pass : passes) inserted += insert_buckets(graph, channel, pass, cost, params);
  }
  out.notes.push_back(fmt::format("inserted {} bucket all-reduces over {} backward passes", inserted, passes.size()));
  out.notes.push_back(barrier_note(passes));
  return out;
}

}  // namespace

Scenario ddp() {
  return {"ddp",
          "data-parallel training (PyTorch DDP): bucketed ring all-reduces overlap the backward pass, the step waits "
          "for all",
          data_parallel_params(), apply};
}

}  // namespace daydream::scenarios
