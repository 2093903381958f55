#pragma once
/// @file transform.hpp
/// @brief The transformation primitives: Select tasks, Scale/Shrink their durations, Insert a
/// task between others, Remove a task (its dependencies bridged), and Schedule policies (see
/// simulate.hpp). Every optimization is a short script over these.
///
/// @code
///   // Automatic mixed precision, as the Daydream paper models it.
///   daydream::Graph amp = graph;  // what-ifs work on copies
///   amp.select(daydream::TaskFilter().kind(daydream::TaskKind::kernel).name("(?i)gemm|wgrad|conv")).scale(1.0 / 3);
///   amp.select(daydream::TaskFilter().kind(daydream::TaskKind::kernel).name_not("(?i)gemm|wgrad|conv")).scale(0.5);
///   auto result = daydream::simulate(amp);
/// @endcode
///
/// Complexity: select is O(tasks) plus one regex match per distinct task name; scale and
/// set_duration are O(selected); remove is O(in-degree x out-degree); insert is O(edges added)
/// when the new task fits the graph's current topological order, otherwise a search bounded by
/// that order. Task ids never change: a removed task keeps its id and is skipped.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daydream/graph.hpp"

namespace daydream {

/// Which tasks to select. Each criterion narrows the selection (AND); repeating a criterion
/// widens it (`kind(kernel).kind(memcpy)` = kernels or copies). No criterion selects every task.
/// Name patterns are RE2 regular expressions searched anywhere in the name; a leading
/// "(?i)" makes one case-insensitive.
class TaskFilter {
 public:
  TaskFilter& kind(TaskKind kind);
  TaskFilter& unit(UnitId unit);
  TaskFilter& unit_kind(UnitKind kind);
  TaskFilter& name(std::string pattern);      ///< task name matches
  TaskFilter& name_not(std::string pattern);  ///< task name does not match
  TaskFilter& op(std::string pattern);        ///< name of the operator around the task (or its launch) matches
  TaskFilter& layer(std::string pattern);     ///< layer name matches (tasks without a layer never match)
  /// Inside a CPU range (Graph::ranges) whose name matches, at any depth: a CPU task whose
  /// recorded start lies in such a range of its thread, a GPU task whose launch call does.
  /// Inserted tasks (no recorded time) never match.
  TaskFilter& within(std::string pattern);
  TaskFilter& phase(Phase phase);
  TaskFilter& iteration(std::int32_t index);
  /// On a unit of this rank (Unit::rank) of a multi-rank job graph (job.hpp).
  TaskFilter& rank(std::int64_t rank);
  /// Any further condition; called once per task that passed the other criteria.
  TaskFilter& where(std::function<bool(const Graph&, TaskId)> predicate);

  bool matches(const Graph& graph, TaskId task) const;  ///< slow path; select() caches name matches

 private:
  friend class TaskSelector;
  std::vector<TaskKind> kinds_;
  std::vector<UnitId> units_;
  std::vector<UnitKind> unit_kinds_;
  std::vector<std::string> names_, names_not_, ops_, layers_, within_;
  std::vector<Phase> phases_;
  std::vector<std::int32_t> iterations_;
  std::vector<std::int64_t> ranks_;
  std::vector<std::function<bool(const Graph&, TaskId)>> predicates_;
};

/// Throws Error when `pattern` is not a valid TaskFilter pattern (an RE2 regular expression, optionally
/// prefixed by "(?i)"); `what` names it in the message ("name", "layer", ...).
void check_pattern(const std::string& pattern, std::string_view what = "name");

/// A set of tasks of one graph (ids in increasing order), changed in bulk.
class TaskSet {
 public:
  TaskSet(Graph& graph, std::vector<TaskId> ids) : graph_(&graph), ids_(std::move(ids)) {}

  std::size_t size() const { return ids_.size(); }
  bool empty() const { return ids_.empty(); }
  const std::vector<TaskId>& ids() const { return ids_; }
  auto begin() const { return ids_.begin(); }
  auto end() const { return ids_.end(); }
  Graph& graph() const { return *graph_; }

  /// Multiplies every duration by `factor` (finite, >= 0), rounding to the nearest ns.
  TaskSet& scale(double factor);
  /// Sets every duration to `duration_ns` (>= 0).
  TaskSet& set_duration(TimeNs duration_ns);
  /// Shortens every duration by `by_ns` (>= 0), not below zero.
  TaskSet& shrink(TimeNs by_ns);
  /// The tasks of this set that also pass `filter`.
  TaskSet filter(const TaskFilter& filter) const;
  /// Removes every task of the set from the graph (see Graph::remove).
  void remove();
  TimeNs total_duration_ns() const;
  /// The median duration: the upper of the two middle ones for an even count (a duration seen,
  /// never an average; Python's statistics.median_high); 0 for an empty set.
  TimeNs median_duration_ns() const;

