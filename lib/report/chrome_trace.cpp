// Simulated timelines as a Chrome trace (the JSON that Perfetto and chrome://tracing open): one
// process per timeline with an iterations track, a critical-path track and one thread per unit.
//
// CPU threads read like the user's own trace: the graph cuts each thread into leaf pieces (an
// operator's own time between its CUDA calls), and the writer puts the operators back around
// them: a CpuRange becomes one slice from the simulated start of the first task inside it to the
// simulated end of the last, so operators nest as recorded, and an operator's own-time pieces are
// not drawn. Tasks on a unit never overlap in a simulation, so the slices nest exactly.
//
// The file can hold two copies of a 78k-task graph, so it is built in one std::string with
// fmt::format_to and written with a single fwrite (gzip-compressed by libdeflate for ".gz").
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <libdeflate.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <unordered_map>

#include "common/json_string.hpp"
#include "daydream/error.hpp"
#include "daydream/report/chrome_trace.hpp"
#include "daydream/report/replay.hpp"

namespace daydream {
namespace {

/// Nanoseconds as microseconds with exactly three decimals ("12.345"), exact for any integer.
void append_us(std::string& out, TimeNs ns) {
  const bool negative = ns < 0;
  const std::uint64_t magnitude = negative ? static_cast<std::uint64_t>(-(ns + 1)) + 1 : static_cast<std::uint64_t>(ns);
  fmt::format_to(std::back_inserter(out), "{}{}.{:03d}", negative ? "-" : "", magnitude / 1000, magnitude % 1000);
}

/// Escaped string literals of a graph's names, built once per string index.
class NameCache {
 public:
  explicit NameCache(const Graph& graph) : graph_(graph) {}
  const std::string& operator()(std::uint32_t index) {
    auto [it, inserted] = cache_.try_emplace(index);
    if (inserted) json::append_string(it->second, graph_.string(index));
    return it->second;
  }

 private:
  const Graph& graph_;
  std::unordered_map<std::uint32_t, std::string> cache_;
};

void check_timeline(const Timeline& timeline) {
  if (!timeline.graph || !timeline.result)
    throw Error(fmt::format("write_chrome_trace: timeline '{}' has no graph or no simulation result", timeline.label));
  const std::size_t tasks = timeline.graph->num_tasks();
  if (timeline.result->start_ns.size() != tasks || timeline.result->end_ns.size() != tasks)
    throw Error(fmt::format("write_chrome_trace: timeline '{}': the simulation has {} tasks, the graph {}: the result "
                            "is not a simulation of this graph",
                            timeline.label, timeline.result->start_ns.size(), tasks));
}

bool simulated(const Graph& graph, const SimulationResult& result, TaskId t) {
  return !graph.task(t).removed && result.start_ns[t] >= 0;
}

// --- aligning iterations ---

/// Simulated time -> display time: from each iteration's simulated start on, a shift. The shifts
/// never decrease, so tasks that do not overlap in the simulation do not overlap on display.
class DisplayClock {
 public:
  void add(TimeNs from_ns, TimeNs shift_ns) { steps_.push_back({from_ns, shift_ns}); }
  /// The shift of a task that starts at `start_ns` (the first iteration's before it).
  TimeNs shift(TimeNs start_ns) const {
    if (steps_.empty()) return 0;
    auto it = std::upper_bound(steps_.begin(), steps_.end(), start_ns,
                               [](TimeNs t, const Step& s) { return t < s.from_ns; });
    return it == steps_.begin() ? steps_.front().shift_ns : std::prev(it)->shift_ns;
  }

