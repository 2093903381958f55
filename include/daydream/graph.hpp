#pragma once
/// @file graph.hpp
/// @brief The kernel-level dependency graph: tasks on execution units joined by typed edges.
///
/// Built from a Trace by build_graph(). Tasks are CPU work segments and CUDA API calls on CPU
/// threads, kernels/copies/memsets on GPU streams, and communication (collective) tasks. Edges
/// carry one of the dependency types below, a timing (finish-to-start or start-to-start) and a
/// delay in nanoseconds. Each task's out- and in-edges are kept in the order they were added.
///
/// @code
///   auto graph = daydream::build_graph(daydream::load_trace("trace.json.gz"));
///   std::cout << graph.num_tasks() << " tasks, " << graph.num_edges() << " edges\n";
/// @endcode

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "daydream/trace.hpp"

namespace daydream {

using TaskId = std::uint32_t;
using UnitId = std::uint32_t;
inline constexpr TaskId kNoTask = 0xffffffffu;
/// The most tasks a graph may hold (2^27, tens of GB of memory): add_task and a what-if that
/// grows a graph (scale_out) refuse to pass it. Real traces hold 10^4 to 10^6 tasks a rank.
inline constexpr std::size_t kMaxGraphTasks = std::size_t{1} << 27;

enum class UnitKind : std::uint8_t { cpu_thread, gpu_stream, comm_channel };
std::string_view to_string(UnitKind kind);

/// An execution unit runs one task at a time.
struct Unit {
  UnitKind kind = UnitKind::cpu_thread;
  std::string name;
  std::int64_t process = kNone;  ///< pid (CPU) or device (GPU)
  std::int64_t thread = kNone;   ///< tid (CPU) or stream id (GPU)
  /// A CPU thread making only CUDA calls (NCCL watchdog, callbacks): simulated, but never the
  /// end of the critical path.
  bool background = false;
  /// The rank whose trace the unit came from, in a multi-rank job graph (job.hpp); else kNone.
  std::int64_t rank = kNone;
};

enum class TaskKind : std::uint8_t {
  cpu,            ///< CPU work of an operator/annotation between CUDA calls (one segment)
  runtime,        ///< CUDA runtime/driver API call (or the waiting half of a blocking call)
  kernel,         ///< GPU kernel
  memcpy,         ///< GPU copy
  memset,         ///< GPU memset
  communication,  ///< collective communication (NCCL kernel, or a task inserted on a channel)
};
inline constexpr std::size_t kTaskKindCount = 6;
std::string_view to_string(TaskKind kind);
bool is_gpu(TaskKind kind);

/// The dependency types. The first six are the Daydream paper's; `cross_stream` is ours.
enum class EdgeType : std::uint8_t {
  cpu_sequential,  ///< consecutive tasks on one CPU thread
  gpu_sequential,  ///< consecutive tasks on one GPU stream
  launch,          ///< API call -> the GPU task it launched (by correlation id)
  sync,            ///< GPU task -> the blocking CPU call that waits for it
  communication,   ///< CPU/GPU work <-> a collective communication task
  cross_thread,    ///< CPU -> CPU across threads (autograd thread hand-off, join)
  cross_stream,    ///< GPU -> GPU across streams (cudaStreamWaitEvent)
};
inline constexpr std::size_t kEdgeTypeCount = 7;
std::string_view to_string(EdgeType type);
/// cpu_sequential or gpu_sequential: the order of one unit's chain.
constexpr bool is_sequential(EdgeType type) { return type == EdgeType::cpu_sequential || type == EdgeType::gpu_sequential; }

/// When the edge's delay starts counting: at the source's end (usual) or at its start (launch:
/// a kernel can start while its launch call is still returning).
enum class Timing : std::uint8_t { finish_to_start, start_to_start };

/// Written `{type, timing, delay_ns, inferred}` (trailing ones may be left out); the delay is
/// stored first so that an edge takes 16 bytes, not 24 (a graph holds about one per task).
struct Edge {
  constexpr Edge(EdgeType type_ = EdgeType::cpu_sequential, Timing timing_ = Timing::finish_to_start,
                 TimeNs delay_ns_ = 0, bool inferred_ = false)
      : delay_ns(delay_ns_), type(type_), timing(timing_), inferred(inferred_) {}
  TimeNs delay_ns = 0;  ///< minimum time between the source's end (or start) and the target's start
  EdgeType type = EdgeType::cpu_sequential;
  Timing timing = Timing::finish_to_start;
  bool inferred = false;  ///< true when the trace does not record the dependency explicitly
};
static_assert(sizeof(Edge) <= 16, "an edge packs into 16 bytes");

/// Phase of a training iteration (filled by layer mapping; unknown until then).
/// `data_loading` is the main thread's work inside the DataLoader's `__next__` (loading and
/// collating a batch without worker processes).
enum class Phase : std::uint8_t { unknown, forward, backward, update, data_loading };
inline constexpr std::size_t kPhaseCount = 5;
std::string_view to_string(Phase phase);

/// A task's fields, as Graph::task returns them. A graph does not keep this struct: it keeps the
/// fields the simulator reads as columns (TaskColumns) and the others as a 48-byte record
/// (detail::TaskRecord), so a task costs it 70 bytes, and a what-if copies only the part it changes.
struct Task {
  TaskKind kind = TaskKind::cpu;
  Phase phase = Phase::unknown;
  bool blocking = false;             ///< a CPU call that waits for GPU work (sync edges end here)
  bool removed = false;              ///< removed by a transformation: no edges, not simulated
  UnitId unit = 0;
  std::uint32_t name = 0;            ///< index into Graph::strings()
  std::int32_t iteration = -1;       ///< index into Graph::iterations(), or -1
  TimeNs duration_ns = 0;
  /// Earliest start, relative to the graph origin; only tasks without predecessors use it.
  TimeNs release_ns = 0;
  TimeNs recorded_start_ns = 0;      ///< start in the trace, relative to the origin (reference only)
  std::int64_t correlation = kNone;  ///< CUDA correlation id (API calls and GPU tasks)
  /// File index of the trace event this task came from (TraceEvent::source_index; a trace holds
  /// at most kMaxTraceEvents), or kNone.
  std::int32_t source_event = kNone;
  /// Innermost operator around the task (CPU) or around its launch call (GPU), as a file index.
  std::int32_t op_event = kNone;
  std::uint32_t op_name = 0;         ///< name of that operator (index into strings), 0 = none
  std::uint32_t layer = 0;           ///< layer name (index into strings), 0 = none
  std::int64_t bytes = kNone;        ///< memcpy/memset size
  /// A kernel's launch configuration: index into Graph::launch_configs(), or -1 (not recorded,
  /// not a kernel, or inserted by a transformation).
  std::int32_t launch = -1;
};
static_assert(sizeof(Task) <= 80, "Task packs into 80 bytes (the fields grouped by size): a value cheap to return");

/// What the trace shows holding a task back besides its edges (docs/simulator.md). Few tasks of a
/// trace have one and most traces none, so the graph keeps them beside the task records
/// (Graph::holds), not in them.
struct TaskHolds {
  /// GPU occupancy: SM work that the trace shows held back by a kernel of another stream that
  /// filled the GPU: that kernel, and the share of its duration after which it let this task in
  /// (its last wave leaving room). The simulator makes the task wait for that share of the
  /// kernel's simulated duration when the kernel started first. kNoTask when the trace shows no
  /// such hold.
  TaskId sm_held_by = kNoTask;
  double sm_let_in = 0.0;
  /// The CUDA driver lock: a CUDA call that the trace shows blocked while another thread's call
  /// held the driver (`driver_lock_waits`): that call. A lock is mutual exclusion, not an order:
  /// the simulator makes this call wait for that call's end only when that call's thread reached
  /// it first. kNoTask when the trace shows no such wait.
  TaskId lock_held_by = kNoTask;

