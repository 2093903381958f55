#pragma once
// The batches a trace's main thread took from its DataLoader, and what their recorded waits say
// about the time a worker process takes to load one (docs/scenarios/dataloader_workers.md).
#include <string_view>
#include <vector>

#include "daydream/graph.hpp"

namespace daydream::scenarios {

inline constexpr std::string_view kLoaderRange = "enumerate(DataLoader)";

/// One `__next__` of the DataLoader on a CPU thread: the batch it takes and the tasks doing it.
struct BatchLoad {
  CpuRange range;
  std::vector<TaskId> tasks;  // CPU tasks inside the range, in recorded order
};

/// The outermost DataLoader ranges of the trace with their CPU tasks, in time order.
std::vector<BatchLoad> batch_loads(Graph& graph);

/// Where the main thread took one batch, as recorded.
struct BatchTake {
  /// The main-thread task that goes on once the batch is there: the first task of a DataLoader
  /// range (the wait is inside it), or the first task of a step opened after the fetch (the wait
  /// is the delay of an edge into it).
  TaskId task = kNoTask;
  /// The predecessor whose edge into `task` holds the wait (the largest delay), kNoTask when the
  /// wait is inside `task` or not recorded.
  TaskId wait_from = kNoTask;
  TimeNs gap_ns = -1;   ///< recorded time spent waiting and taking the batch; -1: not recorded
  TimeNs taken_ns = 0;  ///< when the main thread went on with the batch (relative to the origin)
};

/// One take per DataLoader range: the wait and the fetch are the range.
std::vector<BatchTake> takes_in_ranges(const std::vector<BatchLoad>& loads);
/// One take per iteration, for loops that open their step range after fetching the batch: the
/// wait is the delay of the edge into the iteration's first task, whatever its type.
std::vector<BatchTake> takes_before_steps(const Graph& graph);

/// Per-batch load times inferred from a run recorded with `recorded` > 0 workers.
struct LoadEstimate {
  TimeNs fetch_ns = 0;          ///< the smallest recorded gap: taking a batch that was ready
  std::vector<TimeNs> load_ns;  ///< per batch: its own measurement where known, else typical_ns
  std::vector<bool> measured;   ///< per batch: load_ns came from its own waits
  std::vector<bool> waited_for; ///< per batch: the main thread waited for it
  TimeNs typical_ns = 0;        ///< median of the measured loads (of the upper bounds when none)
  std::size_t waited = 0;       ///< batches the main thread waited for
  std::size_t measured_count = 0;
  bool upper_bound = false;     ///< no batch measured: typical_ns is an upper bound
};

/// A batch was waited for when its gap exceeds the fetch by more than this. Taking a batch that
/// is ready costs 70 to 100 us of Python (the recorded minimum), but its hand-over through the
/// pin-memory thread can add a millisecond or so: the ResNet-50 workers4 trace, whose steps never
/// waited for data (the workers kept up), has `__next__` calls of 1.25 to 1.40 ms. Loads take tens
/// to thousands of ms.
inline constexpr TimeNs kWaitedMinNs = 2'000'000;

/// Batch b is loaded by worker b mod k. When the main thread waited for batches b - k and b, the
/// worker went straight from one to the other (it held b's indices: prefetch >= 2), so
/// load(b) = taken(b) - taken(b - k); between waits two batches apart, the two loads share the
/// interval evenly. Other batches take the median of those, within the bound their own wait or
/// their predecessor's gives.
LoadEstimate estimate_loads(const std::vector<BatchTake>& takes, std::size_t recorded);

/// When each of the k recorded workers started its first batch of the trace (relative to the
/// origin; may be negative). The window may open mid-stream, with the workers out of phase: worker
/// j's first batch that was waited for became ready when its wait ended, and the worker had been
/// loading its batches of the trace back to back until then. A worker never waited for was ready
/// with its first batch when the main thread took it.
std::vector<TimeNs> recorded_first_starts(const std::vector<BatchTake>& takes, const LoadEstimate& estimate,
                                          std::size_t recorded, TimeNs fetch_ns);

}  // namespace daydream::scenarios
