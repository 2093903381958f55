#pragma once
// p3: where each parameter's update waits for its slices (p3_updates.cpp).
#include <vector>

#include "daydream/analyze.hpp"

namespace daydream::scenarios {

using SlicesByParam = std::vector<std::vector<TaskId>>;  // each parameter's slices, in forward order

enum Gating : std::uint8_t { kBeforeForward, kInPlace, kBehindBarrier };

/// Where the pass's updates wait for their slices: moved before the next forward (next_forward
/// from the step to `next`) where there is one; else each parameter's slices gate its first update
/// task in place; where the step's GPU tasks do not split over the parameters, all slices gate
/// the barrier. `next` is null for the last pass.
Gating gate_pass(Graph& graph, const BackwardPass& pass, const BackwardPass* next, const SlicesByParam& slices);

}  // namespace daydream::scenarios
