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
// split evenly over the parameters, the step waits for all slices, as in ddp (p3_updates.cpp).
// A trace's own all-reduces are removed and replaced by slices.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <unordered_map>

#include "builtin.hpp"
#include "common/text.hpp"
#include "data_parallel.hpp"
#include "p3_updates.hpp"
#include "daydream/simulate.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

using SliceOrder = std::unordered_map<TaskId, double>;  // slice -> rank on the channel (lower first)

/// Cuts every gradient of the pass into slices, each ready with its gradient, ranked earliest
/// layer first.
SlicesByParam insert_slices(Graph& graph, UnitId channel, const BackwardPass& pass, const RingCost& cost,
                            std::int64_t slice, SliceOrder& order) {
  const std::size_t params = pass.gradients.size();
  SlicesByParam slices(params);
  for (std::size_t j = 0; j < params; ++j) {
    const Gradient& g = pass.gradients[params - 1 - j];
    for (std::int64_t offset = 0; offset < g.bytes; offset += slice) {
      const std::int64_t bytes = std::min(slice, g.bytes - offset);
      const TaskId id = graph.insert(backward_comm_task(
          fmt::format("p3 slice of parameter {} ({})", j, text::megabytes(static_cast<double>(bytes))), channel,
          cost.allreduce_ns(bytes), g.ready));
      order.emplace(id, static_cast<double>(order.size()));
      slices[j].push_back(id);
    }
  }
  return slices;
}

ScenarioOutcome apply(Graph& graph, const ScenarioParams& params) {
  ScenarioOutcome out;
  const TraceCollectives collectives = read_trace_collectives(graph);
  record_world_size(graph, params);
  if (const auto traced = traced_allreduce_tasks(collectives); !traced.empty()) {
    remove_with_launches(graph, traced);
    out.notes.push_back(fmt::format("removed the trace's {} all-reduce tasks (replaced by slices)", traced.size()));
  }
  if (ranks_of(params) == 1) {
    out.notes.push_back("one GPU (machines = gpus = 1): nothing to exchange");
    return out;
  }
  const RingCost cost = cluster_cost(params, collectives, out.notes);
  auto passes = backward_passes(graph, collectives, true);
  out.notes.push_back(assign_sizes(graph, passes, params));
  const UnitId channel = add_comm_channel(graph, "p3 slices");
  SliceOrder order;
  std::array<std::size_t, 3> counts{};  // by Gating
  for (std::size_t k = 0; k < passes.size(); ++k) {
    const auto slices = insert_slices(graph, channel, passes[k], cost, std::llround(params.number("slice")), order);
    ++counts[gate_pass(graph, passes[k], k + 1 < passes.size() ? &passes[k + 1] : nullptr, slices)];
  }
  out.notes.push_back(fmt::format("inserted {} slices of at most {}; updates moved before the next forward in {} "
                                  "passes, gated in place in {}, behind the step's barrier in {}", order.size(),
                                  text::megabytes(params.number("slice")), counts[kBeforeForward], counts[kInPlace],
                                  counts[kBehindBarrier]));
  out.policy = std::make_shared<PrecomputedPolicy>(
      priorities_over_trace_order(graph, order, "p3 (slices by layer, else trace order)"));
  return out;
}

std::vector<ScenarioParam> p3_params() {
  auto params = data_parallel_params();
  std::erase_if(params, [](const ScenarioParam& p) {  // p3 sends slices, not buckets
    return p.name == "bucket" || p.name == "first_bucket";
  });
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
