// p3: priority-based parameter propagation (Jayarajan et al., MLSys 2019) on n = machines x gpus GPUs.
//
// Model (docs/scenarios/p3.md): every gradient is cut into slices of at most `slice` bytes, each
// a ring all-reduce of its own (latency + 2(n-1)/n * bytes / bandwidth) on one communication
// channel. A slice is ready with its gradient (as in ddp). The channel sends the ready slice of
// the earliest layer first - forward order, so the gradients ready last in the backward pass go
// first - which the returned schedule policy encodes. There is no global barrier: once its
// slices are through, a parameter's update (its share of the optimizer step's GPU tasks) runs
// just before the next forward pass reaches its layer, so the next forward overlaps the rest of
// the communication. Where that layer cannot be located (the last pass: no next forward) the
// update stays in place and waits for its own slices only; where the step's GPU tasks do not
// split evenly over the parameters, the step waits for all slices, as in ddp. A trace's own
// all-reduces are removed and replaced by slices.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "builtin.hpp"
#include "data_parallel.hpp"
#include "daydream/analyze.hpp"
#include "daydream/transform.hpp"
#include "daydream/error.hpp"
#include "daydream/simulate.hpp"

namespace daydream::scenarios {
namespace {

using SliceOrder = std::unordered_map<TaskId, double>;   // slice -> rank on the channel (lower first)
using SlicesByParam = std::vector<std::vector<TaskId>>;  // forward order

constexpr Edge kCommEdge{EdgeType::communication, Timing::finish_to_start, 0, false};

TaskId insert_slice(Graph& graph, UnitId channel, std::size_t param, std::int64_t bytes, const RingCost& cost,
                    TaskId ready) {
  NewTask task;
  task.name = fmt::format("p3 slice of parameter {} ({})", param, format_bytes(static_cast<double>(bytes)));
  task.kind = TaskKind::communication;
  task.unit = channel;
  task.duration_ns = cost.allreduce_ns(bytes);
  task.after = {ready};
  task.phase = Phase::backward;
  return graph.insert(task);
}

/// Cuts every gradient of the pass into slices, ranked earliest layer first.
SlicesByParam insert_slices(Graph& graph, UnitId channel, const BackwardPass& pass, const RingCost& cost,
                            std::int64_t slice, SliceOrder& order) {
  const std::size_t params = pass.gradients.size();
  SlicesByParam slices(params);
  for (std::size_t j = 0; j < params; ++j) {
    const Gradient& g = pass.gradients[params - 1 - j];
    for (std::int64_t offset = 0; offset < g.bytes; offset += slice) {
      const TaskId id = insert_slice(graph, channel, j, std::min(slice, g.bytes - offset), cost, g.ready);
      order.emplace(id, static_cast<double>(order.size()));
      slices[j].push_back(id);
    }
  }
  return slices;
}

/// GPU tasks per parameter in the optimizer step, or 0 when they do not split evenly.
std::size_t update_tasks_per_param(const BackwardPass& pass) {
  const std::size_t params = pass.gradients.size(), tasks = pass.update_tasks.size();
  return params > 0 && tasks >= params && tasks % params == 0 ? tasks / params : 0;
}

/// The GPU tasks from the step's last update to the next pass's first gradient, along the stream
/// (the next forward pass); empty when the stream does not lead there.
std::vector<TaskId> next_forward(const Graph& graph, const BackwardPass& pass, const BackwardPass* next) {
  if (next == nullptr || next->gradients.empty() || pass.update_tasks.empty()) return {};
  const TaskId stop = next->gradients.front().ready;
  std::vector<TaskId> tasks;
  for (TaskId t = successor(graph, pass.update_tasks.back(), EdgeType::gpu_sequential); t != kNoTask;
       t = successor(graph, t, EdgeType::gpu_sequential)) {
    if (t == stop) return tasks;
    tasks.push_back(t);
  }
  return {};
}

/// Where the next forward first uses parameter j (forward order): at the same fraction of the
/// forward's GPU time as the share of the backward pass that was still to run when j's gradient
/// became ready (a layer's backward takes about a fixed multiple of its forward).
std::vector<TaskId> forward_gates(const Graph& graph, const BackwardPass& pass, const std::vector<TaskId>& forward) {
  std::vector<double> start(forward.size(), 0);  // cumulative GPU time before each forward task
  for (std::size_t i = 1; i < forward.size(); ++i)
    start[i] = start[i - 1] + static_cast<double>(graph.task(forward[i - 1]).duration_ns);
  const double total = start.back() + static_cast<double>(graph.task(forward.back()).duration_ns);
  const auto& g = pass.gradients;
  const double first = static_cast<double>(g.front().ready_ns), last = static_cast<double>(g.back().ready_ns);
  std::vector<TaskId> gates(g.size());
  for (std::size_t j = 0; j < g.size(); ++j) {
    const double still_to_run =
        last > first ? (last - static_cast<double>(g[g.size() - 1 - j].ready_ns)) / (last - first) : 0;
    const auto at = std::upper_bound(start.begin(), start.end(), still_to_run * total) - start.begin() - 1;
    gates[j] = forward[static_cast<std::size_t>(std::max<std::ptrdiff_t>(at, 0))];
  }
  return gates;
}

/// Each parameter's update moves to just before its layer's next forward, after its slices.
void move_updates_before_forward(Graph& graph, const BackwardPass& pass, const SlicesByParam& slices,
                                 const std::vector<TaskId>& gates, std::size_t per_param) {
  std::map<TaskId, TaskId> last_at_gate;  // updates sharing a gate run in forward order
  const std::size_t params = pass.gradients.size();
  for (std::size_t j = 0; j < params; ++j) {
    NewTask update;
    update.name = fmt::format("p3 update of parameter {}", j);
    update.kind = TaskKind::kernel;
    update.unit = graph.task(gates[j]).unit;
    for (std::size_t k = 0; k < per_param; ++k)
      update.duration_ns += graph.task(pass.update_tasks[j * per_param + k]).duration_ns;
    update.after = slices[j].empty() ? std::vector<TaskId>{pass.gradients[params - 1 - j].ready} : slices[j];
    if (const auto it = last_at_gate.find(gates[j]); it != last_at_gate.end()) update.after.push_back(it->second);
    update.before = {gates[j]};
    update.phase = Phase::update;
    last_at_gate[gates[j]] = graph.insert(update);
  }
  for (TaskId t : pass.update_tasks) graph.remove(t);
}

/// Each parameter's slices gate its first update task where it is.
void gate_updates_in_place(Graph& graph, const BackwardPass& pass, const SlicesByParam& slices, std::size_t per_param) {
  for (std::size_t j = 0; j < slices.size(); ++j)
    for (TaskId s : slices[j]) graph.connect(s, pass.update_tasks[j * per_param], kCommEdge);
}

void gate_barrier(Graph& graph, const BackwardPass& pass, const SlicesByParam& slices) {
  if (pass.barrier == kNoTask) return;
  for (const auto& param : slices)
    for (TaskId s : param) graph.connect(s, pass.barrier, kCommEdge);
}

struct GatingCounts {
  std::size_t forward = 0, in_place = 0, barrier = 0;
};

void gate_pass(Graph& graph, const BackwardPass& pass, const BackwardPass* next, const SlicesByParam& slices,
               GatingCounts& counts) {
  const std::size_t per_param = update_tasks_per_param(pass);
  const auto forward = per_param == 0 ? std::vector<TaskId>{} : next_forward(graph, pass, next);
  if (per_param == 0) {
    gate_barrier(graph, pass, slices);
    ++counts.barrier;
  } else if (forward.empty()) {
    gate_updates_in_place(graph, pass, slices, per_param);
    ++counts.in_place;
  } else {
    move_updates_before_forward(graph, pass, slices, forward_gates(graph, pass, forward), per_param);
    ++counts.forward;
  }
}

std::shared_ptr<const SchedulePolicy> priority_policy(std::shared_ptr<const SliceOrder> order) {
  return std::make_shared<PriorityPolicy>(
      [order](const Graph& graph, TaskId task) {
        const auto it = order->find(task);
        return it != order->end() ? it->second : TraceOrderPolicy{}.priority(graph, task);
      },
      "p3 (slices by layer, else trace order)");
}

std::vector<BackwardPass> backward_passes(const Graph& graph, const TraceCollectives& collectives) {
  auto passes = find_backward_passes(graph, collectives);
  passes.erase(std::remove_if(passes.begin(), passes.end(), [](const auto& p) { return p.gradients.empty(); }),
               passes.end());
  if (passes.empty())
    throw Error(
        "the trace shows no backward pass: no AccumulateGrad range (torch::autograd::AccumulateGrad) "
        "tells when gradients become ready");
  return passes;
}

ScenarioOutcome apply(Graph& graph, const ScenarioParams& params) {
  ScenarioOutcome out;
  const TraceCollectives collectives = read_trace_collectives(graph);
  const auto traced = traced_allreduce_tasks(collectives);
  if (!traced.empty()) {
    remove_with_launches(graph, traced);
    out.notes.push_back(fmt::format("removed the trace's {} all-reduce tasks (replaced by slices)", traced.size()));
  }
  if (ranks_of(params) == 1) {
    out.notes.push_back("one GPU (machines = gpus = 1): nothing to exchange");
    return out;
  }
  const RingCost cost = cluster_cost(params, collectives, out.notes);
  auto passes = backward_passes(graph, collectives);
  out.notes.push_back(assign_sizes(graph, passes, params));
  const UnitId channel = add_comm_channel(graph, "p3 slices");
  const auto slice = std::llround(params.number("slice"));
  auto order = std::make_shared<SliceOrder>();
  GatingCounts counts;
  for (std::size_t k = 0; k < passes.size(); ++k) {
    const auto slices = insert_slices(graph, channel, passes[k], cost, slice, *order);
    gate_pass(graph, passes[k], k + 1 < passes.size() ? &passes[k + 1] : nullptr, slices, counts);
  }
  out.notes.push_back(fmt::format(
      "inserted {} slices of at most {}; updates moved before the next forward in {} "
      "passes, gated in place in {}, behind the step's barrier in {}",
      order->size(), format_bytes(params.number("slice")), counts.forward, counts.in_place, counts.barrier));
  out.policy = priority_policy(std::move(order));
  return out;
}

std::vector<ScenarioParam> p3_params() {
  auto params = data_parallel_params();
  params.erase(std::remove_if(params.begin(), params.end(),
                              [](const ScenarioParam& p) { return p.name == "bucket" || p.name == "first_bucket"; }),
               params.end());  // p3 sends slices, not buckets
  params.push_back({"slice", ParamKind::bytes, 50'000 * 4.0,  // P3's slices of 50,000 fp32 parameters
                    "largest slice of a gradient sent as one message", 0, std::numeric_limits<double>::infinity(),
                    true});
  return params;
}

}  // namespace

Scenario p3() {
  return {"p3",
          "priority-based parameter propagation: sliced gradients, earliest layer first; each update waits only for "
          "its own slices and the next forward overlaps the rest",
          p3_params(), apply};
}

}  // namespace daydream::scenarios