  bool any() const { return sm_held_by != kNoTask || lock_held_by != kNoTask; }
  bool operator==(const TaskHolds&) const = default;
};

/// How an iteration's measured (and simulated) time is taken. One definition serves every
/// output (replay, predict, sweep, validate, bottleneck, Python): the iteration's window on the
/// marking thread, measured from the trace and simulated over the same window (see
/// simulated_iteration_spans in daydream/report/replay.hpp).
enum class IterationMeasure : std::uint8_t {
  /// The marking range itself (`ProfilerStep#N`: the profiler opens each step where the previous
  /// one closed, so the wait for the next batch is inside a range).
  range,
  /// From the range's start to the next range's start on the marking thread: a loop that opens
  /// its range after fetching the batch leaves the wait for data between ranges, and it belongs
  /// to the iteration. The last range has no next start and is measured as its range.
  start_to_start,
  /// The fallback where no range marks steps: from the end of one optimizer step
  /// (`Optimizer.step#...`, which torch.optim records) to the end of the next, so n optimizer
  /// steps give n - 1 iterations, each holding one forward, backward and update.
  end_to_end,
};
std::string_view to_string(IterationMeasure measure);

/// One measured iteration (a `ProfilerStep#N`, `step N`, ... range): its window and the tasks on
/// its thread that open and close it.
struct Iteration {
  std::string name;
  TimeNs measured_start_ns = 0;  ///< relative to the origin
  TimeNs measured_ns = 0;        ///< by the graph's IterationRule::measure
  TaskId first_task = kNoTask;   ///< first task of the window on its thread
  TaskId last_task = kNoTask;    ///< last task of the window on its thread
  /// Measured to the next iteration's start (IterationMeasure::start_to_start or end_to_end, not
  /// the last).
  bool to_next_start = false;
  /// Where the window's edges lie from the tasks that anchor them in a simulation: the window
  /// opens open_offset_ns before its thread's first task starts, and (when not measured to the
  /// next start) closes close_offset_ns after its thread's last task ends. Measured at build, so
  /// that the replay of the unmodified graph gives each measured time to the ns.
  TimeNs open_offset_ns = 0;
  TimeNs close_offset_ns = 0;
};

/// Which ranges became iterations, and how they are measured (see docs/graph.md, "Roots and iterations").
struct IterationRule {
  std::string pattern;  ///< the user's regular expression (GraphOptions::iterations), or empty
  std::string form;     ///< what matched: "ProfilerStep#N", "step N", ..., or the user's pattern
  IterationMeasure measure = IterationMeasure::range;
  std::string thread;   ///< the marking thread (unit name); empty without iterations
};

/// Per-trace constants for delays the trace cannot show per edge ("natural" latencies),
/// measured as medians over the cases where each one is the binding constraint.
struct Calibration {
  /// Launch latency per GPU task kind (kernel, memcpy, memset, communication): call start ->
  /// GPU start when the stream was idle.
  std::array<TimeNs, kTaskKindCount> launch_latency_ns{};
  TimeNs gpu_gap_ns = 0;  ///< gap between back-to-back tasks on one stream
  std::int64_t launch_samples = 0;
  std::int64_t gap_samples = 0;
  /// GPU occupancy, a check of the model (the simulator does not read it): how many kernels
  /// that filled the GPU the trace shows holding other streams' work, and the median of how
  /// long before its end each let the first of that work in, in its block times (duration /
  /// waves). The last-wave model predicts 1. 0 when the trace shows no such hold.
  std::int64_t occupancy_holders = 0;
  double occupancy_let_in_waves = 0.0;
};

/// Options of graph construction; defaults are what `daydream replay` uses.
struct GraphOptions {
  /// Ranges whose name this (RE2) regular expression finds become iterations (measured
  /// start to start); empty: the default forms `ProfilerStep#N`, `step N`, `iteration N`,
  /// `iter N` (docs/graph.md, "Roots and iterations").
  std::string iterations;
  /// A CPU thread idle for longer than this is waiting, not working: its next task may be woken
  /// by another thread (cross_thread edges are inferred only across such gaps).
  TimeNs thread_idle_ns = 50'000;
  /// The longest wake-up latency accepted for an inferred cross_thread edge.
  TimeNs wake_window_ns = 2'000'000;
  /// Inferred edges that the timestamps contradict by more than this are dropped (and counted).
  TimeNs contradiction_tolerance_ns = 2'000;
  /// A launch call longer than this many times the trace's median launch call (and than
  /// launch_queue_min_ns) that returns within launch_queue_window_ns of a GPU task's end waited
  /// for a slot in the full launch queue: it gets a sync edge from that task.
  double launch_queue_factor = 20.0;
  TimeNs launch_queue_min_ns = 50'000;
  TimeNs launch_queue_window_ns = 50'000;
};

/// A named CPU range of the trace (operator, annotation, ProfilerStep, DataLoader, optimizer
/// step) on one thread, kept so that transformations can select the tasks inside it.
struct CpuRange {
  std::uint32_t name = 0;  ///< index into Graph::strings()
  UnitId unit = 0;
  TimeNs start_ns = 0;     ///< relative to the origin
  TimeNs end_ns = 0;
  /// Its file index: Task::source_event of the `cpu` tasks that are its own time (kNone: unknown).
  std::int64_t event = kNone;
};

/// A collective the trace records on a CPU thread (`record_param_comms`, completed by the
/// `nccl:<op>` annotation inside it; or such an annotation alone): what it moved and when.
struct CollectiveRecord {
  CollectiveInfo info;
  UnitId unit = 0;       ///< the CPU thread of the record
  TimeNs start_ns = 0;   ///< relative to the origin
  TimeNs end_ns = 0;
};

/// An operator that recorded its inputs' shapes (Kineto `record_shapes`), as the graph keeps it
/// for the work per kernel of the GPU model (daydream/roofline.hpp, docs/gpu_model.md).
struct OperatorRecord {
  std::int64_t event = kNone;  ///< its file index: Task::op_event of the tasks inside it
  std::uint32_t name = 0;      ///< index into Graph::strings()
  /// The innermost recorded operator around it on its thread (index into Graph::operators()), or -1.
  std::int32_t parent = -1;
  /// Autograd sequence number (kNone without): a backward node shares its forward operator's.
  std::int64_t sequence_number = kNone;
  std::uint32_t shapes = 0;    ///< its inputs: operator index into Graph::operator_shapes()
};

struct GraphStorage;  // the edges (an EdgeStore) and topological ranks, private to lib/graph
struct JobLayout;     // job.hpp

struct EdgeTable;     // the engine's flat copy of the edges, private to lib/graph and lib/simulate

/// A non-owning reference to a callable `bool(TaskId neighbor, EdgeRef edge)`: what the graph's
/// visitors take, so that a walk never allocates (a lambda's captures stay where they are).
template <class EdgeRef>
class BasicNeighborVisitor {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, BasicNeighborVisitor>>>
  BasicNeighborVisitor(F&& f)  // NOLINT(google-explicit-constructor): lambdas convert implicitly
      : object_(const_cast<void*>(static_cast<const void*>(&f))), call_([](void* o, TaskId t, EdgeRef e) {
          return static_cast<bool>((*static_cast<std::remove_reference_t<F>*>(o))(t, e));
        }) {}
  bool operator()(TaskId task, EdgeRef edge) const { return call_(object_, task, edge); }

