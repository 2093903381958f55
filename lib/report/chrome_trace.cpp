// Simulated timelines as a Chrome trace (the JSON that Perfetto and chrome://tracing open):
// one process per timeline, one thread per unit, one complete ("X") event per live task.
//
// The file can hold two copies of a 78k-task graph, so it is built in one std::string with
// fmt::format_to and written with a single fwrite; names are escaped once per string.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <numeric>
#include <unordered_map>

#include "common/json_string.hpp"
#include "daydream/error.hpp"
#include "daydream/predict.hpp"
#include "daydream/report/chrome_trace.hpp"

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

/// Units in display order: CPU threads, GPU streams, communication channels; then by process,
/// thread and id.
std::vector<UnitId> display_order(const Graph& graph) {
  std::vector<UnitId> order(graph.units().size());
  std::iota(order.begin(), order.end(), UnitId{0});
  std::stable_sort(order.begin(), order.end(), [&](UnitId a, UnitId b) {
    const Unit &ua = graph.units()[a], &ub = graph.units()[b];
    return std::tie(ua.kind, ua.process, ua.thread) < std::tie(ub.kind, ub.process, ub.thread);
  });
  return order;
}

void check_timeline(const Timeline& timeline) {
  if (!timeline.graph || !timeline.result)
    throw Error(fmt::format("write_chrome_trace: timeline '{}' has no graph or no simulation result", timeline.label));
  const std::size_t tasks = timeline.graph->num_tasks();
  if (timeline.result->start_ns.size() != tasks || timeline.result->end_ns.size() != tasks)
    throw Error(fmt::format("write_chrome_trace: timeline '{}': the simulation has {} tasks, the graph {}: the result "
                            "is not a simulation of this graph",
                            timeline.label, timeline.result->start_ns.size(), tasks));
}

/// The file's text, built event by event: one event per line.
class EventWriter {
 public:
  explicit EventWriter(std::size_t tasks) {
    out_.reserve(64 + tasks * 256);  // a task's event is 150-300 bytes
    out_ += "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [";
  }

  void timeline(const Timeline& timeline, int pid) {
    metadata(pid, 0, "process_name", "name", timeline.label);
    metadata(pid, 0, "process_sort_index", "sort_index", pid);
    threads(*timeline.graph, *timeline.result, pid);
    tasks(*timeline.graph, *timeline.result, pid);
  }

  const std::string& finish() { return out_ += "\n]}\n"; }

 private:
  // tid = unit id + 1, so that a unit has the same tid in every timeline (transformations only
  // append units); the sort index gives the display order. Units without a live task are left out.
  void threads(const Graph& graph, const SimulationResult& result, int pid) {
    std::vector<bool> used(graph.units().size(), false);
    for (TaskId t = 0; t < graph.num_tasks(); ++t)
      if (!graph.removed(t) && result.start_ns[t] >= 0) used[graph.task(t).unit] = true;
    std::int64_t sort_index = 0;
    for (UnitId u : display_order(graph)) {
      if (!used[u]) continue;
      metadata(pid, std::int64_t{u} + 1, "thread_name", "name", graph.units()[u].name);
      metadata(pid, std::int64_t{u} + 1, "thread_sort_index", "sort_index", ++sort_index);
    }
  }

  void tasks(const Graph& graph, const SimulationResult& result, int pid) {
    std::vector<bool> critical(graph.num_tasks(), false);
    for (TaskId t : result.critical_path)
      if (t < critical.size()) critical[t] = true;
    NameCache names(graph);
    for (TaskId t = 0; t < graph.num_tasks(); ++t)
      if (!graph.task(t).removed && result.start_ns[t] >= 0) task(graph.task(t), t, result, pid, critical[t], names);
  }

  /// A complete ("X") event: ts and dur in us, args id, kind, phase, layer (if any), critical.
  void task(const Task& task, TaskId id, const SimulationResult& result, int pid, bool critical, NameCache& names) {
    next_event();
    fmt::format_to(std::back_inserter(out_), "{{\"ph\": \"X\", \"pid\": {}, \"tid\": {}, \"ts\": ", pid,
                   std::int64_t{task.unit} + 1);
    append_us(out_, result.start_ns[id]);
    out_ += ", \"dur\": ";
    append_us(out_, result.end_ns[id] - result.start_ns[id]);
    out_ += ", \"name\": ";
    out_ += names(task.name);
    const std::string_view kind = to_string(task.kind);
    fmt::format_to(std::back_inserter(out_), ", \"cat\": \"{}\", \"args\": {{\"id\": {}, \"kind\": \"{}\", \"phase\": \"{}\"",
                   kind, id, kind, to_string(task.phase));
    if (task.layer != 0) out_ += ", \"layer\": ", out_ += names(task.layer);
    out_ += critical ? ", \"critical\": true}}" : ", \"critical\": false}}";
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
};

void write_file(const std::string& path, const std::string& text) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!file) throw Error(path, Error::kNoEvent, "", fmt::format("cannot write the Chrome trace: {}", std::strerror(errno)));
  const bool written = std::fwrite(text.data(), 1, text.size(), file.get()) == text.size();
  const bool flushed = std::fflush(file.get()) == 0;
  if (!written || !flushed)
    throw Error(path, Error::kNoEvent, "", fmt::format("cannot write the Chrome trace: {}", std::strerror(errno)));
}

}  // namespace

void write_chrome_trace(const std::string& path, const std::vector<Timeline>& timelines) {
  std::size_t tasks = 0;
  for (const Timeline& timeline : timelines) {
    check_timeline(timeline);
    tasks += timeline.graph->num_tasks();
  }
  EventWriter events(tasks);
  for (std::size_t i = 0; i < timelines.size(); ++i) events.timeline(timelines[i], static_cast<int>(i + 1));
  write_file(path, events.finish());
}

}  // namespace daydream
