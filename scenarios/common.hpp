#pragma once
// Helpers shared by the scenario scripts: facts read off a graph that several models need.
#include <string>
#include <vector>

#include "daydream/graph.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {

/// The API call that launched a GPU task (its launch-edge predecessor), or kNoTask.
TaskId launch_call_of(const Graph& graph, TaskId gpu_task);

/// Median duration of the trace's kernel-launch calls (cudaLaunchKernel, cuLaunchKernel, ...);
/// `fallback_ns` when the graph has none.
TimeNs median_launch_call_ns(const Graph& graph, TimeNs fallback_ns = 5'000);

/// Removes GPU tasks together with the API calls that launched them (launching_call: by a launch
/// edge, or a communication edge for NCCL kernels; calls that launched nothing else). Returns the
/// number of calls removed.
std::size_t remove_with_launches(Graph& graph, const std::vector<TaskId>& gpu_tasks);

/// Median of a list of durations (0 when empty); the upper middle one for even counts, unlike
/// text::median (the lower one), which the graph builder's calibration uses.
TimeNs median_ns(std::vector<TimeNs> values);

// --- Blocks of work replaced as a whole (fused_adam, cuda_graphs; restructure_bn uses the ranges) ---

/// A stretch of one CPU thread's time covered by CPU ranges (Graph::ranges) whose names match a
/// TaskFilter-style pattern (ECMAScript, optional leading "(?i)"); nested and overlapping matches
/// are merged, so a window is an outermost matching range.
struct RangeWindow {
  UnitId unit = 0;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  bool contains(TimeNs time_ns) const { return start_ns <= time_ns && time_ns < end_ns; }
};
/// The windows of `pattern`, in (unit, start) order. Throws Error for an invalid pattern.
std::vector<RangeWindow> range_windows(const Graph& graph, const std::string& pattern);

/// The live tasks of every unit in recorded-start order (ties by id), indexed by unit id.
std::vector<std::vector<TaskId>> tasks_by_unit(const Graph& graph);

/// The GPU tasks a CUDA call launched (its launch or communication edges to GPU-stream tasks).
std::vector<TaskId> launched_by(const Graph& graph, TaskId call);

/// The task after / before `task` on its unit's chain (a cpu_ or gpu_sequential edge), or kNoTask.
TaskId chain_next(const Graph& graph, TaskId task);
TaskId chain_prev(const Graph& graph, TaskId task);

/// Where a block of tasks sits on one unit's chain: the task before its first task, the first task
/// after it that is not in the block, and the delays of those two chain edges; `release_ns` is the
/// first task's (for a block that starts its unit).
struct ChainSpot {
  TaskId prev = kNoTask;
  TimeNs delay_in_ns = 0;
  TaskId next = kNoTask;
  TimeNs delay_out_ns = 0;
  TimeNs release_ns = 0;
};
ChainSpot chain_spot(const Graph& graph, TaskId first, const std::vector<char>& in_block);

/// The edges that crossed the boundary of a removed block, as they were before the removal.
struct CrossingEdges {
  std::vector<Graph::EdgeRecord> in;   ///< outside -> block
  std::vector<Graph::EdgeRecord> out;  ///< block -> outside
};

/// Removes `tasks` as one block of work that disappears together. Edges between two tasks of the
/// block lose their delays first, so the bridges Graph::remove leaves carry only the delays of the
/// edges into and out of the block (the gaps around it), never the gaps inside it (which belong to
/// the removed work). CPU tasks go first in trace order, then GPU tasks in reverse trace order,
/// which keeps the bridging linear in the block's size on chains.
CrossingEdges remove_block(Graph& graph, std::vector<TaskId> tasks);

/// Inserts `task` on its unit between `prev` and `next` (either may be kNoTask; both on that
/// unit), with exactly `delay_in_ns` after `prev` and `delay_out_ns` before `next`. Without
/// `prev`, the new task is released when `release_ns` says.
TaskId insert_between(Graph& graph, NewTask task, TaskId prev, TaskId next, TimeNs delay_in_ns, TimeNs delay_out_ns,
                      TimeNs release_ns = 0);

}  // namespace daydream::scenarios
