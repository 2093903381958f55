// amp on the GPU model: see amp_device.hpp and docs/scenarios/amp.md.
#include "amp_device.hpp"

#include <fmt/format.h>

#include <map>

#include "builtin.hpp"
#include "common/text.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

constexpr auto ms = text::milliseconds;  // the notes' "{:.3f} ms"


std::string change_name(const KernelClass& kernel, KernelRun run) {
  return fmt::format("{} {} {} -> {} {}", to_string(kernel.bound), to_string(kernel.engine),
                     to_string(kernel.precision), to_string(run.engine), to_string(run.precision));
}

/// The shortest kernel of the trace: no kernel runs faster than the GPU launches and drains one.
TimeNs shortest_kernel_ns(Graph& graph) {
  TimeNs shortest = 0;
  const auto kernels = graph.select(TaskFilter().kind(TaskKind::kernel));
  for (TaskId t : kernels.ids()) {
    const TimeNs d = graph.task(t).duration_ns;
    if (d > 0 && (shortest == 0 || d < shortest)) shortest = d;
  }
  return shortest;
}

/// The first optimizer-step kernel of each iteration, in recorded order.
std::map<std::int32_t, TaskId> first_step_kernels(Graph& graph) {
  std::map<std::int32_t, TaskId> first;
  const auto kernels = graph.select(TaskFilter().kind(TaskKind::kernel).phase(Phase::update));
  for (TaskId k : kernels.ids()) {
    if (graph.task(k).iteration < 0) continue;
    const auto [it, fresh] = first.try_emplace(graph.task(k).iteration, k);
    if (!fresh && graph.task(k).recorded_start_ns < graph.task(it->second).recorded_start_ns) it->second = k;
  }
  return first;
}

/// Why autocast leaves kernel `t` in fp32 (autocast_fp32 of the innermost operator around its
/// launch), or empty.
std::string_view fp32_under_autocast(const Graph& graph, TaskId t) {
  const Task& task = graph.task(t);
  const std::string_view op = task.op_name != 0 ? graph.string(task.op_name) : std::string_view{};
  return autocast_fp32(graph.name(t), op, task.phase == Phase::forward);
}

std::string kept_in_fp32_note(const std::map<std::string_view, Moved>& kept) {
  std::size_t count = 0;
  TimeNs total = 0;
  std::string which;
  for (const auto& [why, moved] : kept) {
    count += moved.count, total += moved.before_ns;
    which += fmt::format("{}{} {}", which.empty() ? "" : ", ", why, moved.count);
  }
  return fmt::format("{} kernels of operators autocast runs in fp32 (PyTorch's float32 list) kept, {:.3f} ms: {}",
                     count, ms(total), which);
}

}  // namespace

std::vector<TaskId> scale_on_device(Graph& graph, const DeviceSpec& device, Precision dtype,
                                    std::vector<std::string>& notes) {
  const TimeNs floor_ns = shortest_kernel_ns(graph);
  std::map<std::string, Moved> changes;
  std::map<std::string_view, Moved> kept_in_fp32;
  std::vector<TaskId> weighted;
  std::size_t optimizer = 0;
  const auto outside_data_loading = [](const Graph& g, TaskId t) { return g.task(t).phase != Phase::data_loading; };
  const auto kernels = graph.select(TaskFilter().kind(TaskKind::kernel).where(outside_data_loading));
  for (TaskId t : kernels.ids()) {
    if (graph.task(t).phase == Phase::update) {
      ++optimizer;
      continue;
    }
    if (const std::string_view why = fp32_under_autocast(graph, t); !why.empty()) {
      Moved& kept = kept_in_fp32[why];  // counted, duration untouched
      ++kept.count;
      kept.before_ns += graph.task(t).duration_ns;
      kept.after_ns += graph.task(t).duration_ns;
      continue;
    }
    const KernelClass kernel = classify_kernel(graph.name(t));
    const KernelRun run = autocast_run(kernel, dtype);
    if (kernel.engine != Engine::none) weighted.push_back(t);
    const double ratio = autocast_time_ratio(kernel, graph.launch_config(t), device, dtype);
    rescale(graph, t, ratio, changes[change_name(kernel, run)], device.name, floor_ns);
  }
  notes.push_back(fmt::format("autocast to {} on {} (no kernel below the trace's shortest, {} ns):",
                              to_string(dtype), device.name, floor_ns));
  for (const auto& [change, moved] : changes)
    notes.push_back(fmt::format("  {} kernels {}: {:.3f} -> {:.3f} ms", moved.count, change, ms(moved.before_ns),
                                ms(moved.after_ns)));
  if (!kept_in_fp32.empty()) notes.push_back(kept_in_fp32_note(kept_in_fp32));
  if (optimizer > 0)
    notes.push_back(fmt::format("{} optimizer-step kernels (fp32 master weights, outside autocast) kept", optimizer));
  if (dtype == Precision::bf16 && device.bf16_flops <= 0)
    notes.push_back(fmt::format("{} has no bf16 tensor cores: bf16 GEMMs and convolutions run at its fp32 rate",
                                device.name));
  return weighted;
}

std::size_t insert_scaler_syncs(Graph& graph) {
  std::size_t inserted = 0;
  for (const auto& [iteration, kernel] : first_step_kernels(graph)) {
    const TaskId backward_end = predecessor(graph, kernel, EdgeType::gpu_sequential);
    const TaskId call = predecessor(graph, kernel, EdgeType::launch);
    if (backward_end == kNoTask || call == kNoTask) continue;
    const auto in_step = [&, iteration = iteration](TaskId t) {
      return graph.task(t).phase == Phase::update && graph.task(t).iteration == iteration;
    };
    const auto before = run_before(graph, call, graph.num_tasks(), in_step);
    const TaskId step_start = before.empty() ? call : before.front();
    graph.connect(backward_end, step_start, Edge{EdgeType::sync});
    ++inserted;
  }
  return inserted;
}

}  // namespace daydream::scenarios
