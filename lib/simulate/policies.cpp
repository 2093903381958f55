// Schedule policies beyond the default trace order.
#include <fmt/format.h>

#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream {

double FifoPolicy::priority(const Graph& graph, TaskId task) const {
  return static_cast<double>(graph.task(task).recorded_start_ns);
}

double PrecomputedPolicy::priority(const Graph&, TaskId task) const {
  if (task >= priorities_.size())
    throw Error(fmt::format("schedule '{}': no priority for task {} ({} given)", name_, task, priorities_.size()));
  return priorities_[task];
}

}  // namespace daydream