 private:
  Graph* graph_;
  std::vector<TaskId> ids_;
};

/// A task to insert: where it runs, what it costs, what it depends on and what waits for it.
struct NewTask {
  std::string name;
  TaskKind kind = TaskKind::communication;
  UnitId unit = 0;
  TimeNs duration_ns = 0;
  std::vector<TaskId> after;   ///< predecessors: the new task starts after each of them ends
  std::vector<TaskId> before;  ///< successors: each starts after the new task ends
  /// Edge types; when unset, derived from the two ends (see infer_edge_type).
  std::optional<EdgeType> after_type, before_type;
  TimeNs after_delay_ns = 0, before_delay_ns = 0;
  std::int32_t iteration = -1;  ///< -1: taken from the first predecessor
  Phase phase = Phase::unknown;

  /// A task given by what it is, what it costs and where in the iteration it runs; where it goes
  /// (its unit and neighbours) is for the primitive that places it (insert_between, replace_block,
  /// insert_launched). Python's task dicts {name, kind, duration_ns, iteration, phase} hold the same.
  static NewTask of(std::string name, TaskKind kind, TimeNs duration_ns, std::int32_t iteration = -1,
                    Phase phase = Phase::unknown) {
    NewTask task;
    task.name = std::move(name);
    task.kind = kind;
    task.duration_ns = duration_ns;
    task.iteration = iteration;
    task.phase = phase;
    return task;
  }
};

/// The dependency type an edge between these two tasks naturally has: sequential on one unit,
/// communication when a communication task is at either end, launch for CPU -> GPU, sync for
/// GPU -> CPU, cross_thread between threads, cross_stream between streams.
EdgeType infer_edge_type(const Graph& graph, TaskId from, TaskId to);

// --- walking the graph: neighbours by edge type ---

/// The first successor (predecessor) of `task` joined by an edge of `type`, in edge order; for
/// the sequential types only one on the task's own unit. kNoTask when there is none.
TaskId successor(const Graph& graph, TaskId task, EdgeType type);
TaskId predecessor(const Graph& graph, TaskId task, EdgeType type);

/// Whether an edge of `type` between `a` and `b` is part of a unit's chain: sequential, and both
/// tasks on one unit.
bool is_chain_edge(const Graph& graph, TaskId a, TaskId b, EdgeType type);

/// The task after (before) `task` on its unit's chain: a cpu_ or gpu_sequential edge on the same
/// unit; kNoTask at the end (start) of the chain.
TaskId chain_next(const Graph& graph, TaskId task);
TaskId chain_prev(const Graph& graph, TaskId task);

/// Whether `edge`, to `target`, is one by which a CUDA call launched GPU work: a launch or
/// communication edge to a task on a GPU stream.
bool launches(const Graph& graph, TaskId target, const Edge& edge);
/// The GPU-stream tasks a CUDA call launched (its launch or communication edges to them); the
/// inverse of launching_call (graph.hpp).
std::vector<TaskId> launched_by(const Graph& graph, TaskId call);
/// The GPU-stream tasks a set of calls launched, in the calls' order.
std::vector<TaskId> launched_by(const Graph& graph, const std::vector<TaskId>& calls);

/// The live tasks of every unit in recorded-start order (ties by id), indexed by unit id.
std::vector<std::vector<TaskId>> tasks_by_unit(const Graph& graph);
/// tasks_by_unit(graph)[unit] alone: a unit's stretch of the order, not every unit's.
std::vector<TaskId> tasks_of_unit(const Graph& graph, UnitId unit);
/// `tasks` grouped by unit (units in id order), each group in recorded-start order (ties by id):
/// the GPU work of a stretch per stream, with its first and last task on each.
std::map<UnitId, std::vector<TaskId>> group_by_unit(const Graph& graph, const std::vector<TaskId>& tasks);
/// One flag per task id (graph.num_tasks() of them): 1 for each of `tasks`, 0 for the others.
std::vector<char> task_mask(const Graph& graph, const std::vector<TaskId>& tasks);

/// The tasks right after `task` on its unit's chain (chain_next) for as long as `keep` accepts
/// them, at most `max`, in chain order: the neighbours a fused task takes with it.
std::vector<TaskId> run_after(const Graph& graph, TaskId task, std::size_t max, const std::function<bool(TaskId)>& keep);
/// The same before `task` (chain_prev), also in chain order (the farthest first).
std::vector<TaskId> run_before(const Graph& graph, TaskId task, std::size_t max,
                               const std::function<bool(TaskId)>& keep);

/// A stretch of one CPU thread's time covered by CPU ranges (Graph::ranges) whose names match a
/// TaskFilter-style pattern; nested and overlapping matches are merged, so a window is an
/// outermost matching range.
struct RangeWindow {
  UnitId unit = 0;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  bool contains(TimeNs time_ns) const { return start_ns <= time_ns && time_ns < end_ns; }
};
/// The windows of the ranges named by `pattern`, in (unit, start) order. Throws Error for an
/// invalid pattern.
std::vector<RangeWindow> range_windows(const Graph& graph, const std::string& pattern);
/// The live tasks of `unit_tasks` (one unit's, in recorded-start order: tasks_by_unit) whose
/// recorded start lies in `window`.
std::vector<TaskId> tasks_in(const Graph& graph, const std::vector<TaskId>& unit_tasks, const RangeWindow& window);

/// The windows of a named range with every unit's tasks, taken once, for models that work per
/// window: per training step, per optimizer step, per operator. Reads `graph` as it is when
/// asked: tasks removed since are skipped, tasks inserted since are not seen (they have no
/// recorded time). The graph must outlive this object.
///
/// @code
///   const daydream::RangeTasks steps(graph, "Optimizer\\.step");
///   for (const auto& window : steps.windows())
///     for (daydream::TaskId t : steps.tasks(window)) ...  // the step's CPU tasks on its thread
/// @endcode
class RangeTasks {
 public:
  /// Throws Error for an invalid pattern (range_windows).
  RangeTasks(const Graph& graph, const std::string& pattern);
  const std::vector<RangeWindow>& windows() const { return windows_; }
  /// The live tasks of the window's own thread whose recorded start lies in it, in recorded order.
  std::vector<TaskId> tasks(const RangeWindow& window) const { return tasks(window, window.unit); }
  /// The same on another unit (what other threads did during the window).
  std::vector<TaskId> tasks(const RangeWindow& window, UnitId unit) const;
  /// The window around a task: on its unit, holding its recorded start; null when there is none.
  const RangeWindow* around(TaskId task) const;