 private:
  void* object_;
  bool (*call_)(void*, TaskId, EdgeRef);
};
using NeighborVisitor = BasicNeighborVisitor<const Edge&>;
using EdgeUpdater = BasicNeighborVisitor<Edge&>;  ///< may change the edges it visits

namespace detail {

/// Sets `value` aside in `spare` when nothing else holds it, so that its memory serves a later
/// copy (the copy-on-write holders below and GraphStorage's edge table); either way `value` goes.
template <class T, class U>
void keep_if_sole(std::shared_ptr<U>& value, std::shared_ptr<T>& spare) {
  if (value.use_count() == 1) spare = std::const_pointer_cast<T>(std::move(value));
  value.reset();
}

/// Makes `value` (not null) its holder's own: a value copies share is copied, into the memory of
/// `spare` where there is one (T's copy-assignment: vectors keep their capacity).
template <class T>
void unshare(std::shared_ptr<T>& value, std::shared_ptr<T>& spare) {
  if (value.use_count() <= 1) return;
  if (spare) *spare = *value, value = std::move(spare);
  else value = std::make_shared<T>(*value);
}

}  // namespace detail

/// A value computed from a graph on demand and shared by its copies: the first reader builds it
/// (thread-safe); a change of the graph updates or drops it through slot().
template <class T>
class SharedCache {
 public:
  SharedCache() = default;
  SharedCache(const SharedCache& other) : value_(other.get()) {}
  SharedCache(SharedCache&& other) noexcept : value_(std::move(other.value_)) {}
  /// Keeps aside a value that only this cache held, for unshared() to reuse its memory (a
  /// cache of a const value is never changed, so keeps none).
  SharedCache& operator=(const SharedCache& other) {
    if (this == &other) return *this;
    std::shared_ptr<T> value = other.get();
    if constexpr (!std::is_const_v<T>)
      if (value != value_) detail::keep_if_sole(value_, spare_);
    value_ = std::move(value);
    return *this;
  }
  SharedCache& operator=(SharedCache&& other) noexcept {
    value_ = std::move(other.value_);
    return *this;
  }
  std::shared_ptr<T> get() const {
    std::lock_guard lock(mutex_);
    return value_;
  }
  /// The value, built by `make` if absent.
  template <class Make>
  std::shared_ptr<T> get_or_make(Make&& make) const {
    std::lock_guard lock(mutex_);
    if (!value_) value_ = make();
    return value_;
  }
  /// For the owner's changes, which have the graph to themselves (no lock).
  std::shared_ptr<T>& slot() { return value_; }
  /// The value without the lock, for a reader that knows it is built (null otherwise) and that
  /// no change of the owner runs meanwhile.
  T* peek() const { return value_.get(); }
  /// The value for the owner's change (null when none is built): a value copies share is copied
  /// first, into the memory of one this cache was assigned over where there is one (T's
  /// copy-assignment: vectors keep their capacity) rather than into fresh memory.
  T* unshared() {
    if (value_) detail::unshare(value_, spare_);
    return value_.get();
  }

