#pragma once
/// @file analyze.hpp
/// @brief Facts read off a graph that models of data-parallel training, optimizer changes and
/// data loading need: what a CPU task does with the GPU, the collectives the trace records and
/// what its all-reduces say about its ring (their sizes, the fitted link), what each CPU thread
/// launched, the backward passes, where each gradient becomes ready and how big it is, where the
/// next forward uses each parameter, a traced DDP run's buckets and the copies around them, DDP's
/// bucketing rule, the batches a DataLoader handed over, what their waits say about a worker's
/// load time and which other threads idled across those waits. Read-only: nothing here changes a
/// graph.
/// docs/scenarios/ddp.md, docs/scenarios/dataloader_workers.md.
///
/// @code
///   auto collectives = daydream::read_trace_collectives(graph);
///   for (const auto& pass : daydream::find_backward_passes(graph, collectives))
///     std::cout << pass.gradients.size() << " gradients, barrier " << pass.barrier << "\n";
/// @endcode

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daydream/graph.hpp"
#include "daydream/model.hpp"
#include "daydream/transform.hpp"

namespace daydream {

/// Median duration of the trace's kernel-launch calls (cudaLaunchKernel, cuLaunchKernel, ...);
/// `fallback_ns` when the graph has none.
TimeNs median_launch_call_ns(const Graph& graph, TimeNs fallback_ns = 5'000);

// --- what a CPU task does with the GPU ---

/// A copy to or from host memory: a memcpy task neither device-to-device
/// (is_device_to_device_copy) nor peer-to-peer ("PtoP").
bool is_host_copy(const Graph& graph, TaskId task);

/// What a CPU task does with the GPU, read from what it launched (launched_by): what a model that
/// captures (CUDA graphs) or fuses (a fused optimizer) a stretch of CPU work can take with it.
enum class GpuUse {
  none,         ///< launches nothing and does not block: framework (Python, ATen) work
  kernels,      ///< launches kernels and memsets only (it may block: a full launch queue)
  device_work,  ///< launches device-side copies or collectives too, and no host copy
  host_copy,    ///< launches a copy to or from host memory (is_host_copy), whatever else it launches
  wait,         ///< launches nothing and blocks: a synchronization, a wait for a copy
};
GpuUse gpu_use(const Graph& graph, TaskId cpu_task);
/// "none", "kernels", "device_work", "host_copy" or "wait".
std::string_view to_string(GpuUse use);

/// Whether a CPU task waited for GPU work: an edge into it from a GPU-stream task (a sync edge: a
/// synchronization, a blocking copy, a launch into a full launch queue; docs/graph.md).
bool waits_for_gpu(const Graph& graph, TaskId cpu_task);

// --- the trace's own collectives (`record_param_comms`) ---

struct TraceCollective {
  std::string name;                 ///< "allreduce", "broadcast", ...
  std::int64_t bytes = kNone;       ///< message size, kNone when the trace does not record it
  UnitId thread = 0;                ///< the CPU thread of the record_param_comms range
  TimeNs start_ns = 0, end_ns = 0;  ///< the range, relative to the graph origin
  std::vector<TaskId> tasks;        ///< the communication tasks launched inside the range
  TimeNs tasks_ns = 0;              ///< their measured durations, summed
  bool allreduce = false;           ///< named so, or launched an all-reduce kernel
};

struct TraceCollectives {
  std::int64_t world_size = kNone;    ///< distributedInfo.world_size, else the collectives' group size
  std::vector<TraceCollective> list;  ///< by start
};

/// The collectives the graph's trace records (Graph::collectives, from record_param_comms), with
/// the communication tasks each launched; all-reduce kernels outside such a range are listed
/// with unknown size.
TraceCollectives read_trace_collectives(const Graph& graph);

/// The trace's all-reduce communication tasks (NCCL kernels) inside a record_param_comms range, by id.
std::vector<TaskId> traced_allreduce_tasks(const TraceCollectives& collectives);

/// Each traced all-reduce task's size, and where it came from.
struct TracedAllreduceSizes {
  std::map<TaskId, std::int64_t> bytes;  ///< the tasks of known size only
  std::size_t recorded = 0;  ///< sized by their record_param_comms range (its bytes over its tasks)
  std::size_t spread = 0;    ///< sized by spreading the model's gradient bytes
  std::size_t unsized = 0;   ///< of unknown size
};

/// The size of every all-reduce task of the trace: recorded, else `model_bytes` (the model's
/// gradient bytes, all-reduced once per iteration; kNone when not known) spread over each
/// iteration's all-reduce tasks of unknown size in proportion to their measured durations, else
/// unknown.
TracedAllreduceSizes traced_allreduce_sizes(const Graph& graph, const TraceCollectives& collectives,
                                            std::int64_t model_bytes);

/// The ring model (fit_ring over the trace's world size) fitted to the trace's all-reduces that
/// launched communication tasks and record their size, one sample (bytes, the tasks' summed
/// time) each.
struct TracedRingFit {
  std::size_t sized = 0;       ///< samples
  std::size_t unsized = 0;     ///< all-reduces that launched tasks but record no size: left out
  std::optional<LinkFit> fit;  ///< nullopt without samples, with one size only or a world size under 2
};
TracedRingFit fit_traced_allreduces(const TraceCollectives& collectives);

/// n of the ring the trace ran on, to cost all-reduces the trace does not have: its world size,
/// else 2 (a trace without one, Nsight's: the traffic factor 2(n-1)/n then cancels between a
/// bandwidth measured with it, measured_ns_per_byte, and the all-reduces costed with it).
std::int64_t traced_ring_ranks(const TraceCollectives& collectives);

/// The link (ns per byte) at which latency_ns + ns_per_byte * ring traffic among `ranks` adds up to
/// the measured durations of the all-reduce tasks in `bytes` (task -> its size):
/// sum(duration - latency) / sum(traffic); 0 (an infinite link) when nothing is left after the
/// latencies.
double measured_ns_per_byte(const Graph& graph, const std::map<TaskId, std::int64_t>& bytes, std::int64_t ranks,
                            double latency_ns);

// --- gradients ---

/// One parameter's gradient: where it becomes ready and how big it is.
struct Gradient {
  TaskId ready = kNoTask;  ///< the last GPU task the backward thread launched up to its AccumulateGrad
  TimeNs ready_ns = 0;     ///< end of the AccumulateGrad range (orders the gradients)
  TimeNs own_gpu_ns = 0;   ///< GPU time launched inside the AccumulateGrad range (a size proxy)
  std::int64_t bytes = 0;
};

/// One backward pass and the optimizer step that consumes it.
struct BackwardPass {
  std::int32_t iteration = -1;       ///< index into Graph::iterations(), -1 without iterations
  TimeNs start_ns = 0, end_ns = 0;   ///< the window the pass was collected from
  std::vector<Gradient> gradients;   ///< in ready order (reverse of the forward order)
  std::vector<TaskId> update_tasks;  ///< GPU tasks of the optimizer step, in launch order
  /// First GPU task that must wait for every gradient: the optimizer's first GPU task, else the
  /// task after the last gradient on its stream; kNoTask when neither exists.
  TaskId barrier = kNoTask;
  std::int64_t recorded_allreduce_bytes = 0;  ///< sum of the trace's all_reduce sizes in the window
  /// The trace's all_reduces of known size in the window that launched no communication task
  /// (a one-GPU DDP run records its buckets this way): indices into TraceCollectives::list.
  std::vector<std::size_t> recorded_buckets;
};

/// The GPU tasks each CPU thread launched, by launch-call start (communication tasks excluded).
class LaunchIndex {
 public:
  explicit LaunchIndex(const Graph& graph);
  /// The last GPU task launched from `thread` by a call starting before `time_ns`, or kNoTask.
  TaskId last_before(UnitId thread, TimeNs time_ns) const;
  /// The GPU tasks launched from `thread` by calls starting in [from_ns, to_ns), in launch order.
  std::vector<TaskId> launched_in(UnitId thread, TimeNs from_ns, TimeNs to_ns) const;
  /// Every (launch-call start, GPU task) of `thread`, in launch order.
  const std::vector<std::pair<TimeNs, TaskId>>& launches_of(UnitId thread) const { return by_thread_.at(thread); }

 private:
  std::vector<std::vector<std::pair<TimeNs, TaskId>>> by_thread_;
};

/// Finds the backward passes: AccumulateGrad ranges grouped by iteration (ProfilerStep; between
/// optimizer steps when the trace marks none). Gradient sizes are left at 0 (assign_sizes).
std::vector<BackwardPass> find_backward_passes(const Graph& graph, const TraceCollectives& collectives);

/// Splits `total_bytes` over `weights` in proportion (exactly: the parts sum to total_bytes).
std::vector<std::int64_t> spread_bytes(std::int64_t total_bytes, const std::vector<double>& weights);

/// Spreads `total_bytes` over the pass's gradients in proportion to a size proxy: the optimizer's
/// per-parameter update kernels, else the AccumulateGrad kernels, else equal shares. Returns the
/// proxy's name.
std::string spread_over_gradients(const Graph& graph, BackwardPass& pass, std::int64_t total_bytes);

/// GPU tasks per gradient in the pass's optimizer step (a per-parameter optimizer launches the
/// same kernels for each parameter, in forward order), or 0 when they do not split evenly.
std::size_t update_tasks_per_gradient(const BackwardPass& pass);

/// The GPU tasks of the forward pass after `pass`, in stream order: from the optimizer step's last
/// update task along its stream up to `next` pass's first gradient (both left out). Empty when
/// the pass has no update tasks, `next` has no gradients, or the stream does not lead there.
std::vector<TaskId> next_forward(const Graph& graph, const BackwardPass& pass, const BackwardPass& next);

/// Where a forward pass (`forward`, next_forward) first uses each of the pass's parameters, in
/// forward order: the task at the same fraction of the forward's GPU time as the share of the
/// backward pass that was still to run when the parameter's gradient became ready (a layer's
/// backward takes about a fixed multiple of its forward).
std::vector<TaskId> forward_use_tasks(const Graph& graph, const BackwardPass& pass,
                                      const std::vector<TaskId>& forward);

/// A model's per-parameter element counts in forward (model.parameters()) order, from the JSON
/// file {"parameters": [{"name": "conv1.weight", "count": 9408}, ...]}. Throws Error naming the
/// file (as param_file) and what is wrong with it.
std::vector<std::int64_t> read_parameter_counts(const std::string& path);

/// Sets the pass's gradient sizes to `counts` (forward order) times `bytes_per_element`, rounded:
/// gradients become ready in reverse forward order. A pass without gradients is left alone; false,
/// with nothing set, when the pass's gradients are not one per count.
bool set_gradient_bytes(BackwardPass& pass, const std::vector<std::int64_t>& counts, double bytes_per_element);

// --- a traced DDP run: its buckets, and the copies DDP adds around them ---

/// One iteration's traced all-reduces: the buckets a DDP run launched in one backward pass (one
/// NCCL kernel each).
struct TracedPass {
  std::int32_t iteration = -1;  ///< index into Graph::iterations()
  TimeNs end_ns = 0;            ///< end of the iteration's window, relative to the origin
  std::vector<TaskId> allreduces;  ///< in launch order
  /// Each one's size from record_param_comms (the record's bytes over its kernels), kNone when
  /// the trace does not record it (Nsight).
  std::vector<std::int64_t> recorded_bytes;
};

/// The trace's all-reduce tasks grouped by iteration, in launch order (launch-call start); tasks
/// outside every iteration are in no pass. Empty for a trace without iterations.
std::vector<TracedPass> traced_passes(const Graph& graph, const TraceCollectives& collectives);

/// A device-to-device copy: a memcpy task named "DtoD" (Nsight, CUPTI) or "Device -> Device".
bool is_device_to_device_copy(const Graph& graph, TaskId task);

/// DDP's copy-back when gradient_as_bucket_view=False: once every bucket is reduced, the reducer
/// (on the thread that ran the backward pass and launched its all-reduces) copies each bucket's
/// reduced contents into every parameter's .grad, one device-to-device copy per parameter. They
/// are the device-to-device copies that thread launches after the pass's last all-reduce, up to
/// the end of the iteration.
std::vector<TaskId> copy_back_copies(const Graph& graph, const LaunchIndex& launches, const TracedPass& pass);

/// The copy-back (copy_back_copies) of each pass that moves exactly the pass's recorded
/// all-reduce bytes (each gradient once), or whose sizes the trace does not record; a pass whose
/// copies move other bytes is only counted.
struct CopyBack {
  std::vector<TaskId> copies;                ///< those of every pass that passes, pass after pass
  std::vector<std::size_t> copies_per_pass;  ///< per pass that passes
  std::vector<std::int64_t> bytes_per_pass;  ///< its copies' bytes (Task::bytes; unknown counts 0)
  std::size_t mismatched = 0;                ///< passes whose copies move other bytes than recorded
};
CopyBack checked_copy_back(const Graph& graph, const LaunchIndex& launches, const std::vector<TracedPass>& passes);

/// DDP's buffer broadcast at the start of every forward pass (broadcast_buffers=True): the NCCL
/// broadcast kernels launched inside an iteration, each with the copies that coalesce the buffers
/// into one flat tensor and back (PyTorch's broadcast_coalesced): the unbroken run of copy tasks
/// (device-to-device copies, kernels named "copy", as PyTorch's CatArrayBatchedCopy and copy
/// kernels are) of the broadcast's iteration that its thread launched right before and right after
/// it. By id.
std::vector<TaskId> buffer_broadcast_tasks(const Graph& graph, const LaunchIndex& launches);

/// Gradients [first, last) in ready order, all-reduced together once the last one is ready.
struct Bucket {
  std::size_t first = 0, last = 0;
  std::int64_t bytes = 0;
};

/// DDP's rule: fill in ready order and close a bucket once it holds at least its cap
/// (`first_cap` for the first bucket, `cap` after).
std::vector<Bucket> fill_buckets(const std::vector<Gradient>& gradients, std::int64_t first_cap, std::int64_t cap);

/// A bucket to all-reduce: the task after which it is ready, and its size.
struct ReadyBucket {
  TaskId ready = kNoTask;
  std::int64_t bytes = 0;
};

/// DDP's buckets of the pass's gradients (fill_buckets), each ready with its last gradient.
std::vector<ReadyBucket> gradient_buckets(const BackwardPass& pass, std::int64_t first_cap, std::int64_t cap);

/// The buckets the trace recorded in the pass without launching them (BackwardPass::
/// recorded_buckets: a one-GPU DDP run), each ready with the last GPU task its thread launched
/// before the record; a record with none before it is left out.
std::vector<ReadyBucket> ready_recorded_buckets(const BackwardPass& pass, const TraceCollectives& collectives,
                                                const LaunchIndex& launches);

/// A traced pass's all-reduces (in launch order) as DDP would bucket them under new caps:
/// fill_buckets over their sizes in `bytes` (all-reduce task -> size), so a bucket is a run of
/// consecutive traced all-reduces. Throws Error when one of them has no size.
std::vector<Bucket> rebucket_traced_pass(const TracedPass& pass, const std::map<TaskId, std::int64_t>& bytes,
                                         std::int64_t first_cap, std::int64_t cap);

// --- a DataLoader's batches (docs/scenarios/dataloader_workers.md) ---

inline constexpr std::string_view kLoaderRange = "enumerate(DataLoader)";

/// One `__next__` of the DataLoader on a CPU thread: the batch it takes and the tasks doing it.
struct BatchLoad {
  CpuRange range;
  std::vector<TaskId> tasks;  // CPU tasks inside the range, in recorded order
  /// A `_MultiProcessingDataLoaderIter`'s range: a worker process loaded the batch, the range is
  /// the main thread waiting for it and taking it (else the main thread loaded it in the range).
  bool in_workers = false;
};

/// The outermost DataLoader ranges of the trace with their CPU tasks, in time order. Reads the
/// graph only (non-const because Graph::select hands out a changeable TaskSet).
std::vector<BatchLoad> batch_loads(Graph& graph);

/// Where the main thread took one batch, as recorded.
struct BatchTake {
  /// The main-thread task that goes on once the batch is there: the first task of a DataLoader
  /// range (the wait is inside it), or the first task of a step opened after the fetch (the wait
  /// is the delay of an edge into it).
  TaskId task = kNoTask;
  /// The predecessor whose edge into `task` holds the wait (the largest delay), kNoTask when the
  /// wait is inside `task` or not recorded.
  TaskId wait_from = kNoTask;
  TimeNs gap_ns = -1;   ///< recorded time spent waiting and taking the batch; -1: not recorded
  TimeNs taken_ns = 0;  ///< when the main thread went on with the batch (relative to the origin)
};

/// One take per DataLoader range: the wait and the fetch are the range.
std::vector<BatchTake> takes_in_ranges(const std::vector<BatchLoad>& loads);
/// One take per iteration, for loops that open their step range after fetching the batch: the
/// wait is the delay of the edge into the iteration's first task, whatever its type.
std::vector<BatchTake> takes_before_steps(const Graph& graph);
/// Where the main thread took each batch: in the DataLoader ranges (takes_in_ranges), or before
/// each step when the trace has none (takes_before_steps).
std::vector<BatchTake> batch_takes(const Graph& graph, const std::vector<BatchLoad>& loads);

/// Per-batch load times inferred from a run recorded with `recorded` > 0 workers.
struct LoadEstimate {
  TimeNs fetch_ns = 0;          ///< the smallest recorded gap: taking a batch that was ready
  std::vector<TimeNs> load_ns;  ///< per batch: its own measurement where known, else typical_ns
  std::vector<bool> measured;   ///< per batch: load_ns came from its own waits
  std::vector<bool> waited_for; ///< per batch: the main thread waited for it
  TimeNs typical_ns = 0;        ///< median of the measured loads (of the upper bounds when none)
  std::size_t waited = 0;       ///< batches the main thread waited for
  std::size_t measured_count = 0;
  bool upper_bound = false;     ///< no batch measured: typical_ns is an upper bound
};

/// A batch was waited for when its gap exceeds the fetch by more than this. Taking a batch that
/// is ready costs 70 to 100 us of Python (the recorded minimum), but its hand-over through the
/// pin-memory thread can add a millisecond or so: the ResNet-50 workers4 trace, whose steps never
/// waited for data (the workers kept up), has `__next__` calls of 1.25 to 1.40 ms. Loads take tens
/// to thousands of ms.
inline constexpr TimeNs kWaitedMinNs = 2'000'000;

/// Batch b is loaded by worker b mod k. When the main thread waited for batches b - k and b, the
/// worker went straight from one to the other (it held b's indices: prefetch >= 2), so
/// load(b) = taken(b) - taken(b - k); between waits two batches apart, the two loads share the
/// interval evenly. Other batches take the median of those, within the bound their own wait or
/// their predecessor's gives.
LoadEstimate estimate_loads(const std::vector<BatchTake>& takes, std::size_t recorded);

/// When each of the k recorded workers started its first batch of the trace (relative to the
/// origin; may be negative). The window may open mid-stream, with the workers out of phase: worker
/// j's first batch that was waited for became ready when its wait ended, and the worker had been
/// loading its batches of the trace back to back until then. A worker never waited for was ready
/// with its first batch when the main thread took it.
std::vector<TimeNs> recorded_first_starts(const std::vector<BatchTake>& takes, const LoadEstimate& estimate,
                                          std::size_t recorded, TimeNs fetch_ns);

/// The main thread's waits for the batches it waited for (LoadEstimate::waited_for), as windows
/// [taken - gap, taken) of the thread of the first take, in batch order (by end, as batches are
/// taken one after another).
std::vector<RangeWindow> wait_windows(const Graph& graph, const std::vector<BatchTake>& takes,
                                      const std::vector<bool>& waited_for);

/// A CPU thread held idle across a whole window of another thread by a fixed delay, where the
/// trace shows no hand-off (an NVTX-only trace's autograd thread, whose backward launches follow
/// the main thread's backward() call, across a wait for data).
struct IdleAcross {
  TaskId from = kNoTask, to = kNoTask;  ///< the idle edge: finish-to-start, both on the idle thread
  /// The windows' thread's task that last started (recorded) before `to`: the thread resumed
  /// after it, as docs/graph.md's idle-gap rule infers between operator threads.
  TaskId waker = kNoTask;
  TimeNs lag_ns = 0;  ///< recorded time from the waker's end to `to`'s start, >= 0
};

/// The edges into tasks of CPU threads other than the windows' thread whose source ended before a
/// window began and whose delay spans it (the window that last ended before the target's recorded
/// start), in edges() order. `windows`: stretches of one thread's time, by end (wait_windows).
std::vector<IdleAcross> idle_across(const Graph& graph, const std::vector<RangeWindow>& windows);

}  // namespace daydream
