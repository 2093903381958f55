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
// copies into .grad. A one-GPU DDP run records its buckets (record_param_comms) without launching
// any: those buckets are inserted where they were recorded.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "builtin.hpp"
#include "data_parallel.hpp"
#include "daydream/analyze.hpp"
#include "daydream/transform.hpp"
#include "daydream/error.hpp"

namespace daydream::scenarios {
namespace {

/// Sizes for the traced all-reduces that record none: the given model size of each iteration,
/// spread in proportion to their measured durations. Empty when no size is given.
std::map<TaskId, std::int64_t> guessed_sizes(const Graph& graph, const TraceCollectives& collectives,
                                             const ScenarioParams& params) {
  const std::int64_t total = given_total_bytes(params);
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

/// Each traced all-reduce task's size, where known, and how many came from each source.
struct TracedSizes {
  std::map<TaskId, std::int64_t> bytes;  ///< the tasks of known size only
  std::size_t recorded = 0, spread = 0, unsized = 0;
};

/// Sizes of the trace's all-reduce tasks: recorded (record_param_comms), else the given model size
/// spread in proportion to their measured durations (guessed_sizes).
TracedSizes traced_sizes(const Graph& graph, const TraceCollectives& collectives, const ScenarioParams& params) {
  const auto guessed = guessed_sizes(graph, collectives, params);
  TracedSizes sizes;
  for (const TraceCollective& c : collectives.list) {
    if (!c.allreduce) continue;
    for (TaskId t : c.tasks) {  // one NCCL kernel per call in practice
      const auto guess = guessed.find(t);
      if (c.bytes != kNone)
        sizes.bytes[t] = c.bytes / static_cast<std::int64_t>(c.tasks.size()), ++sizes.recorded;
      else if (guess != guessed.end())
        sizes.bytes[t] = guess->second, ++sizes.spread;
      else
        ++sizes.unsized;
    }
  }
  return sizes;
}

/// The trace's all-reduce tasks take the model's time for their size; throws when none has one.
void recost_traced(Graph& graph, const TracedSizes& sizes, const RingCost& cost, std::vector<std::string>& notes) {
  if (sizes.bytes.empty())
    throw Error(
        fmt::format("the trace's {} all-reduce tasks record no message size (record_param_comms 'In msg "
                    "nelems' and dtype); give params or param_file to re-cost them for another cluster",
                    sizes.unsized));
  for (const auto& [task, bytes] : sizes.bytes) TaskSet(graph, {task}).set_duration(cost.allreduce_ns(bytes));
  notes.push_back(
      fmt::format("re-costed the trace's all-reduce tasks for n = {} GPUs: {} of recorded size, {} sized "
                  "by spreading the given model size in proportion to their measured durations, {} "
                  "unsized kept their measured time",
                  cost.ranks, sizes.recorded, sizes.spread, sizes.unsized));
}

/// "24" when every pass has the same count, else "20-24".
std::string count_range(const std::vector<std::size_t>& counts) {
  if (counts.empty()) return "0";
  const auto [low, high] = std::minmax_element(counts.begin(), counts.end());
  return *low == *high ? fmt::format("{}", *low) : fmt::format("{}-{}", *low, *high);
}

/// "467.91 MB" when every pass moves the same, else "1.00 MB to 2.00 MB".
std::string bytes_range(const std::vector<std::int64_t>& bytes) {
  if (bytes.empty()) return format_bytes(0);
  const auto [low, high] = std::minmax_element(bytes.begin(), bytes.end());
  const std::string text = format_bytes(static_cast<double>(*low));
  return *low == *high ? text : text + " to " + format_bytes(static_cast<double>(*high));
}

std::int64_t bytes_of(const Graph& graph, const std::vector<TaskId>& tasks) {
  std::int64_t total = 0;
  for (TaskId t : tasks) total += std::max<std::int64_t>(0, graph.task(t).bytes);
  return total;
}

/// The pass's all-reduced bytes when the trace records every one, else kNone.
std::int64_t recorded_pass_bytes(const TracedPass& pass) {
  std::int64_t total = 0;
  for (std::int64_t b : pass.recorded_bytes) {
    if (b == kNone) return kNone;
    total += b;
  }
  return total;
}

/// gradient_as_bucket_view=True: the reducer's end-of-backward copies into .grad
/// (copy_back_copies) go, with their launch calls. Where the trace records the pass's all-reduce
/// sizes, the copies must move exactly those bytes (each gradient once), or they are kept.
std::string remove_copy_back(Graph& graph, const std::vector<TracedPass>& passes, const LaunchIndex& launches) {
  std::vector<TaskId> removed;
  std::vector<std::size_t> per_pass;
  std::vector<std::int64_t> bytes_per_pass;
  std::size_t mismatched = 0;
  for (const TracedPass& pass : passes) {
    const auto copies = copy_back_copies(graph, launches, pass);
    const std::int64_t bytes = bytes_of(graph, copies), recorded = recorded_pass_bytes(pass);
    if (recorded != kNone && bytes != recorded) {
      ++mismatched;
      continue;
    }
    removed.insert(removed.end(), copies.begin(), copies.end());
    per_pass.push_back(copies.size());
    bytes_per_pass.push_back(bytes);
  }
  const std::size_t calls = remove_with_launches(graph, removed);
  return fmt::format(
      "gradient_as_bucket_view: removed DDP's copy-back into .grad (the device-to-device copies launched after "
      "each pass's last all-reduce by its thread): {} copies of {} per pass in {} of {} passes, {} copies and "
      "{} launch calls in all{}",
      count_range(per_pass), bytes_range(bytes_per_pass), per_pass.size(), passes.size(), removed.size(), calls,
      mismatched > 0 ? fmt::format("; {} passes kept theirs: their bytes differ from the recorded all-reduce sizes",
                                   mismatched)
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

/// The traced buckets of a pass as DDP's fill_buckets sees gradients; throws when one has no size.
std::vector<Gradient> traced_buckets(const TracedPass& pass, const std::map<TaskId, std::int64_t>& bytes) {
  std::vector<Gradient> buckets;
  for (TaskId t : pass.allreduces) {
    const auto size = bytes.find(t);
    if (size == bytes.end())
      throw Error(
          "re-bucketing needs the size of every traced all-reduce, and the trace records none "
          "(record_param_comms 'In msg nelems' and dtype; Nsight traces have no such record): give params "
          "(the model's parameter count, e.g. params=25.6e6) or param_file");
    Gradient g;
    g.ready = t;
    g.bytes = size->second;
    buckets.push_back(g);
  }
  return buckets;
}

/// New bucket caps on a traced run: each pass's consecutive all-reduces merge under DDP's rule
/// (fill_buckets). A merged bucket is the task of its last member (launched once that member was
/// ready, after the previous bucket on the NCCL stream) costed by `cost` for the summed size; the
/// other members go with their launch calls. A traced all-reduce left alone keeps its time.
std::string rebucket_traced(Graph& graph, const std::vector<TracedPass>& passes,
                            const std::map<TaskId, std::int64_t>& bytes, const RingCost& cost,
                            const ScenarioParams& params) {
  const std::int64_t first_cap = std::llround(params.number("first_bucket")), cap = std::llround(params.number("bucket"));
  std::vector<TaskId> merged_away;
  std::vector<std::size_t> before, after;
  std::size_t merged = 0;
  for (const TracedPass& pass : passes) {
    const auto buckets = fill_buckets(traced_buckets(pass, bytes), first_cap, cap);
    for (const Bucket& b : buckets) {
      if (b.last - b.first < 2) continue;
      TaskSet(graph, {pass.allreduces[b.last - 1]}).set_duration(cost.allreduce_ns(b.bytes));
      merged_away.insert(merged_away.end(), pass.allreduces.begin() + static_cast<std::ptrdiff_t>(b.first),
                         pass.allreduces.begin() + static_cast<std::ptrdiff_t>(b.last - 1));
      ++merged;
    }
    before.push_back(pass.allreduces.size());
    after.push_back(buckets.size());
  }
  const std::size_t calls = remove_with_launches(graph, merged_away);
  return fmt::format(
      "re-bucketed the traced all-reduces of {} passes at bucket {} (first bucket {}): {} -> {} per pass; {} "
      "merged all-reduces costed by the ring model, {} merged-away all-reduce tasks and {} launch calls removed",
      passes.size(), format_bytes(static_cast<double>(cap)), format_bytes(static_cast<double>(first_cap)),
      count_range(before), count_range(after), merged, merged_away.size(), calls);
}

/// Machines, GPUs or a link given: the traced all-reduces are re-costed for that cluster.
bool cluster_given(const ScenarioParams& params) {
  for (const char* name : {"machines", "gpus", "intra", "inter", "bandwidth"})
    if (params.given(name)) return true;
  return false;
}

/// A trace of a DDP run (traced all-reduces): DDP's own copies change with broadcast_buffers and
/// gradient_as_bucket_view; the all-reduces are re-costed for a given cluster and re-bucketed for
/// given caps, else kept as measured.
void apply_to_traced_run(Graph& graph, const TraceCollectives& collectives, const ScenarioParams& params,
                         std::vector<std::string>& notes) {
  const LaunchIndex launches(graph);
  const auto passes = traced_passes(graph, collectives);
  if (params.integer("gradient_as_bucket_view") == 1) notes.push_back(remove_copy_back(graph, passes, launches));
  if (params.integer("broadcast_buffers") == 0) notes.push_back(remove_buffer_broadcasts(graph, launches));
  const bool recost = cluster_given(params), rebucket = params.given("bucket") || params.given("first_bucket");
  if (!recost && !rebucket) {
    notes.push_back("the trace's all-reduces kept as measured (no machines, gpus or link given)");
    return;
  }
  const TracedSizes sizes = traced_sizes(graph, collectives, params);
  const RingCost cost = recost ? cluster_cost(params, collectives, notes)
                               : traced_cluster_cost(graph, collectives, sizes.bytes, params, notes);
  if (recost) recost_traced(graph, sizes, cost, notes);
  if (rebucket) notes.push_back(rebucket_traced(graph, passes, sizes.bytes, cost, params));
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
        "the trace shows no backward pass: no AccumulateGrad range (torch::autograd::AccumulateGrad) "
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
    apply_to_traced_run(graph, collectives, params, out.notes);
    return out;
  }
  if (params.given("broadcast_buffers") || params.given("gradient_as_bucket_view"))
    out.notes.push_back(
        "broadcast_buffers and gradient_as_bucket_view apply to a trace of a DDP run only: the all-reduces "
        "inserted here model neither buffer broadcasts nor copies into .grad");
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
    out.notes.push_back(assign_sizes(graph, passes, params));
    for (const auto& pass : passes) inserted += insert_buckets(graph, channel, pass, cost, params);
  }
  out.notes.push_back(fmt::format("inserted {} bucket all-reduces over {} backward passes", inserted, passes.size()));
  out.notes.push_back(barrier_note(passes));
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
  return {"ddp",
          "data-parallel training (PyTorch DDP): bucketed ring all-reduces overlap the backward pass, the step waits "
          "for all",
          ddp_params(), apply};
}

}  // namespace daydream::scenarios
