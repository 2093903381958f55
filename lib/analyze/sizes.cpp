// Where gradient and all-reduce sizes come from: a file of parameter counts, or a model size spread
// over a traced run's all-reduces of unknown size (analyze.hpp).
#include <fmt/format.h>
#include <simdjson.h>

#include <cmath>

#include "daydream/analyze.hpp"
#include "daydream/error.hpp"

namespace daydream {

std::vector<std::int64_t> read_parameter_counts(const std::string& path) {
  const auto fail = [&](const std::string& problem) {
    return Error(
        fmt::format("param_file '{}': {} (expected {{\"parameters\": [{{\"name\": \"conv1.weight\", "
                    "\"count\": 9408}}, ...]}} in forward order)",
                    path, problem));
  };
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (const auto error = parser.load(path).get(doc)) throw fail(simdjson::error_message(error));
  simdjson::dom::array list;
  if (doc["parameters"].get(list)) throw fail("no \"parameters\" array");
  std::vector<std::int64_t> counts;
  for (simdjson::dom::element entry : list) {
    std::int64_t count = 0;
    if (entry["count"].get(count) || count < 0)
      throw fail(fmt::format("parameter #{} has no whole, non-negative \"count\"", counts.size()));
    counts.push_back(count);
  }
  if (counts.empty()) throw fail("the list is empty");
  return counts;
}

bool set_gradient_bytes(BackwardPass& pass, const std::vector<std::int64_t>& counts, double bytes_per_element) {
  const std::size_t n = pass.gradients.size();
  if (n == 0) return true;
  if (n != counts.size()) return false;
  for (std::size_t i = 0; i < n; ++i)  // gradients become ready in reverse forward order
    pass.gradients[i].bytes = std::llround(static_cast<double>(counts[n - 1 - i]) * bytes_per_element);
  return true;
}

namespace {

/// `model_bytes` spread over each iteration's all-reduce tasks of unknown size, in proportion to
/// their measured durations; empty when model_bytes is kNone.
std::map<TaskId, std::int64_t> spread_model_bytes(const Graph& graph, const TraceCollectives& collectives,
                                                  std::int64_t model_bytes) {
  std::map<TaskId, std::int64_t> sizes;
  if (model_bytes == kNone) return sizes;
  std::map<std::int32_t, std::vector<TaskId>> unsized;  // by iteration
  for (const TraceCollective& c : collectives.list)
    if (c.allreduce && c.bytes == kNone)
      for (TaskId t : c.tasks) unsized[graph.task(t).iteration].push_back(t);
  for (const auto& [iteration, tasks] : unsized) {
    std::vector<double> weights;
    for (TaskId t : tasks) weights.push_back(static_cast<double>(graph.task(t).duration_ns));
    const auto parts = spread_bytes(model_bytes, weights);
    for (std::size_t i = 0; i < tasks.size(); ++i) sizes[tasks[i]] = parts[i];
  }
  return sizes;
}

}  // namespace

TracedAllreduceSizes traced_allreduce_sizes(const Graph& graph, const TraceCollectives& collectives,
                                            std::int64_t model_bytes) {
  const auto spread = spread_model_bytes(graph, collectives, model_bytes);
  TracedAllreduceSizes sizes;
  for (const TraceCollective& c : collectives.list) {
    if (!c.allreduce) continue;
    for (TaskId t : c.tasks) {  // one NCCL kernel per call in practice
      const auto guess = spread.find(t);
      if (c.bytes != kNone)
        sizes.bytes[t] = c.bytes / static_cast<std::int64_t>(c.tasks.size()), ++sizes.recorded;
      else if (guess != spread.end())
        sizes.bytes[t] = guess->second, ++sizes.spread;
      else
        ++sizes.unsized;
    }
  }
  return sizes;
}

}  // namespace daydream
