// Graph::fingerprint(): a 64-bit FNV-1a hash of everything a simulation or a scenario reads.
// Distributed sweeps compare it between the caller's graph and the graph a worker rebuilds from
// the same trace files, so it must not depend on the machine: integers are fed little-endian at
// a fixed width, strings by content (not by their index in the string table), floats never.
#include <bit>
#include <cstdint>
#include <string_view>

#include "common/fnv1a.hpp"
#include "daydream/graph.hpp"

namespace daydream {
namespace {

void hash_units(Fnv1a& h, const Graph& graph) {
  h.integer(graph.units().size());
  for (const Unit& unit : graph.units()) {
    h.integer(unit.kind);
    h.text(unit.name);
    h.integer(unit.background);
  }
}

/// Removed tasks are included (with their flag): task ids stay dense, so they shift nothing.
void hash_tasks(Fnv1a& h, const Graph& graph) {
  h.integer(graph.num_tasks());
  for (TaskId id = 0; id < graph.num_tasks(); ++id) {
    const Task& task = graph.task(id);
    h.integer(task.kind);
    h.integer(task.unit);
    h.text(graph.name(id));
    h.integer(task.duration_ns);
    h.integer(task.release_ns);
    h.integer(task.iteration);
    h.integer(task.removed);
    h.integer(task.phase);
    h.text(graph.string(task.layer));
    h.text(graph.string(task.op_name));  // scenarios select by operator
    h.integer(task.blocking);
    h.integer(task.bytes);
    const TaskHolds& holds = graph.holds(id);
    h.integer(holds.sm_held_by);
    h.integer(holds.lock_held_by);
    h.integer(std::bit_cast<std::uint64_t>(holds.sm_let_in));
    h.integer(task.launch);  // the gpu scenario's wave quantization reads it
  }
}

/// In edges() order (by source task, then insertion order), which the simulator's tie-breaking
/// follows, so the same edges added in another order give another fingerprint.
void hash_edges(Fnv1a& h, const Graph& graph) {
  const auto edges = graph.edges();
  h.integer(edges.size());
  for (const auto& record : edges) {
    h.integer(record.from);
    h.integer(record.to);
    h.integer(record.edge.type);
    h.integer(record.edge.timing);
    h.integer(record.edge.delay_ns);
  }
}

void hash_iterations(Fnv1a& h, const Graph& graph) {
  h.integer(graph.iterations().size());
  for (const Iteration& iteration : graph.iterations()) {
    h.text(iteration.name);
    h.integer(iteration.measured_ns);  // predictions report it beside the simulated time
    h.integer(iteration.first_task);
    h.integer(iteration.last_task);
    h.integer(iteration.to_next_start);
  }
}

/// The GPUs (the gpu scenario identifies the traced one) and the launch configurations that
/// Task::launch indexes (wave quantization).
void hash_gpus(Fnv1a& h, const Graph& graph) {
  h.integer(graph.gpus().size());
  for (const GpuResources& gpu : graph.gpus()) {
    h.text(gpu.name);
    h.integer(static_cast<std::int64_t>(gpu.memory_bytes));
    for (std::int64_t v : {gpu.device, std::int64_t{gpu.sm_count}, std::int64_t{gpu.compute_major},
                           std::int64_t{gpu.compute_minor}, std::int64_t{gpu.max_threads_per_sm}})
      h.integer(v);
  }
  h.integer(graph.launch_configs().size());
  for (const LaunchConfig& l : graph.launch_configs())
    for (std::int64_t v : {l.blocks, std::int64_t{l.threads_per_block}, std::int64_t{l.registers_per_thread},
                           std::int64_t{l.shared_memory_bytes}, std::int64_t{l.shared_memory_config_bytes}})
      h.integer(v);
}

/// What scenarios read besides tasks and edges: launch latencies for inserted tasks, CPU ranges
/// for selections, collective records and the world size for communication what-ifs, the GPUs
/// and the kernels' launch configurations for the GPU model.
void hash_trace_context(Fnv1a& h, const Graph& graph) {
  const Calibration& calibration = graph.calibration();
  for (TimeNs latency_ns : calibration.launch_latency_ns) h.integer(latency_ns);
  h.integer(calibration.gpu_gap_ns);
  h.integer(graph.world_size);
  h.integer(graph.ranges().size());
  for (const CpuRange& range : graph.ranges()) {
    h.text(graph.string(range.name));
    h.integer(range.unit);
    h.integer(range.start_ns);
    h.integer(range.end_ns);
  }
  h.integer(graph.collectives().size());
  for (const CollectiveRecord& record : graph.collectives()) {
    h.text(record.info.name);
    h.integer(record.info.in_elements);
    h.integer(record.info.out_elements);
    h.integer(record.info.group_size);
    h.text(record.info.dtype);
    h.text(record.info.process_group);
    h.integer(record.unit);
    h.integer(record.start_ns);
    h.integer(record.end_ns);
  }
  hash_gpus(h, graph);
}

}  // namespace

std::uint64_t Graph::fingerprint() const {
  Fnv1a h;
  hash_units(h, *this);
  hash_tasks(h, *this);
  hash_edges(h, *this);
  hash_iterations(h, *this);
  hash_trace_context(h, *this);
  return h.value();
}

}  // namespace daydream