 private:
  struct Step {
    TimeNs from_ns, shift_ns;
  };
  std::vector<Step> steps_;
};

/// Iteration k of every timeline starts at D_k: D_0 is the latest first start, and D_k+1 = D_k +
/// the longest iteration k. No clocks (identity) unless every timeline has the same number of
/// iterations, at least one, and there are two timelines or more.
std::vector<DisplayClock> aligned_clocks(const std::vector<std::vector<IterationSpan>>& spans) {
  std::vector<DisplayClock> clocks(spans.size());
  if (spans.size() < 2 || spans.front().empty()) return clocks;
  for (const auto& s : spans)
    if (s.size() != spans.front().size()) return clocks;
  TimeNs display = 0;
  for (const auto& s : spans) display = std::max(display, s.front().start_ns);
  for (std::size_t k = 0; k < spans.front().size(); ++k) {
    TimeNs longest = 0;
    for (std::size_t t = 0; t < spans.size(); ++t) {
      clocks[t].add(spans[t][k].start_ns, display - spans[t][k].start_ns);
      const TimeNs next = k + 1 < spans[t].size() ? spans[t][k + 1].start_ns : spans[t][k].end_ns;
      longest = std::max(longest, next - spans[t][k].start_ns);
    }
    display += longest;
  }
  return clocks;
}

// --- operators around the tasks ---

/// A CpuRange as the simulation placed it: the first and last task inside it.
struct RangeSlice {
  std::size_t range;
  TaskId first, last;
};

/// The simulated tasks of each CPU thread from the trace (not inserted), by recorded start.
std::vector<std::vector<TaskId>> recorded_tasks_by_unit(const Graph& graph, const SimulationResult& result) {
  std::vector<std::vector<TaskId>> by_unit(graph.units().size());
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (simulated(graph, result, t) && task.source_event != kNone &&
        (task.kind == TaskKind::cpu || task.kind == TaskKind::runtime))
      by_unit[task.unit].push_back(t);
  }
  for (auto& tasks : by_unit)
    std::stable_sort(tasks.begin(), tasks.end(), [&](TaskId a, TaskId b) {
      return graph.task(a).recorded_start_ns < graph.task(b).recorded_start_ns;
    });
  return by_unit;
}

/// Each range with a simulated task inside it, and the set of (unit, event) of the ranges drawn,
/// whose own-time `cpu` pieces are then not drawn.
std::vector<RangeSlice> range_slices(const Graph& graph, const SimulationResult& result,
                                     std::set<std::pair<UnitId, std::int64_t>>& drawn) {
  const auto by_unit = recorded_tasks_by_unit(graph, result);
  std::vector<RangeSlice> slices;
  for (std::size_t r = 0; r < graph.ranges().size(); ++r) {
    const CpuRange& range = graph.ranges()[r];
    const auto& tasks = by_unit[range.unit];
    const auto recorded = [&](TaskId t) { return graph.task(t).recorded_start_ns; };
    auto first = std::lower_bound(tasks.begin(), tasks.end(), range.start_ns,
                                  [&](TaskId t, TimeNs at) { return recorded(t) < at; });
    auto end = std::lower_bound(first, tasks.end(), range.end_ns, [&](TaskId t, TimeNs at) { return recorded(t) < at; });
    if (first == end) continue;
    slices.push_back({r, *first, *std::prev(end)});
    if (range.event != kNone) drawn.emplace(range.unit, range.event);
  }
  return slices;
}

// --- the file ---

/// The file's text, built event by event: one event per line.
class EventWriter {
 public:
  explicit EventWriter(std::size_t tasks, std::size_t baseline_units) : baseline_units_(baseline_units) {
    out_.reserve(64 + tasks * 320);  // a task's event is 150-300 bytes, a flow 2 x 100
    out_ += "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [";
  }

  void timeline(const Timeline& timeline, int pid, const std::vector<IterationSpan>& spans, const DisplayClock& clock) {
    const Graph& graph = *timeline.graph;
    const SimulationResult& result = *timeline.result;
    NameCache names(graph);
    metadata(pid, 0, "process_name", "name", timeline.label);
    metadata(pid, 0, "process_sort_index", "sort_index", pid);
    iterations(graph, spans, clock, pid);
    critical_path(graph, result, clock, pid, names);
    threads(graph, result, pid);
    std::set<std::pair<UnitId, std::int64_t>> drawn;
    for (const RangeSlice& slice : range_slices(graph, result, drawn)) range(graph, result, slice, clock, pid, names);
    tasks(graph, result, clock, pid, names, drawn);
    flows(graph, result, clock, pid);
  }

  const std::string& finish() { return out_ += "\n]}\n"; }

 private:
  // The two tracks above the units, then the units: tid = unit id + kFirstUnitTid.
  static constexpr std::int64_t kIterationsTid = 1;
  static constexpr std::int64_t kCriticalTid = 2;
  static constexpr std::int64_t kFirstUnitTid = 3;
  static std::int64_t tid(UnitId unit) { return std::int64_t{unit} + kFirstUnitTid; }

