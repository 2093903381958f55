// p3: where each parameter's update waits for its slices (the model: scenarios/p3.cpp;
// docs/scenarios/p3.md). No global barrier: an update runs just before the next forward pass
// reaches its layer, so the next forward overlaps the rest of the communication.
#include "p3_updates.hpp"

#include <fmt/format.h>

#include <map>

#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

/// Each parameter's update (its share of the step's GPU tasks, as one kernel) moves to just before
/// its layer's first use in the next forward, after its slices; updates sharing a use run in
/// forward order.
void move_updates_before_forward(Graph& graph, const BackwardPass& pass, const SlicesByParam& slices,
                                 const std::vector<TaskId>& uses, std::size_t per_param) {
  std::map<TaskId, TaskId> last_at_use;
  const std::size_t params = pass.gradients.size();
  for (std::size_t j = 0; j < params; ++j) {
    NewTask update;
    update.name = fmt::format("p3 update of parameter {}", j);
    update.kind = TaskKind::kernel;
    update.unit = graph.task(uses[j]).unit;
    update.before = {uses[j]};
    update.phase = Phase::update;
    for (std::size_t k = 0; k < per_param; ++k)
      update.duration_ns += graph.task(pass.update_tasks[j * per_param + k]).duration_ns;
    update.after = slices[j].empty() ? std::vector<TaskId>{pass.gradients[params - 1 - j].ready} : slices[j];
    if (const auto it = last_at_use.find(uses[j]); it != last_at_use.end()) update.after.push_back(it->second);
    last_at_use[uses[j]] = graph.insert(update);
  }
  for (TaskId t : pass.update_tasks) graph.remove(t);
}

}  // namespace

Gating gate_pass(Graph& graph, const BackwardPass& pass, const BackwardPass* next, const SlicesByParam& slices) {
  const std::size_t per_param = update_tasks_per_gradient(pass);
  const auto forward = per_param > 0 && next != nullptr ? next_forward(graph, pass, *next) : std::vector<TaskId>{};
  if (!forward.empty()) {
    move_updates_before_forward(graph, pass, slices, forward_use_tasks(graph, pass, forward), per_param);
    return kBeforeForward;
  }
  constexpr Edge kCommEdge{EdgeType::communication, Timing::finish_to_start, 0, false};
  for (std::size_t j = 0; j < slices.size(); ++j)
    for (TaskId s : slices[j])
      if (const TaskId gate = per_param > 0 ? pass.update_tasks[j * per_param] : pass.barrier; gate != kNoTask)
        graph.connect(s, gate, kCommEdge);
  return per_param > 0 ? kInPlace : kBehindBarrier;
}

}  // namespace daydream::scenarios
