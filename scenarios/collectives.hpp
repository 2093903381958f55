#pragma once
// What the data-parallel scenarios (ddp, p3) share: the ring all-reduce cost model and its
// least-squares fit to the trace's own collectives, the collectives the trace records, where each
// gradient becomes ready in the backward pass and how big it is, DDP's bucketing, and the
// parameters both scenarios take. Models and formats: docs/scenarios/ddp.md.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daydream/graph.hpp"
#include "daydream/scenario.hpp"

namespace daydream::scenarios {

// --- the cost model ---

/// Bytes each GPU sends in a ring all-reduce of `bytes` over `ranks` GPUs: 2(n-1)/n * bytes.
double ring_traffic_bytes(std::int64_t ranks, double bytes);

/// Ring all-reduce time: latency + 2(n-1)/n * bytes * ns_per_byte.
struct RingCost {
  double latency_ns = 0;   ///< alpha: fixed cost of one collective
  double ns_per_byte = 0;  ///< beta = 1e9 / link bandwidth (bytes/s); 0 for an infinite link
  std::int64_t ranks = 1;  ///< n = machines * gpus
  /// 0 when ranks == 1 (one GPU has nothing to exchange); rounded to the nearest ns.
  TimeNs allreduce_ns(std::int64_t bytes) const;
};

/// One collective the trace measured: its size and its duration.
struct MeasuredCollective {
  std::int64_t bytes = 0;
  TimeNs duration_ns = 0;
};

/// duration = latency + ns_per_byte * 2(n-1)/n * bytes, fitted by least squares.
struct RingFit {
  double latency_ns = 0;
  double ns_per_byte = 0;
  double rms_residual_ns = 0;  ///< root mean square of (measured - fitted)
  double r_squared = 0;        ///< share of the variance of the durations the fit explains
  std::size_t samples = 0;
  std::size_t distinct_sizes = 0;
};

/// Fits duration = latency + ns_per_byte * traffic to (traffic bytes, duration) samples by least
/// squares; nullopt with fewer than two distinct traffic sizes.
std::optional<RingFit> fit_latency_bandwidth(const std::vector<std::pair<double, TimeNs>>& samples);

/// Fits the ring model to measured collectives of `ranks` GPUs; nullopt when fewer than two
/// distinct sizes (a line needs two points) or ranks < 2 (no traffic to fit).
std::optional<RingFit> fit_ring(const std::vector<MeasuredCollective>& samples, std::int64_t ranks);

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

/// The task after `task` on its stream (its gpu_sequential successor on the same unit), or kNoTask.
TaskId stream_successor(const Graph& graph, TaskId task);

/// Finds the backward passes: AccumulateGrad ranges grouped by iteration (ProfilerStep; between
/// optimizer steps when the trace marks none). Gradient sizes are left at 0 (assign_sizes).
std::vector<BackwardPass> find_backward_passes(const Graph& graph, const TraceCollectives& collectives);

/// Sets every Gradient::bytes from, in this order: the param_file parameter, the params
/// parameter, or the trace's recorded all_reduce sizes of each pass (spread over the gradients by
/// a proxy). Throws Error naming `scenario` and both parameters when none is available. Returns
/// a note saying which source (and proxy) was used.
std::string assign_sizes(const Graph& graph, std::vector<BackwardPass>& passes, const ScenarioParams& params,
                         std::string_view scenario);

/// The model's gradient bytes from param_file or params (times bytes_per_param), kNone when
/// neither is given.
std::int64_t given_total_bytes(const ScenarioParams& params, std::string_view scenario);

/// Splits `total_bytes` over `weights` in proportion (exactly: the parts sum to total_bytes).
std::vector<std::int64_t> spread_bytes(std::int64_t total_bytes, const std::vector<double>& weights);

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

/// DDP's buffer broadcast at the start of every forward pass (broadcast_buffers=True): the NCCL
/// broadcast kernels launched inside an iteration, each with the copies that coalesce the buffers
/// into one flat tensor and back (PyTorch's broadcast_coalesced): the unbroken run of copy tasks
/// (device-to-device copies, kernels named "copy", as PyTorch's CatArrayBatchedCopy and copy
/// kernels are) of the broadcast's iteration that its thread launched right before and right after
/// it. By id.
std::vector<TaskId> buffer_broadcast_tasks(const Graph& graph, const LaunchIndex& launches);

// --- DDP buckets ---

/// Gradients [first, last) in ready order, all-reduced together once the last one is ready.
struct Bucket {
  std::size_t first = 0, last = 0;
  std::int64_t bytes = 0;
};

/// DDP's rule: fill in ready order and close a bucket once it holds at least its cap
/// (`first_cap` for the first bucket, `cap` after).
std::vector<Bucket> fill_buckets(const std::vector<Gradient>& gradients, std::int64_t first_cap, std::int64_t cap);

// --- what ddp and p3 share ---

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

/// The trace's all-reduce communication tasks (NCCL kernels) inside a record_param_comms range.
std::vector<TaskId> traced_allreduce_tasks(const TraceCollectives& collectives);

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

/// A new communication channel unit named `name` (made unique with a suffix if taken).
UnitId add_comm_channel(Graph& graph, const std::string& name);

/// "25.2 MB" style size for task names and notes.
std::string format_bytes(double bytes);

}  // namespace daydream::scenarios