  /// One slice per iteration, over its simulated span (the definition of iteration time).
  void iterations(const Graph& graph, const std::vector<IterationSpan>& spans, const DisplayClock& clock, int pid) {
    if (spans.empty()) return;
    metadata(pid, kIterationsTid, "thread_name", "name", "iterations");
    metadata(pid, kIterationsTid, "thread_sort_index", "sort_index", 0);
    for (const IterationSpan& span : spans) {
      begin_slice(pid, kIterationsTid, span.start_ns + clock.shift(span.start_ns), span.end_ns - span.start_ns);
      out_ += ", \"name\": ";
      json::append_string(out_, graph.iterations()[span.index].name);
      out_ += ", \"cat\": \"iteration\", \"args\": {\"simulated_ms\": ";
      fmt::format_to(std::back_inserter(out_), "{:.6f}}}}}", static_cast<double>(span.end_ns - span.start_ns) / 1e6);
    }
  }

  /// The critical path as one track: each task on it, from where the previous one ended (a kernel
  /// starts while its launch call runs), named after the task and its unit.
  void critical_path(const Graph& graph, const SimulationResult& result, const DisplayClock& clock, int pid,
                     NameCache& names) {
    if (result.critical_path.empty()) return;
    metadata(pid, kCriticalTid, "thread_name", "name", "critical path");
    metadata(pid, kCriticalTid, "thread_sort_index", "sort_index", 1);
    TimeNs previous_end = std::numeric_limits<TimeNs>::min();
    for (TaskId t : result.critical_path) {
      if (t >= graph.num_tasks() || !simulated(graph, result, t)) continue;
      const TimeNs start = std::max(result.start_ns[t], previous_end), end = result.end_ns[t];
      if (end <= start) continue;
      previous_end = end;
      begin_slice(pid, kCriticalTid, start + clock.shift(result.start_ns[t]), end - start);
      const Task& task = graph.task(t);
      out_ += ", \"name\": ", out_ += names(task.name);
      fmt::format_to(std::back_inserter(out_), ", \"cat\": \"critical\", \"args\": {{\"id\": {}, \"unit\": ", t);
      json::append_string(out_, graph.units()[task.unit].name);
      out_ += "}}";
    }
  }

  // tid = unit id + 3, so that a unit has the same tid in every timeline (transformations only
  // append units); the sort index gives the display order. Units without a live task are left
  // out; a unit past the first timeline's units was added by the scenario and says so.
  void threads(const Graph& graph, const SimulationResult& result, int pid) {
    std::vector<bool> used(graph.units().size(), false);
    for (TaskId t = 0; t < graph.num_tasks(); ++t)
      if (simulated(graph, result, t)) used[graph.task(t).unit] = true;
    std::int64_t sort_index = 1;
    for (UnitId u : display_order(graph)) {
      if (!used[u]) continue;
      const std::string& name = graph.units()[u].name;
      metadata(pid, tid(u), "thread_name", "name", u < baseline_units_ ? name : name + " (added)");
      metadata(pid, tid(u), "thread_sort_index", "sort_index", ++sort_index);
    }
  }

  /// Units in display order: CPU threads, GPU streams, communication channels; then by process,
  /// thread and id.
  static std::vector<UnitId> display_order(const Graph& graph) {
    std::vector<UnitId> order(graph.units().size());
    std::iota(order.begin(), order.end(), UnitId{0});
    std::stable_sort(order.begin(), order.end(), [&](UnitId a, UnitId b) {
      const Unit &ua = graph.units()[a], &ub = graph.units()[b];
      return std::tie(ua.kind, ua.process, ua.thread) < std::tie(ub.kind, ub.process, ub.thread);
    });
    return order;
  }

  /// An operator or annotation around its tasks, with the input shapes it recorded.
  void range(const Graph& graph, const SimulationResult& result, const RangeSlice& slice, const DisplayClock& clock,
             int pid, NameCache& names) {
    const CpuRange& range = graph.ranges()[slice.range];
    const TimeNs start = result.start_ns[slice.first], end = result.end_ns[slice.last];
    const TimeNs shown = start + clock.shift(start);
    begin_slice(pid, tid(range.unit), shown, end + clock.shift(result.start_ns[slice.last]) - shown);
    out_ += ", \"name\": ", out_ += names(range.name);
    out_ += ", \"cat\": \"cpu_op\", \"args\": {";
    if (range.event != kNone) fmt::format_to(std::back_inserter(out_), "\"event\": {}", range.event);
    if (const OperatorRecord* op = graph.find_operator(range.event)) shapes(graph, *op);
    out_ += "}}";
  }

