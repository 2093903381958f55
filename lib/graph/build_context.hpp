#pragma once
// State shared by the stages of build_graph(): which task each trace event became, and the
// per-thread / per-stream orders the edge builders walk. Positions are indices into
// Trace::events (not file indices).

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "daydream/graph.hpp"
#include "graph/task_context.hpp"

namespace daydream {

class DeviceTimelines;  // gpu_holds.hpp

/// What an API call does, as far as dependencies go.
enum class ApiRole : std::uint8_t {
  other, memcpy, device_sync, stream_sync, event_sync, stream_wait_event, event_record
};
ApiRole api_role(std::string_view name);

struct TaskTimes {
  TimeNs start = 0;  ///< recorded start, relative to the origin
  TimeNs end = 0;    ///< recorded end, relative to the origin
};

/// The off-CPU stretches of one thread (Trace::off_cpu), relative to the origin, by start.
struct ThreadSchedule {
  bool known = false;  ///< the trace has scheduling data for this thread
  std::vector<std::pair<TimeNs, TimeNs>> off;

  /// The last switch-in in (from, to], if any.
  std::optional<TimeNs> last_switch_in(TimeNs from, TimeNs to) const;
  /// Time off CPU within [from, to].
  TimeNs off_cpu_within(TimeNs from, TimeNs to) const;
};

/// (correlation, event position) pairs sorted, and where correlation ids are dense (as CUDA
/// numbers its calls), the first pair of each id: a lookup is then two loads, not a binary search
/// (which was a twentieth of building a graph).
struct CorrelationIndex {
  std::vector<std::pair<std::int64_t, std::uint32_t>> pairs;
  std::int64_t first_id = 0;
  std::vector<std::uint32_t> starts;  ///< pairs of id first_id + i: [starts[i], starts[i + 1]); empty: not dense

  void add(std::int64_t correlation, std::uint32_t position) { pairs.emplace_back(correlation, position); }
  /// Sorts the pairs, and indexes the ids where they span at most 16 slots (64 bytes) per pair.
  void seal();
};

struct BuildContext {
  BuildContext(const Trace& t, const GraphOptions& o, Graph& g);
  ~BuildContext();

  const Trace& trace;
  const GraphOptions& options;
  Graph& graph;
  TimeNs origin = 0;

  std::vector<UnitId> lane_unit;             ///< per lane; kNoUnit when the lane has no task
  std::vector<TaskId> event_task;            ///< per event position: its (first) task
  std::vector<TaskId> api_wait_task;         ///< per event position: the waiting half of a blocking call
  std::vector<TaskTimes> times;              ///< per task: recorded times
  std::vector<std::uint32_t> task_position;  ///< per task: the event position it came from
  std::vector<std::vector<TaskId>> unit_tasks;  ///< per unit: tasks in recorded order
  std::vector<TaskId> launched_by;           ///< per task (GPU): the API task that launched it
  std::vector<std::uint8_t> woken;           ///< per task (CPU): a cross_thread edge explains its start
  std::vector<CpuRange> ranges;              ///< every CPU range, for Graph::ranges()
  std::vector<ThreadSchedule> schedules;     ///< per unit (empty, unknown, for GPU streams)
  /// The GPU streams' recorded timelines (gpu_holds.hpp), from the trace alone: built once for
  /// the calibration and the GPU tasks both (device_timelines()).
  std::unique_ptr<const DeviceTimelines> timelines;
  /// (CPU task, autograd sequence number of its innermost operator that has one)
  std::vector<std::pair<TaskId, std::int64_t>> task_sequence;
  /// (correlation, event position) of GPU activities and of cuda_sync records, sorted.
  CorrelationIndex gpu_by_correlation, sync_by_correlation, api_by_correlation;
  static constexpr std::uint32_t kNotInterned = 0xffffffffu;
  std::vector<std::uint32_t> graph_name;  ///< per trace string: its graph string id (name_of)
  /// Per trace string: whether it names a collective (NCCL, RCCL), -1 until asked
  /// (names_collective). Kernel names run to hundreds of characters and repeat by the thousand.
  mutable std::vector<std::int8_t> collective_name;

