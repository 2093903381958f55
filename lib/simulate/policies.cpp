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

}  // namespace daydream