  /// "Input Dims" and "Input type" as the trace recorded them.
  void shapes(const Graph& graph, const OperatorRecord& op) {
    const ShapeTable& table = graph.operator_shapes();
    std::string dims = "[", types = "[";
    for (std::size_t i = 0; i < table.operand_count(op.shapes); ++i) {
      const OperandShape operand = table.operand(op.shapes, i);
      fmt::format_to(std::back_inserter(dims), "{}[{}]", i ? ", " : "", fmt::join(operand.dims, ", "));
      if (i) types += ", ";
      json::append_string(types, operand.type);
    }
    fmt::format_to(std::back_inserter(out_), ", \"Input Dims\": {}], \"Input type\": {}]", dims, types);
  }

  void tasks(const Graph& graph, const SimulationResult& result, const DisplayClock& clock, int pid, NameCache& names,
             const std::set<std::pair<UnitId, std::int64_t>>& drawn) {
    std::vector<bool> critical(graph.num_tasks(), false);
    for (TaskId t : result.critical_path)
      if (t < critical.size()) critical[t] = true;
    for (TaskId t = 0; t < graph.num_tasks(); ++t) {
      if (!simulated(graph, result, t)) continue;
      const Task& task = graph.task(t);
      if (task.kind == TaskKind::cpu && drawn.count({task.unit, task.source_event})) continue;  // in its operator
      this->task(graph, t, result, clock, pid, critical[t], names);
    }
  }

  /// A complete ("X") event: ts and dur in us; args id, kind, phase, layer (if any), critical, and
  /// what the trace recorded (correlation, bytes, grid and block).
  void task(const Graph& graph, TaskId id, const SimulationResult& result, const DisplayClock& clock, int pid,
            bool critical, NameCache& names) {
    const Task& task = graph.task(id);
    const TimeNs shift = clock.shift(result.start_ns[id]);
    begin_slice(pid, tid(task.unit), result.start_ns[id] + shift, result.end_ns[id] - result.start_ns[id]);
    out_ += ", \"name\": ";
    out_ += names(task.name);
    const std::string_view kind = to_string(task.kind);
    fmt::format_to(std::back_inserter(out_), ", \"cat\": \"{}\", \"args\": {{\"id\": {}, \"kind\": \"{}\", \"phase\": \"{}\"",
                   kind, id, kind, to_string(task.phase));
    if (task.layer != 0) out_ += ", \"layer\": ", out_ += names(task.layer);
    recorded_args(graph, id);
    if (shift != 0) out_ += ", \"simulated_start_us\": ", append_us(out_, result.start_ns[id]);
    out_ += critical ? ", \"critical\": true}}" : ", \"critical\": false}}";
  }

  void recorded_args(const Graph& graph, TaskId id) {
    const Task& task = graph.task(id);
    if (task.correlation != kNone) fmt::format_to(std::back_inserter(out_), ", \"correlation\": {}", task.correlation);
    if (task.bytes != kNone) fmt::format_to(std::back_inserter(out_), ", \"bytes\": {}", task.bytes);
    const Unit& unit = graph.units()[task.unit];
    if (unit.kind == UnitKind::gpu_stream)
      fmt::format_to(std::back_inserter(out_), ", \"device\": {}, \"stream\": {}", unit.process, unit.thread);
    if (const LaunchConfig* launch = graph.launch_config(id))
      fmt::format_to(std::back_inserter(out_), ", \"blocks\": {}, \"threads per block\": {}", launch->blocks,
                     launch->threads_per_block);
    if (task.op_name != 0 && task.kind != TaskKind::cpu) {
      out_ += ", \"operator\": ";
      json::append_string(out_, graph.string(task.op_name));
    }
  }

  /// A flow arrow from each launch call to its GPU task (ph s at the call, ph f bound to the task).
  void flows(const Graph& graph, const SimulationResult& result, const DisplayClock& clock, int pid) {
    for (TaskId from = 0; from < graph.num_tasks(); ++from) {
      if (!simulated(graph, result, from) || graph.task(from).kind != TaskKind::runtime) continue;
      graph.visit_successors(from, [&](TaskId to, const Edge& edge) {
        if (edge.type != EdgeType::launch || !simulated(graph, result, to)) return true;
        flow_end(pid, "s", graph.task(from).unit, result.start_ns[from] + clock.shift(result.start_ns[from]));
        flow_end(pid, "f", graph.task(to).unit, result.start_ns[to] + clock.shift(result.start_ns[to]));
        ++flow_id_;
        return true;
      });
    }
  }

