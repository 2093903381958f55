#pragma once
// The one walk over the part of a critical path inside a window, shared by the breakdown by
// category and layer (breakdown.cpp) and the bottleneck report's by operator and kernel
// (bottleneck.cpp), so that every table counts each stretch of the path once and alike.
#include <algorithm>

#include "daydream/simulate.hpp"

namespace daydream::detail {

/// Walks `result.critical_path` inside [from_ns, to_ns): `covered(task, ns)` for the time of each
/// task not covered by the tasks before it (tasks adding none are not reported), `uncovered(ns)`
/// for each stretch between the first task in the window and a later task that no task covers.
template <class Covered, class Uncovered>
void walk_critical_path(const SimulationResult& result, TimeNs from_ns, TimeNs to_ns, Covered covered,
                        Uncovered uncovered) {
  TimeNs cursor = from_ns;  // end of the path covered so far
  bool started = false;
  for (TaskId t : result.critical_path) {
    const TimeNs start = std::max(result.start_ns[t], from_ns), end = std::min(result.end_ns[t], to_ns);
    if (end < start || (end == start && result.end_ns[t] != result.start_ns[t])) continue;  // outside the window
    if (!started) cursor = start, started = true;
    if (start > cursor) uncovered(start - cursor);
    const TimeNs ns = end - std::max(start, cursor);
    if (ns <= 0) continue;
    covered(t, ns);
    cursor = end;
  }
}

}  // namespace daydream::detail
