// "What is my bottleneck?" on the baseline (bottleneck.hpp): the critical path by category,
// layer, operator and kernel, and each GPU stream's idle time by what ended it.
#include "daydream/bottleneck.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "common/text.hpp"
#include "predict/critical_path_walk.hpp"
#include "report/json_writer.hpp"

namespace daydream {

std::string_view to_string(IdleCause cause) {
  switch (cause) {
    case IdleCause::cpu: return "cpu";
    case IdleCause::data: return "data";
    case IdleCause::sync: return "sync";
    case IdleCause::other_stream: return "other_stream";
    case IdleCause::communication: return "communication";
    case IdleCause::latency: return "latency";
  }
  return "?";
}

TimeNs StreamIdle::idle_ns() const {
  TimeNs sum = 0;
  for (TimeNs ns : idle_by_cause_ns) sum += ns;
  return sum;
}

namespace {

constexpr std::size_t kListed = 10;  // rows of the operator and kernel tables (CLI, JSON)

IdleCause idle_cause(PathCategory category) {
  switch (category) {
    case PathCategory::cpu:
    case PathCategory::launch_overhead: return IdleCause::cpu;
    case PathCategory::data_loading: return IdleCause::data;
    case PathCategory::synchronization: return IdleCause::sync;
    case PathCategory::compute: return IdleCause::other_stream;
    case PathCategory::communication: return IdleCause::communication;
    case PathCategory::latency: return IdleCause::latency;
  }
  return IdleCause::latency;
}

/// The window of the report: the iterations', else the whole simulated run.
std::pair<TimeNs, TimeNs> report_window(const Graph& graph, const SimulationResult& result) {
  auto [from, to] = iteration_window(graph, result);
  if (from == std::numeric_limits<TimeNs>::min()) {
    from = std::numeric_limits<TimeNs>::max();
    for (TaskId t = 0; t < graph.num_tasks(); ++t)
      if (!graph.removed(t)) from = std::min(from, result.start_ns[t]);
    to = result.makespan_ns;
  }
  return {std::min(from, to), to};
}

/// Attributes the idle stretch [gap_start, gap_end) of a stream, ended by `next`'s start: walks
/// the binding chain back from `next`, each task's part of the stretch going to its cause, the
/// parts no task covers to latency. CPU work after a blocking call on the chain goes to the sync:
/// the call drained the queue, and that work would otherwise have overlapped the GPU's.
void attribute_gap(const Graph& graph, const SimulationResult& result, TaskId next, TimeNs gap_start,
                   TimeNs gap_end, std::array<TimeNs, kIdleCauseCount>& out) {
  std::array<TimeNs, kIdleCauseCount> gap{};
  TimeNs cursor = gap_end;  // the stretch before it is not yet attributed
  bool after_sync = false;
  for (TaskId t = result.binding[next]; t != kNoTask && cursor > gap_start; t = result.binding[t]) {
    const IdleCause cause = idle_cause(path_category(graph, t));
    const TimeNs end = std::min(result.end_ns[t], cursor), start = std::max(result.start_ns[t], gap_start);
    after_sync = after_sync || (cause == IdleCause::sync && result.end_ns[t] >= gap_start);
    if (end <= gap_start) break;  // ended before the stretch: what follows is latency
    if (end < cursor) gap[static_cast<std::size_t>(IdleCause::latency)] += cursor - end;
    if (start < end) gap[static_cast<std::size_t>(cause)] += end - start;
    cursor = std::min(cursor, start);
  }
  if (cursor > gap_start) gap[static_cast<std::size_t>(IdleCause::latency)] += cursor - gap_start;
  if (after_sync) {
    gap[static_cast<std::size_t>(IdleCause::sync)] += gap[static_cast<std::size_t>(IdleCause::cpu)];
    gap[static_cast<std::size_t>(IdleCause::cpu)] = 0;
  }
  for (std::size_t c = 0; c < kIdleCauseCount; ++c) out[c] += gap[c];
}

/// Marks the busiest stream of each GPU (rank and device); the first listed among equals.
void mark_main_streams(const Graph& graph, const std::map<UnitId, std::vector<TaskId>>& by_stream,
                       std::vector<StreamIdle>& streams) {
  std::map<std::pair<std::int64_t, std::int64_t>, std::size_t> busiest;  // (rank, device) -> index
  std::size_t i = 0;
  for (const auto& [unit, tasks] : by_stream) {
    const Unit& u = graph.units()[unit];
    const auto [it, added] = busiest.try_emplace({u.rank, u.process}, i);
    if (!added && streams[i].busy_ns > streams[it->second].busy_ns) it->second = i;
    ++i;
  }
  for (const auto& [gpu, index] : busiest) streams[index].main = true;
}

using Window = std::pair<TimeNs, TimeNs>;

/// Per rank (kNone for the graph of one trace), the window of its own iterations: a job's ranks
/// run their steps at different times, and each stream is measured against its rank's.
std::map<std::int64_t, Window> rank_windows(const Graph& graph, const SimulationResult& result) {
  std::map<std::int64_t, Window> windows;
  for (const Iteration& it : graph.iterations()) {
    if (it.first_task == kNoTask || it.last_task == kNoTask) continue;
    if (graph.removed(it.first_task) || graph.removed(it.last_task)) continue;
    const std::int64_t rank = graph.units()[graph.task(it.first_task).unit].rank;
    const auto [w, added] = windows.try_emplace(rank, result.start_ns[it.first_task], result.end_ns[it.last_task]);
    if (added) continue;
    w->second.first = std::min(w->second.first, result.start_ns[it.first_task]);
    w->second.second = std::max(w->second.second, result.end_ns[it.last_task]);
  }
  return windows;
}

/// One stream's busy time and idle stretches inside `window`; `tasks` in start order.
StreamIdle measure_stream(const Graph& graph, const SimulationResult& result, const std::vector<TaskId>& tasks,
                          Window window) {
  const auto [from, to] = window;
  StreamIdle stream;
  stream.window_ns = to - from;
  TimeNs covered = from;  // end of the stream's work so far
  for (TaskId t : tasks) {
    const TimeNs start = std::max(result.start_ns[t], from), end = std::min(result.end_ns[t], to);
    if (end <= from || start >= to) continue;
    if (start > covered) attribute_gap(graph, result, t, covered, start, stream.idle_by_cause_ns);
    if (end > std::max(start, covered)) stream.busy_ns += end - std::max(start, covered);
    covered = std::max(covered, end);
  }
  if (to > covered) stream.idle_by_cause_ns[static_cast<std::size_t>(IdleCause::latency)] += to - covered;
  return stream;
}

/// Busy and idle time of every GPU stream with work inside its rank's window (`whole`, the
/// report's window, for a rank without iterations).
std::vector<StreamIdle> stream_idle(const Graph& graph, const SimulationResult& result, Window whole) {
  const std::map<std::int64_t, Window> windows = rank_windows(graph, result);
  const auto window_of = [&](UnitId unit) {
    const auto w = windows.find(graph.units()[unit].rank);
    return w == windows.end() ? whole : w->second;
  };
  std::map<UnitId, std::vector<TaskId>> by_stream;  // tasks inside their window, in start order
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const UnitId unit = graph.task(t).unit;
    if (graph.removed(t) || graph.units()[unit].kind != UnitKind::gpu_stream) continue;
    const auto [from, to] = window_of(unit);
    if (result.end_ns[t] > from && result.start_ns[t] < to) by_stream[unit].push_back(t);
  }
  std::vector<StreamIdle> out;
  for (auto& [unit, tasks] : by_stream) {
    std::stable_sort(tasks.begin(), tasks.end(), [&](TaskId a, TaskId b) { return result.start_ns[a] < result.start_ns[b]; });
    out.push_back(measure_stream(graph, result, tasks, window_of(unit)));
    out.back().unit = graph.units()[unit].name;
  }
  mark_main_streams(graph, by_stream, out);
  return out;
}

std::vector<NamedTime> sorted(std::map<std::string, NamedTime>& by_name) {
  std::vector<NamedTime> out;
  for (auto& [name, entry] : by_name) out.push_back(std::move(entry));
  std::stable_sort(out.begin(), out.end(), [](const NamedTime& a, const NamedTime& b) { return a.ns > b.ns; });
  return out;
}

/// Critical-path task time inside [from, to) by innermost operator and by kernel name.
void path_by_name(const Graph& graph, const SimulationResult& result, TimeNs from, TimeNs to, BottleneckReport& out) {
  std::map<std::string, NamedTime> operators, kernels;
  const auto add = [](std::map<std::string, NamedTime>& table, std::string name, TimeNs ns) {
    NamedTime& entry = table[name];
    entry.name = std::move(name), entry.ns += ns, ++entry.tasks;
  };
  detail::walk_critical_path(
      result, from, to,
      [&](TaskId t, TimeNs covered) {
        const Task& task = graph.task(t);
        add(operators, task.op_name == 0 ? "(no operator)" : std::string(graph.string(task.op_name)), covered);
        if (is_gpu(task.kind)) add(kernels, std::string(graph.name(t)), covered);
      },
      [](TimeNs) {});
  out.by_operator = sorted(operators);
  out.by_kernel = sorted(kernels);
}

std::string share(TimeNs part, TimeNs whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "0.0%";
}

/// "bottleneck: compute 55.6% of the critical path; the GPU's busiest stream idle 44.4% of the
/// iterations (data 43.6%, ...)": over the main streams (StreamIdle::main).
std::string summary_line(const BottleneckReport& r) {
  const PathCategory dominant = r.critical_path.dominant();
  std::string line = fmt::format("bottleneck: {} {} of the critical path", to_string(dominant),
                                 share(r.critical_path.by_category_ns[static_cast<std::size_t>(dominant)],
                                       r.critical_path.length_ns));
  TimeNs window = 0, idle = 0;
  std::array<TimeNs, kIdleCauseCount> causes{};
  std::size_t gpus = 0;
  for (const StreamIdle& s : r.streams) {
    if (!s.main) continue;
    ++gpus;
    window += s.window_ns, idle += s.idle_ns();
    for (std::size_t c = 0; c < kIdleCauseCount; ++c) causes[c] += s.idle_by_cause_ns[c];
  }
  if (window == 0) return line + "; no GPU stream";
  std::vector<std::string> parts;
  for (std::size_t c = 0; c < kIdleCauseCount; ++c)
    if (causes[c] > 0) parts.push_back(fmt::format("{} {}", to_string(static_cast<IdleCause>(c)), share(causes[c], window)));
  return line + fmt::format("; {} idle {} of the iterations{}",
                            gpus == 1 ? "the GPU's busiest stream" : "each GPU's busiest stream", share(idle, window),
                            parts.empty() ? "" : fmt::format(" ({})", fmt::join(parts, ", ")));
}

}  // namespace