 private:
  mutable std::mutex mutex_;
  mutable std::shared_ptr<T> value_;
  std::shared_ptr<T> spare_;  // never copied
};

/// A pointer to a value that copies share until one of them changes it (copy-on-write), keeping
/// the memory it lets go: assigned over while it held the only reference to its value, it keeps
/// that value aside, and the next unshared() copies into it (T's copy-assignment: vectors keep
/// their capacity) instead of into fresh memory. A sweep assigns the base graph over its last
/// what-if's once per scenario; without this, each structural what-if would allocate and
/// page-fault in megabytes of edges again.
template <class T>
class CowPtr {
 public:
  explicit CowPtr(std::shared_ptr<T> value) : value_(std::move(value)) {}
  CowPtr(const CowPtr& other) : value_(other.value_) {}
  CowPtr(CowPtr&&) noexcept = default;
  CowPtr& operator=(const CowPtr& other) {
    if (value_ != other.value_) detail::keep_if_sole(value_, spare_);
    value_ = other.value_;
    return *this;
  }
  CowPtr& operator=(CowPtr&&) noexcept = default;
  /// The value, shared: change only what copies may share (caches under their own lock).
  T* operator->() const { return value_.get(); }
  T* get() const { return value_.get(); }
  T& operator*() const { return *value_; }
  /// The value, unshared for a change.
  T& unshared() {
    detail::unshare(value_, spare_);
    return *value_;
  }
  /// Whether another holder shares the value (a snapshot: another holder may let go meanwhile).
  bool shared() const { return value_.use_count() > 1; }
  /// The value, held: it outlives this holder's unshare.
  std::shared_ptr<const T> held() const { return value_; }
  /// The value, unshared by `fill(copy, value)` instead of T's copy-assignment where copies share
  /// it (into the memory of a value this holder let go, where there is one): a copy made while it
  /// is changed, in one pass.
  template <class Fill>
  T& unshared_by(Fill&& fill) {
    if (value_.use_count() <= 1) return *value_;
    std::shared_ptr<T> copy = spare_ ? std::move(spare_) : std::make_shared<T>();
    fill(*copy, *value_);
    value_ = std::move(copy);
    return *value_;
  }

 private:
  std::shared_ptr<T> value_;
  std::shared_ptr<T> spare_;  // never copied
};

class EdgeTableCache;  // edge tables shared by a Predictor's what-ifs (lib/graph/edge_table_cache.hpp)
struct ReportColumns; // per-task fields that reports read, private to lib/graph and lib/predict

/// A vector whose copies keep room to grow by an eighth: a graph's per-task arrays, copied for
/// each what-if, would otherwise all move (allocate and copy again) at the first task the what-if
/// inserts. A copy assigned over an older one reuses its memory.
template <class T>
class RoomyVector : public std::vector<T> {
 public:
  RoomyVector() = default;
  RoomyVector(RoomyVector&&) noexcept = default;
  RoomyVector& operator=(RoomyVector&&) noexcept = default;
  RoomyVector(const RoomyVector& other) : std::vector<T>() { copy_from(other); }
  RoomyVector& operator=(const RoomyVector& other) {
    if (this != &other) copy_from(other);
    return *this;
  }

 private:
  void copy_from(const RoomyVector& other) {
    if (this->capacity() < other.size()) {
      this->clear();
      this->reserve(other.size() + other.size() / 8 + 16);
    }
    this->assign(other.begin(), other.end());
  }
};

/// Whether the simulator can use a task's duration and release (kMaxDelayNs's reasoning in
/// lib/graph/graph_storage.hpp).
constexpr bool usable_times(TimeNs duration_ns, TimeNs release_ns) {
  return duration_ns >= 0 && duration_ns <= kMaxTaskDurationNs && is_trace_time(release_ns);
}

/// The task fields the simulator reads, as columns: where a graph keeps them (each task's other
/// fields are its detail::TaskRecord). Copies share them until one changes a field; a what-if that
/// only sets durations copies these 22 bytes a task and no record.
struct TaskColumns {
  RoomyVector<TimeNs> duration_ns;
  RoomyVector<TimeNs> release_ns;
  RoomyVector<UnitId> unit;
  RoomyVector<std::uint8_t> removed;
  RoomyVector<TaskKind> kind;  ///< not read by the simulator: lets Graph::select skip whole kinds
  std::size_t unusable = 0;    ///< tasks, removed ones too, whose times are not usable_times()

