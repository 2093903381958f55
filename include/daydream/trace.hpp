#pragma once
/// @file trace.hpp
/// @brief The format-independent trace model every importer produces (Kineto JSON today; Nsight
/// SQLite and the CUPTI collector plug in beside it).
///
/// A Trace is a flat list of timed events on lanes (CPU threads, GPU streams) plus the report of
/// everything odd the importer met. Times are integer nanoseconds on the trace's own clock.

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daydream/import_stats.hpp"

namespace daydream {

/// Transparent hash for string interning (lookups by string_view).
struct StringIndexHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

/// Nanoseconds: every time and duration in daydream carries this unit.
using TimeNs = std::int64_t;

/// The times daydream accepts (docs/formats.md, "Times daydream accepts"). Every start and end a
/// trace gives lies strictly within +-kMaxTraceTimeNs (2^62 ns, 146 years: epoch nanoseconds fit
/// until 2116), a trace spans at most kMaxTraceTimeNs, and every duration, recorded or set by a
/// what-if, is at most kMaxTaskDurationNs (one day). Readers refuse other values naming the file,
/// event and field; with them, the differences and sums the graph builder, the simulator and the
/// reports make fit in 64 bits (the simulator checks its clock too).
inline constexpr TimeNs kMaxTraceTimeNs = TimeNs{1} << 62;
inline constexpr TimeNs kMaxTaskDurationNs = TimeNs{86'400} * 1'000'000'000;
/// The most events a trace file may hold (2^31 - 1): a task names the event it came from by a
/// 32-bit index (Task::source_event). Readers refuse a file with more, naming it.
inline constexpr std::int64_t kMaxTraceEvents = 0x7fffffff;
/// Whether a time lies strictly within +-kMaxTraceTimeNs: the one rule every reader and the
/// simulator apply to a start, an end or a release.
constexpr bool is_trace_time(TimeNs ns) { return ns > -kMaxTraceTimeNs && ns < kMaxTraceTimeNs; }

enum class EventKind : std::uint8_t {
  cpu_op,           ///< framework operator (Kineto `cpu_op`, legacy `Operator`)
  user_annotation,  ///< `record_function` range, `ProfilerStep#N`, optimizer steps
  python_function,  ///< Python frame (`with_stack`), including `nn.Module: Name`
  runtime,          ///< CUDA runtime API call (`cuda_runtime`, legacy `Runtime`)
  driver,           ///< CUDA driver API call (`cuda_driver`)
  kernel,           ///< GPU kernel (`kernel`, legacy `Kernel`)
  memcpy,           ///< GPU copy (`gpu_memcpy`, legacy `Memcpy`)
  memset,           ///< GPU memset (`gpu_memset`, legacy `Memset`)
  cuda_sync,        ///< CUPTI synchronization record (`cuda_sync`); joins its runtime call by correlation
  gpu_annotation,   ///< annotation projected on a GPU stream (`gpu_user_annotation`); not simulated
};
std::string_view to_string(EventKind kind);
bool is_gpu_activity(EventKind kind);  ///< kernel, memcpy or memset
bool is_cpu_range(EventKind kind);     ///< cpu_op, user_annotation or python_function
bool is_api_call(EventKind kind);      ///< runtime or driver

/// What a CUPTI synchronization record says it waited for.
enum class SyncKind : std::uint8_t { none, stream_sync, event_sync, context_sync, stream_wait_event, unknown };

enum class LaneKind : std::uint8_t { cpu_thread, gpu_stream };

/// A CPU thread (pid, tid) or a GPU stream (device, stream).
struct Lane {
  LaneKind kind = LaneKind::cpu_thread;
  std::int64_t process = 0;  ///< pid for CPU threads, device id for GPU streams
  std::int64_t thread = 0;   ///< tid for CPU threads, stream id for GPU streams
  std::string name;          ///< "thread 25738 (python)", "GPU 0 stream 7"
};

inline constexpr std::int64_t kNone = -1;

struct TraceEvent {
  TimeNs start_ns = 0;
  TimeNs duration_ns = 0;
  std::int64_t correlation = kNone;        ///< CUDA correlation id (API calls, GPU activities, syncs)
  std::int64_t external_id = kNone;        ///< Kineto external id (op <-> API call)
  std::int64_t bytes = kNone;              ///< memcpy/memset size
  std::int64_t sequence_number = kNone;    ///< autograd sequence number (cpu_op)
  std::int64_t sync_stream = kNone;        ///< cuda_sync: the stream synchronized or made to wait
  std::int64_t wait_on_stream = kNone;     ///< cuda_sync: the stream of the awaited event
  std::int64_t wait_record_correlation = kNone;  ///< cuda_sync: correlation of the awaited cudaEventRecord
  std::uint32_t name = 0;                  ///< index into Trace::strings
  std::uint32_t lane = 0;                  ///< index into Trace::lanes
  std::uint32_t source_index = 0;          ///< index of the event in the file (for messages)
  std::int32_t collective = -1;            ///< index into Trace::collectives, or -1
  std::int32_t launch = -1;                ///< kernels: index into Trace::launches, or -1 (not recorded)
  EventKind kind = EventKind::cpu_op;
  SyncKind sync_kind = SyncKind::none;

  TimeNs end_ns() const { return start_ns + duration_ns; }
};

/// What a `record_param_comms` operator says about one collective call.
struct CollectiveInfo {
  std::string name;            ///< "all_reduce", "broadcast", ...
  std::int64_t in_elements = kNone;
  std::int64_t out_elements = kNone;
  std::int64_t group_size = kNone;
  std::string dtype;
  std::string process_group;
  /// From an `nccl:<op>` annotation (name, shape and type of its input) rather than a
  /// `record_param_comms` event; build_graph folds it into the record around it.
  bool from_annotation = false;
};

/// How a kernel was launched (its CUPTI kernel record): what each of its blocks asks of an SM.
struct LaunchConfig {
  std::int64_t blocks = 0;                ///< grid size: gridX * gridY * gridZ
  std::int32_t threads_per_block = 0;     ///< blockX * blockY * blockZ
  std::int32_t registers_per_thread = 0;
  std::int32_t shared_memory_bytes = 0;   ///< per block, static + dynamic
  /// Shared memory per SM configured for the launch (the carveout, Nsight's
  /// `sharedMemoryExecuted`); 0 when the trace does not say (the device's maximum is assumed).
  std::int32_t shared_memory_config_bytes = 0;
};

/// What one SM of a GPU holds (Nsight `TARGET_INFO_GPU`, Kineto `deviceProperties`): the limits
/// of the CUDA occupancy rules. 0 means not recorded; daydream then takes the value the compute
/// capability implies where there is one (docs/simulator.md, "GPU occupancy").
struct GpuResources {
  std::int64_t device = kNone;            ///< device id, as GPU lanes name it
  std::string name;                       ///< as recorded ("NVIDIA A100-SXM4-40GB"); empty if not
  double memory_bytes = 0;                ///< device memory (totalGlobalMem, totalMemory); 0 if not recorded
  std::int32_t sm_count = 0;
  std::int32_t compute_major = 0;
  std::int32_t compute_minor = 0;
  std::int32_t warp_size = 0;
  std::int32_t max_threads_per_sm = 0;
  std::int32_t max_blocks_per_sm = 0;
  std::int32_t registers_per_sm = 0;
  std::int32_t registers_per_block = 0;
  std::int32_t shared_memory_per_sm = 0;  ///< bytes, at the largest carveout
};

/// One input of an operator as `record_shapes` writes it (Kineto args "Input Dims", "Input type").
struct OperandShape {
  /// A tensor's dimensions (empty for a 0-d tensor and for what is not a tensor: a scalar, a list
  /// of integers, None); for a tensor list, one entry: the elements of all its tensors.
  std::span<const std::int64_t> dims;
  /// As recorded: a tensor's element type ("float", "c10::Half", "long int"), or what the input is
  /// ("Scalar", "Int", "GenericList", "TensorList"); empty when the trace records no type.
  std::string_view type;
  bool tensor_list = false;  ///< a list of tensors (nested "Input Dims": [[[2, 3], [4]]])
};

/// The inputs that operators record with `record_shapes`, in flat storage (a few integers per
/// input, the types interned): the work per kernel of the GPU model (daydream/roofline.hpp) reads
/// FLOPs and bytes off them. Only operators with at least one non-empty shape are kept.
class ShapeTable {
 public:
  /// Starts the record of an operator, `key` naming it (Trace: its position in Trace::events;
  /// Graph: its file index, Task::op_event); the inputs added next are its.
  void begin_operator(std::int64_t key);
  /// Adds an input to the operator begun last.
  void add_operand(std::span<const std::int64_t> dims, std::string_view type, bool tensor_list = false);
  /// Adds operator `op` of `other` with all its inputs, under `key`.
  void append(const ShapeTable& other, std::size_t op, std::int64_t key);

  std::size_t size() const { return operators_.size(); }
  bool empty() const { return operators_.empty(); }
  std::int64_t key(std::size_t op) const { return operators_[op].key; }
  std::size_t operand_count(std::size_t op) const;
  OperandShape operand(std::size_t op, std::size_t input) const;
  /// Bytes the table holds, for memory checks.
  std::size_t memory_bytes() const;
  /// Keeps each distinct list of inputs once, shared by the operators that recorded it (every
  /// step of a training loop records the same shapes again), and lets go of the room its arrays
  /// kept to grow: for a table that is complete (a graph's).
  void shrink_to_fit();

 private:
  struct Operator {
    std::int64_t key;
    std::uint32_t first_operand;
    std::uint32_t operand_count;  ///< its inputs are operands_[first_operand, + operand_count)
  };
  struct Operand {
    std::uint32_t first_dim;
    std::uint16_t rank;
    std::uint8_t type;  ///< index into types_
    bool tensor_list;
  };
  std::vector<Operator> operators_;
  std::vector<Operand> operands_;
  std::vector<std::int64_t> dims_;
  std::vector<std::string> types_{std::string()};  ///< [0]: no type; a few dozen at most (255 kept)
};

/// A flow arrow of the Chrome trace format (`ac2g`/`async` launch flows, `fwdbwd` links).
struct Flow {
  std::uint32_t category = 0;  ///< index into Trace::strings ("ac2g", "fwdbwd", ...)
  std::int64_t id = 0;
  TimeNs time_ns = 0;
  std::int64_t process = 0;    ///< pid of the event the flow binds to
  std::int64_t thread = 0;     ///< tid (or stream) of the event the flow binds to
  bool is_start = true;        ///< `ph: s` (true) or `ph: f` (false)
};

/// A stretch during which a CPU thread was not running (switched out by the OS scheduler:
/// blocked on a futex, a queue, I/O, or preempted), from Nsight's SCHED_EVENTS.
struct OffCpuInterval {
  std::uint32_t lane = 0;  ///< index into Trace::lanes
  TimeNs start_ns = 0;     ///< switched out
  TimeNs end_ns = 0;       ///< switched back in
};

/// One counter of the import report.
struct ImportStat {
  std::string key;           ///< stable snake_case identifier
  Severity severity = Severity::info;
  std::string description;   ///< what the counter means and what daydream did about it
  std::int64_t count = 0;
  std::int64_t first_event = kNone;  ///< source index of the first event counted, if any
  TimeNs total_ns = 0;               ///< time the counted occurrences cover, where they are stretches of time
};

/// Everything odd met while importing and building a graph, counted instead of dropped silently.
/// Counters are the stats of the catalogue (daydream/import_stats.hpp), listed in the order they
/// first occur; the first occurrence gives the counter its first event (a source index).
/// A suffix for a stat that is not keyed (or none for one that is), likewise a detail, is a bug
/// of the caller: std::logic_error.
class ImportReport {
 public:
  /// Counts one occurrence of `id`, a plain stat.
  void count(stats::Id id, std::int64_t event = kNone);
  /// Counts one occurrence of `id`, a keyed stat, under "<key>:<suffix>" ("unsupported_phase:B").
  void count(stats::Id id, std::string_view suffix, std::int64_t event = kNone);
  /// Counts one occurrence of `id`, a detailed stat: the first occurrence's detail fills the slot.
  void count(stats::Id id, stats::Detail detail, std::int64_t event = kNone);
  /// As count(), adding `duration_ns` to the counter's total_ns (time kept as a delay, say).
  void count_time(stats::Id id, TimeNs duration_ns, std::int64_t event = kNone);
  void count_time(stats::Id id, std::string_view suffix, stats::Detail detail, TimeNs duration_ns,
                  std::int64_t event = kNone);
  /// Adds the count of `stat`, a counter of another report (a rank's, merged into a job's), to
  /// the counter of the same key, made with its severity and description if this report lacks
  /// it. The first event is not carried over: it indexes another trace.
  void add(const ImportStat& stat);
  std::int64_t get(std::string_view key) const;
  TimeNs total_ns(std::string_view key) const;
  const std::vector<ImportStat>& stats() const { return stats_; }

 private:
  // The counter of `id` (under "<key>:<suffix>" for a keyed stat), made at its first occurrence.
  ImportStat& counter(stats::Id id, std::optional<std::string_view> suffix, std::optional<std::string_view> detail,
                      std::int64_t event);
  ImportStat* find(const std::string& key);
  ImportStat& insert(ImportStat stat);

  std::vector<ImportStat> stats_;
  std::unordered_map<std::string, std::size_t> index_;
  /// Per stat that is not keyed: 1 + the index of its counter in stats_, 0 before it is made, so
  /// that counting one (once per task for some) neither builds nor hashes its key.
  std::array<std::uint32_t, stats::kNumStats> unkeyed_{};
};

/// The most ranks a job may have (2^20, past the largest training jobs run so far): a trace's
/// world_size and a what-if's rank counts are refused beyond it, before anything is sized by them.
inline constexpr std::int64_t kMaxWorldSize = std::int64_t{1} << 20;

struct TraceMetadata {
  std::string format;          ///< "kineto-json" or "kineto-json-legacy"
  std::vector<std::string> devices;  ///< GPU names from deviceProperties
  std::vector<GpuResources> gpus;    ///< SM resources per device, where the trace records them
  std::int64_t rank = kNone;
  std::int64_t world_size = kNone;
  std::int64_t schema_version = kNone;
};

/// A whole imported trace. Events keep file order; builders sort what they need.
struct Trace {
  std::string path;
  TraceMetadata metadata;
  std::vector<TraceEvent> events;
  std::vector<Lane> lanes;
  std::vector<std::string> strings;
  std::vector<CollectiveInfo> collectives;
  std::vector<Flow> flows;
  std::vector<LaunchConfig> launches;  ///< launch configurations of kernels (TraceEvent::launch)
  /// Off-CPU stretches of the CPU lanes that have scheduling data, sorted by lane then start;
  /// `scheduled_lanes` lists those lanes (a lane without data says nothing about its waits).
  std::vector<OffCpuInterval> off_cpu;
  std::vector<std::uint32_t> scheduled_lanes;
  /// The operand shapes of the cpu_ops that record them (Kineto `record_shapes`), keyed by the
  /// event's position in `events`; empty for traces without shapes.
  ShapeTable shapes;
  ImportReport report;
  std::uint64_t bytes_read = 0;  ///< size of the decoded (uncompressed) input

  std::string_view name_of(const TraceEvent& event) const { return strings[event.name]; }
};

}  // namespace daydream
