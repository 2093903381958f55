// Schedule policies beyond the default trace order.
#include <fmt/format.h>

#include "daydream/error.hpp"
#include "daydream/simulate.hpp"

namespace daydream {

// Ties among tasks ready at the same time go by trace order.
double FifoPolicy::priority(const Graph& graph, TaskId task) const { return TraceOrderPolicy{}.priority(graph, task); }

double PrecomputedPolicy::priority(const Graph&, TaskId task) const {
  if (task >= priorities_.size())
    throw Error(fmt::format("schedule '{}': no priority for task {} ({} given)", name_, task, priorities_.size()));
  return priorities_[task];
}

PrecomputedPolicy priorities_over_trace_order(const Graph& graph, const std::unordered_map<TaskId, double>& priorities,
                                              std::string name) {
  const TraceOrderPolicy trace_order;
  std::vector<double> all(graph.num_tasks());
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const auto given = priorities.find(t);
    all[t] = given != priorities.end() ? given->second : trace_order.priority(graph, t);
  }
  return PrecomputedPolicy(std::move(all), std::move(name));
}

}  // namespace daydream