  std::size_t size() const { return kind.size(); }
  void reserve(std::size_t tasks) {
    duration_ns.reserve(tasks);
    release_ns.reserve(tasks);
    unit.reserve(tasks);
    removed.reserve(tasks);
    kind.reserve(tasks);
  }
  /// Lets go of the room to grow (a graph at rest).
  void shrink_to_fit() {
    duration_ns.shrink_to_fit();
    release_ns.shrink_to_fit();
    unit.shrink_to_fit();
    removed.shrink_to_fit();
    kind.shrink_to_fit();
  }
  void append(const Task& task) {
    duration_ns.push_back(task.duration_ns);
    release_ns.push_back(task.release_ns);
    unit.push_back(task.unit);
    removed.push_back(task.removed ? 1 : 0);
    kind.push_back(task.kind);
    unusable += !usable_times(task.duration_ns, task.release_ns);
  }
  void set_times(TaskId id, TimeNs duration, TimeNs release) {
    unusable -= !usable_times(duration_ns[id], release_ns[id]);
    duration_ns[id] = duration;
    release_ns[id] = release;
    unusable += !usable_times(duration, release);
  }
};

namespace detail {

/// A task's fields other than those its graph keeps as TaskColumns: what Graph stores per task
/// beside the columns (48 bytes; Task, the value a reader gets, joins both). Its size in bytes,
/// which only copies, memsets and collectives have, is kept aside (Graph::task_bytes_).
struct TaskRecord {
  TimeNs recorded_start_ns = 0;
  std::int64_t correlation = kNone;
  std::uint32_t name = 0;
  std::int32_t iteration = -1;
  std::int32_t source_event = kNone;
  std::int32_t op_event = kNone;
  std::uint32_t op_name = 0;
  std::uint32_t layer = 0;
  std::int32_t launch = -1;
  Phase phase = Phase::unknown;
  bool blocking = false;
  bool has_bytes = false;  ///< Task::bytes is not kNone: the graph keeps it aside

  TaskRecord() = default;
  explicit TaskRecord(const Task& task)
      : recorded_start_ns(task.recorded_start_ns), correlation(task.correlation), name(task.name),
        iteration(task.iteration), source_event(task.source_event), op_event(task.op_event), op_name(task.op_name),
        layer(task.layer), launch(task.launch), phase(task.phase), blocking(task.blocking), has_bytes(task.bytes != kNone) {}
};
static_assert(sizeof(TaskRecord) == 48, "a task record packs into 48 bytes (the fields grouped by size)");

/// A task's size in bytes (Task::bytes), for the few tasks that have one.
struct TaskBytes {
  TaskId task;
  std::int64_t bytes;
};

/// Task `id` joined from its record and the columns (bytes: kNone, which the graph sets aside).
inline Task join_task(const TaskRecord& record, const TaskColumns& columns, TaskId id) {
  Task task;
  task.kind = columns.kind[id];
  task.phase = record.phase;
  task.blocking = record.blocking;
  task.removed = columns.removed[id] != 0;
  task.unit = columns.unit[id];
  task.name = record.name;
  task.iteration = record.iteration;
  task.duration_ns = columns.duration_ns[id];
  task.release_ns = columns.release_ns[id];
  task.recorded_start_ns = record.recorded_start_ns;
  task.correlation = record.correlation;
  task.source_event = record.source_event;
  task.op_event = record.op_event;
  task.op_name = record.op_name;
  task.layer = record.layer;
  task.launch = record.launch;
  return task;
}

/// A graph's task records (TaskRecord: the fields other than TaskColumns'), in pages of
/// kPageRecords that its copies share page by page until one of them changes a record of the page
/// (copy-on-write): a what-if copies the pages it changes, not every record, and one that only
/// sets times copies none (the times are columns). Reads from several threads are safe; copying a
/// graph from several threads takes one process-wide lock while the source still owns pages.
///
/// Which pages a holder may write in place is its own record (not a reference count): the pages
/// it made or copied since it was last copied. Copying a holder makes both share every page.
class TaskRecords {
 public:
  static constexpr unsigned kPageBits = 11;
  static constexpr std::size_t kPageRecords = std::size_t{1} << kPageBits;  ///< 2,048 records, 96 KiB
  static constexpr std::size_t kPageMask = kPageRecords - 1;

  TaskRecords() = default;
  TaskRecords(const TaskRecords& other);
  TaskRecords& operator=(const TaskRecords& other);
  TaskRecords(TaskRecords&& other) noexcept;
  TaskRecords& operator=(TaskRecords&& other) noexcept;

  /// Record `id` (below size()).
  const TaskRecord& at(TaskId id) const { return data_[id >> kPageBits][id & kPageMask]; }
  /// Record `id`, on a page of this holder's own, for a change.
  TaskRecord& for_change(TaskId id);
  /// Adds a record at the end.
  void append(const TaskRecord& record) {
    if ((size_ & kPageMask) != 0 && own_[size_ >> kPageBits]) [[likely]] {  // room on a page of its own
      new (data_[size_ >> kPageBits] + (size_ & kPageMask)) TaskRecord(record);
      ++size_;
      return;
    }
    append_on_new_or_shared_page(record);
  }
  /// Room for `count` records in one block with huge pages advised (a builder's estimate), which
  /// appends fill page by page. Only while empty.
  void reserve(std::size_t count);
  /// Whether record `id`'s page is this holder's own.
  bool owns(TaskId id) const { return own_[id >> kPageBits] != 0; }
  /// How many of the pages are this holder's own (the others are shared, or were).
  std::size_t own_pages() const;
  std::size_t pages() const { return pages_.size(); }
  std::size_t size() const { return size_; }