 private:
  const Graph* graph_;
  std::vector<RangeWindow> windows_;
  std::vector<std::vector<TaskId>> by_unit_;
};

// --- editing blocks of work ---

/// Where a block of tasks sits on one unit's chain: the task before its first task, the first task
/// after it that is not in the block, and the delays of those two chain edges; `release_ns` is the
/// first task's (for a block that starts its unit).
struct ChainSpot {
  TaskId prev = kNoTask;
  TimeNs delay_in_ns = 0;
  TaskId next = kNoTask;
  TimeNs delay_out_ns = 0;
  TimeNs release_ns = 0;
};
/// The spot of the block (in_block[t] != 0) whose first task on its unit is `first`. When `first`
/// itself stays (not in the block: a task kept in place at the head of the work that goes), the
/// spot is right before it: `next` is `first` and `delay_out_ns` 0.
ChainSpot chain_spot(const Graph& graph, TaskId first, const std::vector<char>& in_block);

/// Every edge between two of `tasks` loses its delay: the gaps inside work that goes, or is
/// captured, as one (remove_block does this for the block it removes).
void zero_inner_delays(Graph& graph, const std::vector<TaskId>& tasks);

/// The edges that cross the boundary of a block of tasks.
struct CrossingEdges {
  std::vector<Graph::EdgeRecord> in;   ///< outside -> block
  std::vector<Graph::EdgeRecord> out;  ///< block -> outside
};
/// The edges crossing the boundary of `tasks`, in the order of the tasks and of their rows (read
/// them before remove_block, which replaces them by bridges).
CrossingEdges crossing_edges(const Graph& graph, const std::vector<TaskId>& tasks);

/// Removes `tasks` as one block of work that disappears together. Edges between two tasks of the
/// block lose their delays first, so the bridges Graph::remove leaves carry only the delays of the
/// edges into and out of the block (the gaps around it), never the gaps inside it (which belong to
/// the removed work). CPU tasks go first in trace order, then GPU tasks in reverse trace order,
/// which keeps the bridging linear in the block's size on chains.
void remove_block(Graph& graph, const std::vector<TaskId>& tasks);

/// Removes a run of consecutive tasks of one chain (in chain order) as one block (remove_block),
/// and the task after the run follows the task before it with the gap it had after the run: one
/// gap, not the sum of both, since work fused into its neighbour leaves no gap of its own.
void remove_run(Graph& graph, const std::vector<TaskId>& run);

/// Inserts `task` on its unit between `prev` and `next` (either may be kNoTask; both on that
/// unit), with exactly `delay_in_ns` after `prev` and `delay_out_ns` before `next`. Without
/// `prev`, the new task is released when `release_ns` says.
TaskId insert_between(Graph& graph, NewTask task, TaskId prev, TaskId next, TimeNs delay_in_ns, TimeNs delay_out_ns,
                      TimeNs release_ns = 0);

/// What takes the place of a block's tasks on one unit: new tasks that run there one after another.
struct Replacement {
  UnitId unit = 0;
  std::vector<NewTask> tasks;  ///< `unit`, `after` and `before` are set by replace_block
  TimeNs gap_ns = 0;           ///< between two consecutive new tasks
  /// The block's other dependencies on this unit (not its chain, not launches: waits of later
  /// calls, other streams) move to the new tasks: into the first, out of the last, the strongest
  /// of each pair.
  bool take_over_edges = false;
};

/// Replaces a block of tasks by new ones (the paper's fusions: many kernels and their launches
/// become a few). Each Replacement goes where the block's first task on its unit was (after the
/// task before the block, before the first task after it, keeping those two gaps); the gaps inside
/// the block go with it (remove_block). Replacements are inserted in the order given, a unit
/// without one simply loses its part of the block. Returns the new tasks of each replacement.
std::vector<std::vector<TaskId>> replace_block(Graph& graph, const std::vector<TaskId>& block,
                                               std::vector<Replacement> replacements);

/// replace_block in two steps, for a block that goes the same way whatever replaces it (a sweep
/// over fused_adam's kernels per step): clear_block removes the block and keeps, for each of
/// `units`, where its part of the block was and, with `keep_crossing`, the edges that crossed the
/// block's boundary; fill_block then puts replacements there, on the graph clear_block changed or
/// on a copy of it. replace_block is clear_block over its replacements' units, then fill_block.
struct ClearedBlock {
  std::vector<UnitId> units;
  std::vector<ChainSpot> spots;  ///< per unit, where the block's first task on it was
  CrossingEdges crossing;        ///< read before the removal, where kept
  bool kept_crossing = false;
};
/// Throws Error, changing nothing, when the block has no task on one of `units`.
ClearedBlock clear_block(Graph& graph, const std::vector<TaskId>& block, const std::vector<UnitId>& units,
                         bool keep_crossing);
/// Replacement i goes to the place of cleared.units[i], which must be its unit; one that takes over
/// edges needs them kept. Returns the new tasks of each replacement.
std::vector<std::vector<TaskId>> fill_block(Graph& graph, const ClearedBlock& cleared,
                                            std::vector<Replacement> replacements);

// --- GPU work and its launches ---

/// Adds the edge by which CUDA call `call` launches GPU task `gpu_task`: start-to-start, with the
/// trace's calibrated launch latency for the task's kind (Calibration::launch_latency_ns); a
/// communication edge for a communication task (an NCCL kernel), a launch edge otherwise.
void connect_launch(Graph& graph, TaskId call, TaskId gpu_task);

/// Makes `call` launch GPU work as one CUDA graph (cudaGraphLaunch): `streams` holds the work of
/// each stream in order (group_by_unit). The call launches each stream's first task
/// (connect_launch); inside the graph each stream runs its tasks back to back, at the calibrated
/// stream gap (Calibration::gpu_gap_ns), whatever the trace's gaps were. Returns the last task of
/// each stream, in stream order: the graph has finished when they have.
std::vector<TaskId> launch_graph(Graph& graph, TaskId call, const std::map<UnitId, std::vector<TaskId>>& streams);

/// Inserts a GPU task right before `gpu_next` on its stream (the calibrated stream gap before
/// it) and the CUDA call that launches it right before `call_next` on its thread (connect_launch):
/// new work and its launch in front of a launch that stays, as autocast's weight casts. Units,
/// neighbours and delays are set here. Returns {call, GPU task}; nullopt, with nothing inserted,
/// when `call_next` starts its thread (a call there would have no place to be released from).
std::optional<std::pair<TaskId, TaskId>> insert_launched(Graph& graph, NewTask call, NewTask gpu_task, TaskId call_next,
                                                         TaskId gpu_next);

/// Removes GPU tasks together with the CUDA calls that launched them (launching_call: by a launch
/// edge, or a communication edge for NCCL kernels) and launched nothing else. Returns the number
/// of calls removed.
std::size_t remove_with_launches(Graph& graph, const std::vector<TaskId>& gpu_tasks);

/// A new communication channel unit named `name` (made unique with a " #2"-style suffix if taken).
UnitId add_comm_channel(Graph& graph, const std::string& name);

}  // namespace daydream