BottleneckReport find_bottleneck(const Predictor& predictor) {
  const Graph& graph = predictor.base();
  const SimulationResult& result = predictor.baseline();
  BottleneckReport r;
  const Prediction baseline = predictor.compare("baseline", graph, result);
  r.iteration_ns = baseline.baseline_median_ns;
  r.iterations = baseline.iterations.size();
  std::tie(r.window_start_ns, r.window_end_ns) = report_window(graph, result);
  r.critical_path = break_down_critical_path(graph, result, r.window_start_ns, r.window_end_ns);
  path_by_name(graph, result, r.window_start_ns, r.window_end_ns, r);
  r.streams = stream_idle(graph, result, {r.window_start_ns, r.window_end_ns});
  r.summary = summary_line(r);
  return r;
}

std::string to_json(const BottleneckReport& r, const std::string& trace_path) {
  JsonWriter w;
  w.begin_object().key("trace").value(trace_path).key("iteration_ms").milliseconds(r.iteration_ns);
  w.key("iterations").value(static_cast<std::int64_t>(r.iterations));
  w.key("window").begin_object().key("start_ms").milliseconds(r.window_start_ns);
  w.key("end_ms").milliseconds(r.window_end_ns).end_object();
  const PathBreakdown& path = r.critical_path;
  w.key("critical_path").begin_object().key("length_ms").milliseconds(path.length_ns);
  w.key("dominant").value(to_string(path.dominant())).key("by_category_ms").begin_object();
  for (std::size_t c = 0; c < kPathCategoryCount; ++c)
    w.key(to_string(static_cast<PathCategory>(c))).milliseconds(path.by_category_ns[c]);
  w.end_object().key("by_layer_ms").begin_array();
  for (const auto& [layer, ns] : path.by_layer_ns) w.begin_object().key("layer").value(layer).key("ms").milliseconds(ns).end_object();
  w.end_array().end_object();
  for (const auto& [key, list] : {std::pair{"top_operators", &r.by_operator}, std::pair{"top_kernels", &r.by_kernel}}) {
    w.key(key).begin_array();
    for (std::size_t i = 0; i < std::min(list->size(), kListed); ++i)
      w.begin_object().key("name").value((*list)[i].name).key("ms").milliseconds((*list)[i].ns).key("tasks").value((*list)[i].tasks).end_object();
    w.end_array();
  }
  w.key("gpu_streams").begin_array();
  for (const StreamIdle& s : r.streams) {
    w.begin_object().key("unit").value(s.unit).key("main").value(s.main).key("window_ms").milliseconds(s.window_ns);
    w.key("busy_ms").milliseconds(s.busy_ns).key("idle_ms").milliseconds(s.idle_ns()).key("idle_by_cause_ms").begin_object();
    for (std::size_t c = 0; c < kIdleCauseCount; ++c) w.key(to_string(static_cast<IdleCause>(c))).milliseconds(s.idle_by_cause_ns[c]);
    w.end_object().end_object();
  }
  w.end_array().key("summary").value(r.summary);
  return w.end_object().str();
}

}  // namespace daydream