 private:
  struct Snapshot;
  Snapshot snapshot() const;
  void adopt(Snapshot snapshot);
  /// Page `page` made this holder's own: copied unless it is already.
  void own_page(std::size_t page);
  /// Memory for one page: one this holder let go, else fresh.
  std::shared_ptr<TaskRecord> fresh_page();
  /// The records of page `page` that exist (the last page may be partly filled).
  std::size_t records_on(std::size_t page) const {
    return std::min(kPageRecords, size_ - (page << kPageBits));
  }
  void let_go_of_pages();
  void append_on_new_or_shared_page(const TaskRecord& record);

  std::vector<std::shared_ptr<TaskRecord>> pages_;
  std::vector<TaskRecord*> data_;                 // pages_[p].get()
  mutable std::vector<std::uint8_t> own_;         // per page: this holder's, writable in place
  mutable std::atomic<bool> owns_any_{false};     // some own_ is set (a copy clears them)
  std::size_t size_ = 0;
  std::shared_ptr<TaskRecord> block_;  // reserve()'s memory, which appends take page by page
  std::size_t block_pages_ = 0;
  std::vector<std::shared_ptr<TaskRecord>> spare_;  // pages let go that nothing else held
};

}  // namespace detail

class TaskFilter;     // transform.hpp
class TaskSet;        // transform.hpp
struct NewTask;       // transform.hpp

/// A task graph. Copyable (a copy shares what it has not changed: records, columns, edges);
/// tasks and units are addressed by dense ids.
class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph& other);
  Graph& operator=(const Graph& other);
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;

  // --- building ---
  UnitId add_unit(Unit unit);
  TaskId add_task(const Task& task);
  /// Adds a dependency. Throws Error for a self-loop or an unknown task id.
  void add_edge(TaskId from, TaskId to, Edge edge);
  std::uint32_t intern(std::string_view text);

  // --- transforming (see transform.hpp) ---
  /// The live tasks passing `filter` (all live tasks without one).
  TaskSet select(const TaskFilter& filter);
  TaskSet select();
  /// Adds a task with its edges. Throws Error (naming the tasks) for an unknown or removed task,
  /// or when the new edges would close a cycle; the graph is then unchanged.
  TaskId insert(const NewTask& task);
  /// Deletes a task: every predecessor -> successor pair is bridged by an edge that keeps the
  /// removed task's delays (as if it took no time). Throws Error when it is already removed.
  void remove(TaskId id);
  /// remove() of each task of `ids` in turn, in that order, in one pass: the same edges in the
  /// same order as the calls one by one. With `zero_inner_delays`, the edges between two of the
  /// tasks lose their delays first (remove_block's rule). Throws Error, changing nothing, when a
  /// task is removed already or named twice.
  void remove_all(const std::vector<TaskId>& ids, bool zero_inner_delays = false);
  bool removed(TaskId id) const { return columns_->removed[id] != 0; }
  /// add_edge for transformations: both tasks must be live and the edge must not close a cycle.
  void connect(TaskId from, TaskId to, Edge edge);
  /// Deletes every edge from -> to, without bridging: `to` no longer waits for `from` (a
  /// synchronisation the optimization removes). Throws Error when there is no such edge.
  void disconnect(TaskId from, TaskId to);
  /// The unit with this name, if any.
  std::optional<UnitId> find_unit(std::string_view name) const;

  // --- changing one task (its edges change only through the calls above) ---
  /// Sets a task's duration; throws Error for a negative one.
  void set_duration(TaskId id, TimeNs duration_ns);
  /// Sets when a task without predecessors may start, relative to the origin.
  void set_release(TaskId id, TimeNs release_ns);
  /// Renames a task (the name is interned).
  void rename(TaskId id, std::string_view name);
  /// Marks a CPU call as waiting for GPU work (sync edges end there) or not.
  void set_blocking(TaskId id, bool blocking);
  std::size_t num_live_tasks() const;

  // --- reading ---
  std::size_t num_tasks() const { return records_.size(); }
  std::size_t num_edges() const;
  /// The task (a value: the graph keeps its fields in two places, detail::TaskRecord and
  /// TaskColumns). Unchecked: `id` must be below num_tasks().
  Task task(TaskId id) const {
    const detail::TaskRecord& record = records_.at(id);
    Task task = detail::join_task(record, *columns_, id);
    if (record.has_bytes) [[unlikely]] task.bytes = bytes_of(id);
    return task;
  }
  /// task(id).duration_ns and release_ns, read without joining the whole task (checked).
  TimeNs duration_ns(TaskId id) const {
    check_task(id);
    return columns_->duration_ns[id];
  }
  TimeNs release_ns(TaskId id) const {
    check_task(id);
    return columns_->release_ns[id];
  }
  const std::vector<Unit>& units() const { return units_; }
  Unit& unit(UnitId id) { return units_.at(id); }
  std::string_view name(TaskId id) const { return strings_[records_.at(id).name]; }
  /// Task `id`'s holds (none for most tasks). The reference lasts until the graph next changes.
  const TaskHolds& holds(TaskId id) const;
  /// The tasks with holds, by id (shared by copies).
  const std::map<TaskId, TaskHolds>& held_tasks() const;
  std::string_view string(std::uint32_t index) const { return strings_[index]; }

  struct Neighbor {
    TaskId task;
    Edge edge;
  };
  std::vector<Neighbor> successors(TaskId id) const;
  std::vector<Neighbor> predecessors(TaskId id) const;
  /// Calls `visit(neighbor, edge)` for each successor (predecessor) in edge order, without
  /// allocating, until it returns false. Returns false when a call stopped the walk.
  bool visit_successors(TaskId id, NeighborVisitor visit) const;
  bool visit_predecessors(TaskId id, NeighborVisitor visit) const;
  /// The first edge from -> to; throws Error when there is none.
  Edge& edge(TaskId from, TaskId to);
  /// visit_successors with the edges to change in place (their type, timing, delay).
  bool update_successors(TaskId id, EdgeUpdater visit);
  std::size_t in_degree(TaskId id) const;
  std::size_t out_degree(TaskId id) const;
  struct EdgeRecord {
    TaskId from;
    TaskId to;
    Edge edge;
  };
  /// Every edge, ordered by source task then insertion order.
  std::vector<EdgeRecord> edges() const;
  std::array<std::int64_t, kEdgeTypeCount> edge_counts() const;
  std::array<std::int64_t, kTaskKindCount> task_counts() const;
  /// A hash of everything a simulation depends on (tasks, edges, units, iterations): equal
  /// graphs have equal fingerprints, on every machine.
  std::uint64_t fingerprint() const;

  /// Tasks in a topological order: Kahn's, the lowest ready id first (the order the simulator's
  /// one-pass replay follows). Throws Error naming a cycle if there is one.
  std::vector<TaskId> topological_order() const;
  /// The tasks of one cycle, in order, or empty when the graph is acyclic.
  std::vector<TaskId> find_cycle() const;

  // --- iterations, calibration, report ---
  /// The trace's CPU ranges, by thread and start (shared by copies; never changed by transforms).
  const std::vector<CpuRange>& ranges() const;
  void set_ranges(std::vector<CpuRange> ranges);
  /// The trace's collective records, by start (shared by copies; never changed by transforms).
  const std::vector<CollectiveRecord>& collectives() const;
  void set_collectives(std::vector<CollectiveRecord> collectives);
  /// The trace's GPUs: name, memory and SM resources (Kineto deviceProperties, Nsight
  /// TARGET_INFO_GPU); shared by copies.
  const std::vector<GpuResources>& gpus() const;
  void set_gpus(std::vector<GpuResources> gpus);
  /// The launch configurations of the trace's kernels (Task::launch indexes them); shared by copies.
  const std::vector<LaunchConfig>& launch_configs() const;
  void set_launch_configs(std::vector<LaunchConfig> launches);
  /// Task `id`'s launch configuration; nullptr when the trace records none for it.
  const LaunchConfig* launch_config(TaskId id) const;
  /// The operators that recorded their inputs' shapes and may hold a kernel's work: those around
  /// a kernel's launch (with the operators around them) and the autograd nodes (which record a
  /// forward output's shape); by file index, empty for a trace without shapes and for a job
  /// graph. Their shapes; shared by copies.
  const std::vector<OperatorRecord>& operators() const;
  const ShapeTable& operator_shapes() const;
  void set_operators(std::vector<OperatorRecord> operators, ShapeTable shapes);
  /// The recorded operator of file index `event` (Task::op_event); nullptr when it recorded no shapes.
  const OperatorRecord* find_operator(std::int64_t event) const;
  std::vector<Iteration>& iterations() { return iterations_; }
  const std::vector<Iteration>& iterations() const { return iterations_; }
  Calibration& calibration() { return calibration_; }
  const Calibration& calibration() const { return calibration_; }
  ImportReport& report() { return report_; }
  const ImportReport& report() const { return report_; }
  /// Absolute trace time (ns) of time zero of the graph.
  TimeNs origin_ns = 0;
  /// Which ranges became iterations and how they are measured.
  IterationRule iteration_rule;
  std::string source_path;
  /// Ranks of the job (`distributedInfo.world_size`), or kNone.
  std::int64_t world_size = kNone;
  /// This trace's rank (`distributedInfo.rank`), or kNone; kNone in a merged job graph.
  std::int64_t rank = kNone;

  /// The ranks and matched collectives of a multi-rank job graph (job.hpp); null for the graph
  /// of one trace. Shared by copies; scenarios that add ranks install a new one.
  const JobLayout* job() const { return job_.get(); }
  void set_job(JobLayout job);

 private:
  friend struct GraphAccess;  // lib/graph/graph_access.hpp: the builders' and the engine's access
  /// Task `id`'s record for a builder's change of any of its fields (GraphAccess::record): what
  /// is derived from records is dropped.
  detail::TaskRecord& mutable_record(TaskId id) {
    detail::TaskRecord& record = record_for_change(id);
    recorded_order_.slot().reset();
    report_columns_.slot().reset();
    forget_task_derived();
    return record;
  }
  /// Task `id`'s record, on a page of the graph's own, for a change.
  detail::TaskRecord& record_for_change(TaskId id) { return records_.for_change(id); }
  /// Task::bytes of a task whose record has_bytes. Pure (reads the graph only), so that a caller
  /// of task() that reads no bytes makes no call.
  [[gnu::pure]] std::int64_t bytes_of(TaskId id) const;
  /// Sets Task::bytes (kNone: none).
  void set_bytes(TaskId id, std::int64_t bytes);
  /// Sets a task's times (unchecked: usable_times counts the unusable ones for the simulator).
  void set_times(TaskId id, TimeNs duration_ns, TimeNs release_ns);
  /// set_duration's checks, which throw Error.
  void check_duration(TaskId id, TimeNs duration_ns) const;
  /// set_duration of ids[i] to durations[i] for every i, all checked before any is set (then
  /// nothing changes): a TaskSet's bulk changes (GraphAccess::set_durations).
  void set_durations(const std::vector<TaskId>& ids, const std::vector<TimeNs>& durations);
  /// The tasks the graph held when first asked (removed ones too), by unit, recorded start and
  /// id: what tasks_by_unit() filters instead of sorting every unit's tasks per call. Neither
  /// field changes once a task is added (tasks added later come after the prefix it covers);
  /// thread-safe, shared by copies.
  std::shared_ptr<const std::vector<TaskId>> recorded_order() const;
  /// recorded_order() where some reader has built it already, else null.
  std::shared_ptr<const std::vector<TaskId>> recorded_order_if_built() const { return recorded_order_.get(); }
  /// The fields the simulator reads, as columns (shared by copies until one changes them).
  std::shared_ptr<const TaskColumns> task_columns() const;
  /// The columns for a change of task fields: unshared.
  TaskColumns& task_columns_for_change();
  /// The edges as flat arrays for the simulator; thread-safe, cached until the structure changes.
  std::shared_ptr<const EdgeTable> edge_table() const;
  void check_live(TaskId id, std::string_view what) const;
  /// GraphAccess::freeze_edges.
  void freeze_edges();
  /// Throws Error for an id past the last task.
  void check_task(TaskId id) const {
    if (id >= num_tasks()) [[unlikely]] refuse_task(id);
  }
  [[noreturn]] void refuse_task(TaskId id) const;
  /// Drops what is derived from task fields and kept across copies (launch_call_median_): a task
  /// changed, came or went.
  void forget_task_derived() { launch_call_median_.slot().reset(); }
  /// Flags a task removed (its edges are gone already).
  void mark_removed(TaskId id, TaskColumns& columns);
  void ensure_ranks();
  /// Room for this many tasks, task records and edges (GraphAccess::reserve).
  void reserve(std::size_t tasks, std::size_t records, std::size_t edges);
  std::vector<TaskId> path_between(const std::vector<TaskId>& sources, const std::vector<TaskId>& targets,
                                   std::vector<TaskId>* reached = nullptr);
  bool reorder_ranks(TaskId from, TaskId to, std::vector<TaskId> after);
  [[noreturn]] void refuse_cycle(std::string_view what, const std::vector<TaskId>& path, std::string_view closing) const;
  void link_inserted(TaskId id, const NewTask& spec);

  /// Shared between copies until one of them changes the structure (copy-on-write): a what-if
  /// that only changes durations copies the task table, not the edges.
  GraphStorage& structure();              // unshared, for changes
  const GraphStorage& structure() const;  // shared, for reading
  CowPtr<GraphStorage> storage_;
  detail::TaskRecords records_;
  /// Every task's TaskColumns fields (its other fields are records_'); null only in a graph moved
  /// from.
  CowPtr<TaskColumns> columns_;
  /// Task::bytes of the tasks that have one, by id (shared by copies; null: none).
  std::shared_ptr<const std::vector<detail::TaskBytes>> task_bytes_;
  SharedCache<const std::vector<TaskId>> recorded_order_;
  /// What reports read per task (lib/predict builds it): shared by copies, dropped by a change of
  /// a field it holds (rename, set_blocking, a builder's write); tasks added later are read from
  /// their records.
  SharedCache<const ReportColumns> report_columns_;
  /// median_launch_call_ns (analyze.hpp; kNone: no launch call), which scenarios ask of each
  /// what-if's fresh copy: shared by copies made after it was computed (a Predictor computes it on
  /// its base), dropped by any change of a task (forget_task_derived).
  SharedCache<const TimeNs> launch_call_median_;
  std::unordered_map<std::string, std::uint32_t, StringIndexHash, std::equal_to<>> string_index_;
  std::vector<Unit> units_;
  std::vector<std::string> strings_;
  std::vector<Iteration> iterations_;
  std::shared_ptr<const std::vector<CpuRange>> ranges_;
  std::shared_ptr<const std::vector<CollectiveRecord>> collectives_;
  std::shared_ptr<const std::vector<GpuResources>> gpus_;
  std::shared_ptr<const std::vector<LaunchConfig>> launch_configs_;
  struct Operators;  // the records and their shapes, shared by copies
  std::shared_ptr<const Operators> operators_;
  std::shared_ptr<const JobLayout> job_;
  /// Null where no task has holds; shared by copies, copied by the first change while shared.
  std::shared_ptr<std::map<TaskId, TaskHolds>> holds_;
  std::shared_ptr<EdgeTableCache> table_cache_;  ///< null unless GraphAccess::share_edge_tables
  Calibration calibration_;
  ImportReport report_;
  std::size_t removed_count_ = 0;
};

/// The CPU call that launched a GPU task: its launch or communication predecessor on a CPU
/// thread (NCCL kernels hang off their call by a communication edge); kNoTask when the trace
/// does not hold it (launched before profiling began).
TaskId launching_call(const Graph& graph, TaskId gpu_task);

/// Per job iteration (the k-th iteration of every rank of a job graph, job.hpp): the graph's
/// iteration indices, in rank order. A graph of one trace has one iteration per group.
std::vector<std::vector<std::size_t>> job_iteration_groups(const Graph& graph);

/// Builds the dependency graph of a trace (see docs/graph.md for every rule). Oddities met on
/// the way are added to the graph's report, which starts as a copy of the trace's.
Graph build_graph(const Trace& trace, const GraphOptions& options = {});

}  // namespace daydream
