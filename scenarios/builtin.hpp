#pragma once
// The scenarios shipped with daydream (one file each in scenarios/; models in docs/scenarios.md).
#include "daydream/scenario.hpp"

namespace daydream::scenarios {

Scenario amp();
Scenario faster_gpu();
Scenario faster_network();
Scenario channels_last();
Scenario pinned_memory();
Scenario fused_adam();
Scenario restructure_bn();
Scenario cuda_graphs();
Scenario ddp();
Scenario p3();
Scenario dataloader_workers();
Scenario network();
Scenario rank_speed();
Scenario scale_out();
Scenario gpu();

/// All of the above, in this order.
std::vector<Scenario> builtin();

}  // namespace daydream::scenarios
