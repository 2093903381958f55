// pinned_memory: what if the host-to-device copies read pinned (page-locked) memory and were
// issued with non_blocking=True (DataLoader(pin_memory=True) + tensor.to(device, non_blocking=True))?
//
// From pageable memory (lib/graph: cpu_tasks.cpp blocks_host, gpu_edges.cpp staged_copy) a copy
// call stages the data through a driver buffer: the call lasts about as long as the copy, the
// copy starts only once the first chunk is staged (its launch edge carries that offset), and
// PyTorch's blocking `.to()` then synchronises the stream. With pinned memory and non_blocking:
//   copy duration   = bytes / bandwidth (when the trace records the size; else unchanged)
//   launch delay    = the trace's calibrated memcpy launch latency (no staging)
//   copy call       = min(recorded, median kernel-launch call): an ordinary asynchronous launch
//   synchronisation = the blocking calls of the copy's own operator that waited for it (the
//                     stream sync of aten::copy_) are removed; the CPU goes on (non_blocking=1).
// docs/scenarios/pinned_memory.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "builtin.hpp"
#include "daydream/model.hpp"
#include "daydream/analyze.hpp"
#include "daydream/transform.hpp"
#include "daydream/error.hpp"

namespace daydream::scenarios {
namespace {

struct PinnedChanges {
  std::size_t copies = 0, sized = 0, calls_shortened = 0, syncs_removed = 0;
  TimeNs copy_ns_before = 0, copy_ns_after = 0;
};

// Blocking CPU calls that wait for `copy` on behalf of the operator that issued it (same
// operator as the launch call: PyTorch's aten::copy_ synchronises the stream after a
// non-pinned/blocking copy).
std::vector<TaskId> own_synchronisations(const Graph& graph, TaskId copy, TaskId call) {
  std::vector<TaskId> waits;
  const std::int64_t op = graph.task(call).op_event;
  for (const auto& s : graph.successors(copy)) {
    const Task& waiter = graph.task(s.task);
    if (s.edge.type == EdgeType::sync && waiter.blocking && op != kNone && waiter.op_event == op) waits.push_back(s.task);
  }
  return waits;
}

// The CPU no longer waits for the copy: the wait goes first (removing the call alone would
// bridge it to the next CPU task), then the call.
void stop_waiting(Graph& graph, TaskId copy, TaskId waiter) {
  graph.disconnect(copy, waiter);
  graph.remove(waiter);
}

void make_pinned(Graph& graph, TaskId copy, double bytes_per_s, TimeNs launch_cost_ns, bool non_blocking,
                 PinnedChanges& changes) {
  const Task& task = graph.task(copy);
  changes.copy_ns_before += task.duration_ns;
  if (task.bytes != kNone && task.bytes >= 0) {
    graph.set_duration(copy, transfer_ns(static_cast<double>(task.bytes), bytes_per_s));
    ++changes.sized;
  }
  changes.copy_ns_after += graph.duration_ns(copy);  // `task` may not show it: set_duration on shared records
  ++changes.copies;
  const TaskId call = predecessor(graph, copy, EdgeType::launch);
  if (call == kNoTask) return;  // launched before profiling began: only its duration changes
  graph.edge(call, copy).delay_ns = graph.calibration().launch_latency_ns[static_cast<std::size_t>(TaskKind::memcpy)];
  if (graph.duration_ns(call) > launch_cost_ns) graph.set_duration(call, launch_cost_ns), ++changes.calls_shortened;
  if (!non_blocking) return;
  for (TaskId waiter : own_synchronisations(graph, copy, call)) stop_waiting(graph, copy, waiter), ++changes.syncs_removed;
}

ScenarioOutcome apply_pinned_memory(Graph& graph, const ScenarioParams& params) {
  const double bytes_per_s = params.number("bandwidth");
  const bool non_blocking = params.integer("non_blocking") != 0;
  const TimeNs launch_cost_ns = median_launch_call_ns(graph);
  // Host-to-device copies not already from pinned memory ("Memcpy HtoD (Pageable -> Device)";
  // a plain "Memcpy HtoD" is taken as pageable, PyTorch's default).
  const auto copies = graph.select(TaskFilter().kind(TaskKind::memcpy).name("HtoD").name_not("Pinned"));
  ScenarioOutcome outcome;
  if (copies.empty()) {
    outcome.notes.push_back("no host-to-device copies from pageable memory in the graph: nothing changed");
    return outcome;
  }
  PinnedChanges changes;
  for (TaskId copy : copies) make_pinned(graph, copy, bytes_per_s, launch_cost_ns, non_blocking, changes);
  outcome.notes.push_back(fmt::format(
      "{} host-to-device copies made pinned: {} with a known size now take bytes / {:g} GB/s ({:.3f} ms -> {:.3f} ms "
      "of copy time); {} copy calls shortened to the median launch call ({} ns); {} stream synchronisations removed",
      changes.copies, changes.sized, bytes_per_s / 1e9, static_cast<double>(changes.copy_ns_before) / 1e6,
      static_cast<double>(changes.copy_ns_after) / 1e6, changes.calls_shortened, launch_cost_ns, changes.syncs_removed));
  return outcome;
}

}  // namespace

Scenario pinned_memory() {
  return {"pinned_memory",
          "pinned host memory: host-to-device copies asynchronous at pinned-memory bandwidth",
          {{"bandwidth", ParamKind::bandwidth, 12e9,  // 12 GB/s: a pinned copy over PCIe 3.0 x16 (15.75 GB/s peak)
            "pinned host-to-device copy bandwidth (bytes / bandwidth per copy of known size)", 0,
            std::numeric_limits<double>::infinity(), true},
           {"non_blocking", ParamKind::integer, 1,
            "1: .to(non_blocking=True), the copy's operator no longer synchronises; 0: it still does", 0, 1}},
          apply_pinned_memory};
}

}  // namespace daydream::scenarios
