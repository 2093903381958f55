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
// A split scenario (ScenarioSplit): restructure_p3 inserts and gates the slices and ranks them,
// time_p3 costs them for the link (intra, inter, bandwidth, latency), so a sweep over the network
// slices once.
#include <fmt/format.h>

#include <algorithm>
#include <any>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

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
/// layer first. Inserted at 0 ns; time_ring_messages costs each for its bytes (appended to `timed`).
SlicesByParam insert_slices(Graph& graph, UnitId channel, const BackwardPass& pass, std::int64_t slice,
                            SliceOrder& order, std::vector<std::pair<TaskId, std::int64_t>>& timed) {
  const std::size_t params = pass.gradients.size();
  SlicesByParam slices(params);
  for (std::size_t j = 0; j < params; ++j) {
    const Gradient& g = pass.gradients[params - 1 - j];
    for (std::int64_t offset = 0; offset < g.bytes; offset += slice) {
      const std::int64_t bytes = std::min(slice, g.bytes - offset);
      const TaskId id = graph.insert(backward_comm_task(
          fmt::format("p3 slice of parameter {} ({})", j, text::megabytes(static_cast<double>(bytes))), channel, 0,
          g.ready));
      order.emplace(id, static_cast<double>(order.size()));
      slices[j].push_back(id);
      timed.emplace_back(id, bytes);
    }
  }
  return slices;
}

/// What restructure_p3 leaves for time_p3: the slices to cost and the schedule.
struct P3Plan {
  RingMessages slices;
  std::shared_ptr<const SchedulePolicy> policy;
};

P3Plan restructure_p3(Graph& graph, const ScenarioParams& params) {
  P3Plan plan;
  RingMessages& ring = plan.slices;
  ring.collectives = read_trace_collectives(graph);
  record_world_size(graph, params);
  if (const auto traced = traced_allreduce_tasks(ring.collectives); !traced.empty()) {
    remove_with_launches(graph, traced);
    ring.notes_before.push_back(fmt::format("removed the trace's {} all-reduce tasks (replaced by slices)", traced.size()));
  }
  if (ranks_of(params) == 1) {
    ring.notes_before.push_back("one GPU (machines = gpus = 1): nothing to exchange");
    return plan;
  }
  ring.costed = true;
  auto passes = backward_passes(graph, ring.collectives, true);
  ring.notes_after.push_back(assign_sizes(graph, passes, params));
  const UnitId channel = add_comm_channel(graph, "p3 slices");
  SliceOrder order;
  std::array<std::size_t, 3> counts{};  // by Gating
  for (std::size_t k = 0; k < passes.size(); ++k) {
    const auto slices =
        insert_slices(graph, channel, passes[k], std::llround(params.number("slice")), order, ring.messages);
    ++counts[gate_pass(graph, passes[k], k + 1 < passes.size() ? &passes[k + 1] : nullptr, slices)];
  }
  ring.notes_after.push_back(fmt::format("inserted {} slices of at most {}; updates moved before the next forward in {} "
                                         "passes, gated in place in {}, behind the step's barrier in {}",
                                         order.size(), text::megabytes(params.number("slice")),
                                         counts[kBeforeForward], counts[kInPlace], counts[kBehindBarrier]));
  plan.policy = std::make_shared<PrecomputedPolicy>(
      priorities_over_trace_order(graph, order, "p3 (slices by layer, else trace order)"));
  return plan;
}

ScenarioOutcome time_p3(Graph& graph, const ScenarioParams& params, const std::any& any_plan) {
  const auto& plan = std::any_cast<const P3Plan&>(any_plan);
  ScenarioOutcome out{plan.policy, {}};
  time_ring_messages(graph, params, plan.slices, out.notes);
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
  return split_scenario("p3",
                        "priority-based parameter propagation: sliced gradients, earliest layer first; each update "
                        "waits only for its own slices and the next forward overlaps the rest",
                        p3_params(),
                        {link_params(),
                         [](Graph& graph, const ScenarioParams& params) { return std::any(restructure_p3(graph, params)); },
                         time_p3});
}

}  // namespace daydream::scenarios
