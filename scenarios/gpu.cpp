// gpu: what if this step ran on another GPU? (Daydream's "what if I get the latest GPU?";
// Habitat's cross-GPU prediction, by the roofline rather than by profiling the target.)
//
// Model (docs/gpu_model.md): the traced GPU is identified from the trace's device records
// (or named with `from`), the target from the catalogue (device.hpp). Each kernel is classed by
// its name (compute-bound GEMM/convolution on tensor or SIMT cores at its precision, or
// memory-bound) and takes its time times kernel_time_ratio: the ratio of peak throughputs at the
// precision it runs at on each GPU, with wave quantization from its launch configuration, or the
// ratio of memory bandwidths. PyTorch's defaults decide how a kernel runs on the target
// (run_on: TF32 for cuDNN convolutions where the traced GPU had none, not for cuBLAS GEMMs).
// Device-to-device copies and memsets move by memory bandwidth, host copies by the host link;
// collectives keep their time (the network's: see faster_network, network), CPU work too unless
// `cpu` says how much faster the target machine's CPU is.
#include <fmt/format.h>

#include <limits>

#include "builtin.hpp"
#include "common/text.hpp"
#include "daydream/analyze.hpp"
#include "daydream/device.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

constexpr auto ms = text::milliseconds;  // the notes' "{:.3f} ms"

struct Tally {
  Moved compute, memory, copies;
};

/// Copies on the device (and between devices) move by memory bandwidth, host copies by the host link.
double copy_ratio(const Graph& graph, TaskId copy, const DeviceSpec& from, const DeviceSpec& to) {
  if (graph.task(copy).kind == TaskKind::memset || !is_host_copy(graph, copy))
    return from.memory_bandwidth / to.memory_bandwidth;
  return from.host_bandwidth > 0 && to.host_bandwidth > 0 ? from.host_bandwidth / to.host_bandwidth : 1;
}


void move_kernel(Graph& graph, TaskId t, const DeviceSpec& from, const DeviceSpec& to, const ScenarioParams& params,
                 Tally& tally) {
  const KernelClass kernel = classify_kernel(graph.name(t));
  const KernelRun run = run_on(kernel, from, to, params.integer("tf32_conv") == 1, params.integer("tf32_matmul") == 1);
  const double ratio = kernel_time_ratio(kernel, graph.launch_config(t), from, to, run);
  rescale(graph, t, ratio, kernel.bound == Bound::compute ? tally.compute : tally.memory, "target");
}

const DeviceSpec& traced_gpu(const DeviceCatalog& catalog, const Graph& graph, const ScenarioParams& params) {
  if (params.given("from")) return catalog.at(params.text("from"));
  return traced_device(catalog, graph.gpus(), graph.source_path);
}

/// The changed graph records the target as its GPU (its catalogue name, memory and SM resources),
/// so that what follows sees the GPU the step now runs on: amp's ratios, another gpu move, the
/// sweep's prices. Moving to the traced GPU changes nothing, records included.
void record_target(Graph& graph, const DeviceSpec& from, const DeviceSpec& to) {
  if (&from == &to) return;
  std::vector<GpuResources> gpus = graph.gpus();
  if (gpus.empty()) gpus.emplace_back();  // a trace without device records (from= named its GPU)
  for (GpuResources& gpu : gpus) {
    const std::int64_t device = gpu.device;
    gpu = to.resources();
    gpu.device = device;
    gpu.name = to.name;
    gpu.memory_bytes = to.memory_bytes;
  }
  graph.set_gpus(std::move(gpus));
}

std::string describe(const Tally& t, const DeviceSpec& from, const DeviceSpec& to) {
  return fmt::format("{} -> {}: {} compute-bound kernels {:.3f} -> {:.3f} ms, {} memory-bound kernels {:.3f} -> "
                     "{:.3f} ms, {} copies and memsets {:.3f} -> {:.3f} ms; collectives kept",
                     from.name, to.name, t.compute.count, ms(t.compute.before_ns), ms(t.compute.after_ns),
                     t.memory.count, ms(t.memory.before_ns), ms(t.memory.after_ns), t.copies.count,
                     ms(t.copies.before_ns), ms(t.copies.after_ns));
}

ScenarioOutcome apply_gpu(Graph& graph, const ScenarioParams& params) {
  const DeviceCatalog catalog = DeviceCatalog::with_file(params.text("devices"));
  if (!params.given("target")) throw Error("give the GPU to move to as target=<name> (daydream gpus lists them)");
  const DeviceSpec& from = traced_gpu(catalog, graph, params);
  const DeviceSpec& to = catalog.at(params.text("target"));
  Tally tally;
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (task.removed) continue;
    if (task.kind == TaskKind::kernel) move_kernel(graph, t, from, to, params, tally);
    else if (task.kind == TaskKind::memcpy || task.kind == TaskKind::memset)
      rescale(graph, t, copy_ratio(graph, t, from, to), tally.copies, "target");
  }
  record_target(graph, from, to);
  ScenarioOutcome outcome;
  outcome.notes.push_back(describe(tally, from, to));
  if (params.given("cpu")) {
    auto cpu = graph.select(TaskFilter().kind(TaskKind::cpu).kind(TaskKind::runtime));
    cpu.scale(1.0 / params.number("cpu"));
    outcome.notes.push_back(fmt::format("{} CPU tasks scaled by 1/{:g}", cpu.size(), params.number("cpu")));
  }
  return outcome;
}

}  // namespace

Scenario gpu() {
  constexpr double inf = std::numeric_limits<double>::infinity();
  auto target = ScenarioParam::text("target", "", "required: the GPU to move to, a catalogue name or alias (daydream gpus)");
  return {"gpu",
          "another GPU: each kernel rescaled by the roofline (peak throughput at its precision, with wave "
          "quantization, or memory bandwidth), copies by bandwidth",
          {target, traced_gpu_param("from"),
           {"cpu", ParamKind::number, 1, "speed-up of the CPU work on the target machine (duration / cpu)", 0, inf,
            true},
           {"tf32_conv", ParamKind::integer, 1,
            "1: fp32 convolutions use TF32 where the target has it (torch.backends.cudnn.allow_tf32, PyTorch's "
            "default); 0: they stay fp32",
            0, 1},
           {"tf32_matmul", ParamKind::integer, 0,
            "1: fp32 GEMMs use TF32 where the target has it (torch.backends.cuda.matmul.allow_tf32); 0: PyTorch's "
            "default",
            0, 1},
           devices_param()},
          apply_gpu};
}

}  // namespace daydream::scenarios