  /// Per trace string: its api_role plus one, 0 until asked (role_of).
  mutable std::vector<std::uint8_t> call_role;
  /// Per trace string: 1 + its place in range_names, 0 until asked (range_name).
  std::vector<std::uint32_t> range_name_at;
  std::deque<RangeName> range_names;  // a deque: what range_name() returned stays put

  /// Whether a GPU activity named by trace string `name` is a collective: its name mentions
  /// nccl or NCCL (and so rccl's kernels, named ncclKernel_* too). Searched once per string.
  bool names_collective(std::uint32_t name) const;
  /// api_role of an API call's name, classified once per distinct name (a build asks for every
  /// call several times).
  ApiRole role_of(const TraceEvent& call) const;

  static constexpr UnitId kNoUnit = 0xffffffffu;

  /// The graph's id of an event's name: interned once per distinct trace string (a hash of the
  /// name per task was a tenth of building), in the order Graph::intern would number them.
  std::uint32_t name_of(const TraceEvent& e) {
    if (graph_name.empty()) graph_name.assign(trace.strings.size(), kNotInterned);
    std::uint32_t& id = graph_name[e.name];
    if (id == kNotInterned) id = graph.intern(trace.name_of(e));
    return id;
  }

  const DeviceTimelines& device_timelines();

  /// What a CPU range's name says (task_context.hpp), worked out once per distinct name.
  const RangeName& range_name(const TraceEvent& range) {
    if (range_name_at.empty()) range_name_at.assign(trace.strings.size(), 0);
    std::uint32_t& at = range_name_at[range.name];
    if (at == 0) {
      range_names.push_back(RangeName::of(trace.name_of(range)));
      at = static_cast<std::uint32_t>(range_names.size());
    }
    return range_names[at - 1];
  }

  /// The unit of a lane that has tasks; creates it (and its task list) on first use.
  UnitId unit_for_lane(std::uint32_t lane, UnitKind kind) {
    if (lane_unit[lane] != kNoUnit) return lane_unit[lane];
    const Lane& l = trace.lanes[lane];
    lane_unit[lane] = graph.add_unit({kind, l.name, l.process, l.thread});
    unit_tasks.emplace_back();
    return lane_unit[lane];
  }

  void add_task_times(TimeNs start, TimeNs end, std::uint32_t position) {
    times.push_back({start, end});
    task_position.push_back(position);
  }
  TimeNs rel(TimeNs absolute) const { return absolute - origin; }
  const TraceEvent& event(std::uint32_t position) const { return trace.events[position]; }
  /// The event positions of one correlation id: a view into a sorted index (no allocation).
  struct Positions {
    const std::pair<std::int64_t, std::uint32_t>* first = nullptr;
    const std::pair<std::int64_t, std::uint32_t>* last = nullptr;
    struct Iterator {
      const std::pair<std::int64_t, std::uint32_t>* at;
      std::uint32_t operator*() const { return at->second; }
      Iterator& operator++() { return ++at, *this; }
      bool operator!=(const Iterator& other) const { return at != other.at; }
    };
    bool empty() const { return first == last; }
    std::uint32_t front() const { return first->second; }
    Iterator begin() const { return {first}; }
    Iterator end() const { return {last}; }
  };
  Positions lookup(const CorrelationIndex& index, std::int64_t correlation) const;
  void count(stats::Id id, std::int64_t event = kNone) { graph.report().count(id, event); }
  void count(stats::Id id, stats::Detail detail, std::int64_t event) { graph.report().count(id, detail, event); }
};

// The stages, in the order build_graph() runs them.
void index_events(BuildContext& ctx);
void calibrate_latencies(BuildContext& ctx);
void build_cpu_tasks(BuildContext& ctx);
void build_gpu_tasks(BuildContext& ctx);
void build_sync_edges(BuildContext& ctx);
void build_cross_thread_edges(BuildContext& ctx);
void build_cpu_sequential_edges(BuildContext& ctx);
/// Removes one edge per cycle (inferred and most contradicted first), counted in the report.
void break_cycles(BuildContext& ctx);
void assign_iterations(BuildContext& ctx);
/// Keeps the operators that recorded shapes (Graph::operators()), with their nesting.
void keep_operators(BuildContext& ctx);

}  // namespace daydream
