#pragma once
// ddp on a trace of a DDP run (ddp_traced.cpp).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "daydream/analyze.hpp"
#include "daydream/scenario.hpp"

namespace daydream::scenarios {

/// What restructure_traced_run leaves for time_traced_run: the all-reduce tasks to cost, and
/// the notes of the structural changes.
struct TracedRunPlan {
  std::vector<std::string> notes;  ///< DDP's copies removed, or why nothing is re-costed
  bool recost = false;             ///< a cluster is given: every sized traced all-reduce re-costed
  bool rebucket = false;           ///< bucket caps are given: merged buckets costed
  TracedAllreduceSizes sizes;
  std::vector<std::pair<TaskId, std::int64_t>> merged;  ///< each merged bucket's task and bytes
  std::string rebucket_note;
};

/// A trace of a DDP run (traced all-reduces): DDP's own copies change with broadcast_buffers and
/// gradient_as_bucket_view; with given caps, each pass's consecutive all-reduces merge (the
/// merged-away ones go with their launch calls). Changes no duration.
TracedRunPlan restructure_traced_run(Graph& graph, const TraceCollectives& collectives, const ScenarioParams& params);

/// The all-reduces of the plan re-costed for a given cluster and the merged buckets costed, else
/// kept as measured. Appends what it did to `notes`.
void time_traced_run(Graph& graph, const TraceCollectives& collectives, const ScenarioParams& params,
                     const TracedRunPlan& plan, std::vector<std::string>& notes);

}  // namespace daydream::scenarios
