#pragma once
// ddp on a trace of a DDP run (ddp_traced.cpp).
#include <string>
#include <vector>

#include "daydream/analyze.hpp"
#include "daydream/scenario.hpp"

namespace daydream::scenarios {

/// A trace of a DDP run (traced all-reduces): DDP's own copies change with broadcast_buffers and
/// gradient_as_bucket_view; the all-reduces are re-costed for a given cluster and re-bucketed for
/// given caps, else kept as measured. Appends what it did to `notes`.
void apply_to_traced_run(Graph& graph, const TraceCollectives& collectives, const ScenarioParams& params,
                         std::vector<std::string>& notes);

}  // namespace daydream::scenarios