  void flow_end(int pid, std::string_view phase, UnitId unit, TimeNs at) {
    next_event();
    fmt::format_to(std::back_inserter(out_), "{{\"ph\": \"{}\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": ", phase,
                   flow_id_, pid, tid(unit));
    append_us(out_, at);
    out_ += phase == "f" ? ", \"bp\": \"e\", \"name\": \"launch\", \"cat\": \"launch\"}" : ", \"name\": \"launch\", \"cat\": \"launch\"}";
  }

  void begin_slice(int pid, std::int64_t tid, TimeNs start, TimeNs duration) {
    next_event();
    fmt::format_to(std::back_inserter(out_), "{{\"ph\": \"X\", \"pid\": {}, \"tid\": {}, \"ts\": ", pid, tid);
    append_us(out_, start);
    out_ += ", \"dur\": ";
    append_us(out_, duration);
  }

  /// A metadata ("M") event with one argument: a string or a number.
  void metadata(int pid, std::int64_t tid, std::string_view name, std::string_view key, std::string_view value) {
    begin_metadata(pid, tid, name, key);
    json::append_string(out_, value);
    out_ += "}}";
  }
  void metadata(int pid, std::int64_t tid, std::string_view name, std::string_view key, std::int64_t value) {
    begin_metadata(pid, tid, name, key);
    fmt::format_to(std::back_inserter(out_), "{}}}}}", value);
  }
  void begin_metadata(int pid, std::int64_t tid, std::string_view name, std::string_view key) {
    next_event();
    fmt::format_to(std::back_inserter(out_), "{{\"ph\": \"M\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, \"args\": {{\"{}\": ",
                   name, pid, tid, key);
  }

  void next_event() {
    out_ += first_ ? "\n  " : ",\n  ";
    first_ = false;
  }

  std::string out_;
  bool first_ = true;
  std::size_t baseline_units_;
  std::int64_t flow_id_ = 1;
};

bool ends_with_gz(const std::string& path) { return path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0; }

/// `text` gzip-compressed (libdeflate, level 6: about 10x smaller for these files).
std::string gzip(const std::string& path, const std::string& text) {
  const std::unique_ptr<libdeflate_compressor, void (*)(libdeflate_compressor*)> compressor(
      libdeflate_alloc_compressor(6), &libdeflate_free_compressor);
  if (!compressor) throw Error(path, Error::kNoEvent, "", "cannot write the Chrome trace: out of memory for gzip");
  std::string out(libdeflate_gzip_compress_bound(compressor.get(), text.size()), '\0');
  const std::size_t size = libdeflate_gzip_compress(compressor.get(), text.data(), text.size(), out.data(), out.size());
  if (size == 0) throw Error(path, Error::kNoEvent, "", "cannot write the Chrome trace: gzip failed");
  out.resize(size);
  return out;
}

void write_file(const std::string& path, const std::string& text) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!file) throw Error(path, Error::kNoEvent, "", fmt::format("cannot write the Chrome trace: {}", std::strerror(errno)));
  const bool written = std::fwrite(text.data(), 1, text.size(), file.get()) == text.size();
  const bool flushed = std::fflush(file.get()) == 0;
  if (!written || !flushed)
    throw Error(path, Error::kNoEvent, "", fmt::format("cannot write the Chrome trace: {}", std::strerror(errno)));
}

}  // namespace

void write_chrome_trace(const std::string& path, const std::vector<Timeline>& timelines,
                        const ChromeTraceOptions& options) {
  std::size_t tasks = 0;
  std::vector<std::vector<IterationSpan>> spans;
  for (const Timeline& timeline : timelines) {
    check_timeline(timeline);
    tasks += timeline.graph->num_tasks();
    spans.push_back(simulated_iteration_spans(*timeline.graph, *timeline.result));
  }
  const std::vector<DisplayClock> clocks =
      options.align_iterations ? aligned_clocks(spans) : std::vector<DisplayClock>(timelines.size());
  EventWriter events(tasks, timelines.empty() ? 0 : timelines.front().graph->units().size());
  for (std::size_t i = 0; i < timelines.size(); ++i)
    events.timeline(timelines[i], static_cast<int>(i + 1), spans[i], clocks[i]);
  const std::string& text = events.finish();
  write_file(path, ends_with_gz(path) ? gzip(path, text) : text);
}

}  // namespace daydream
