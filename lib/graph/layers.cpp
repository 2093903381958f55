// The JSON layer file: ranges on CPU threads that name layers (and phases) of the model.
#include "daydream/layers.hpp"

#include <simdjson.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "common/checked.hpp"
#include "daydream/error.hpp"
#include "daydream/ingest.hpp"
#include "graph/graph_access.hpp"

namespace daydream {
namespace {

struct LayerRange {
  TimeNs start, end;  // relative to the graph origin
  std::uint32_t name;
  std::optional<Phase> phase;
};

std::optional<Phase> parse_phase(std::string_view text) {
  if (text == "forward") return Phase::forward;
  if (text == "backward") return Phase::backward;
  if (text == "update") return Phase::update;
  return std::nullopt;
}

class LayerFileReader {
 public:
  LayerFileReader(Graph& graph, std::string file) : graph_(graph), file_(std::move(file)) {}

  // thread id -> ranges sorted by start
  std::map<std::int64_t, std::vector<LayerRange>> read(const std::string& json) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto error = parser.parse(json).get(doc)) fail(-1, "", fmt::format("invalid JSON ({})", simdjson::error_message(error)));
    simdjson::dom::array layers;
    if (doc["layers"].get(layers)) fail(-1, "layers", "missing or not an array");
    std::map<std::int64_t, std::vector<LayerRange>> by_thread;
    std::int64_t index = 0;
    for (auto entry : layers) read_entry(entry, index++, by_thread);
    for (auto& [thread, ranges] : by_thread)
      std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
    return by_thread;
  }

 private:
  [[noreturn]] void fail(std::int64_t index, std::string field, const std::string& problem) const {
    throw Error(file_, index, std::move(field), index < 0 ? problem : "layer entry: " + problem);
  }

  TimeNs time_field(simdjson::dom::element entry, std::int64_t index, const char* field) const {
    // Whole microseconds are exact; fractions go through a double (about 0.25 us at epoch times).
    simdjson::dom::element value;
    if (entry[field].get(value) || !value.is_number()) fail(index, field, "missing or not a number of microseconds");
    std::int64_t whole = 0;
    std::optional<TimeNs> ns;
    if (!value.get(whole)) ns = checked::mul(whole, 1000);
    else ns = checked::round_ns(value.get_double() * 1000.0);
    const auto relative = ns ? checked::sub(*ns, graph_.origin_ns) : std::nullopt;
    if (!ns || !is_trace_time(*ns) || !relative || !is_trace_time(*relative))
      fail(index, field, "outside the times daydream accepts (|t| < 2^62 ns, docs/formats.md)");
    return *relative;
  }

  void read_entry(simdjson::dom::element entry, std::int64_t index, std::map<std::int64_t, std::vector<LayerRange>>& out) {
    std::string_view name, phase_text;
    if (entry["name"].get(name)) fail(index, "name", "missing or not a string");
    std::int64_t thread = 0;
    if (entry["thread"].get(thread)) fail(index, "thread", "missing or not an integer thread id");
    LayerRange range{time_field(entry, index, "start_us"), time_field(entry, index, "end_us"), graph_.intern(name), {}};
    if (range.end < range.start) fail(index, "end_us", "ends before it starts");
    if (!entry["phase"].get(phase_text)) {
      range.phase = parse_phase(phase_text);
      if (!range.phase) fail(index, "phase", fmt::format("'{}' is not forward, backward or update", phase_text));
    }
    out[thread].push_back(range);
  }

  Graph& graph_;
  std::string file_;
};

// The innermost range containing `time`: the latest-starting one that has not ended.
const LayerRange* innermost(const std::vector<LayerRange>& ranges, TimeNs time) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), time, [](TimeNs t, const LayerRange& r) { return t < r.start; });
  while (it != ranges.begin()) {
    --it;
    if (time < it->end) return &*it;
  }
  return nullptr;
}

void inherit_from_launch(Graph& graph) {
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    if (graph.task(t).removed || graph.units()[graph.task(t).unit].kind == UnitKind::cpu_thread) continue;
    for (const auto& pred : graph.predecessors(t)) {
      if (pred.edge.timing != Timing::start_to_start) continue;  // launch edges are start-to-start
      const Task launch = graph.task(pred.task);
      detail::TaskRecord& record = GraphAccess::record(graph, t);
      record.layer = launch.layer;
      record.phase = launch.phase;
    }
  }
}

}  // namespace

std::size_t apply_layer_file(Graph& graph, const std::filesystem::path& path) {
  const InputFile file = read_input_file(path);
  const auto by_thread = LayerFileReader(graph, path.string()).read(file.contents);
  std::size_t assigned = 0;
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task task = graph.task(t);
    const Unit& unit = graph.units()[task.unit];
    if (task.removed || unit.kind != UnitKind::cpu_thread) continue;
    const auto ranges = by_thread.find(unit.thread);
    if (ranges == by_thread.end()) continue;
    const LayerRange* range = innermost(ranges->second, task.recorded_start_ns);
    if (!range) continue;
    detail::TaskRecord& record = GraphAccess::record(graph, t);
    record.layer = range->name;
    if (range->phase) record.phase = *range->phase;
    ++assigned;
  }
  inherit_from_launch(graph);
  return assigned;
}

}  // namespace daydream
