// Moving a kernel's measured time to another GPU or precision (docs/gpu_model.md, "Scaling").
#include "daydream/device.hpp"
#include "graph/occupancy.hpp"

namespace daydream {
namespace {

/// Waves x SMs of the launch on `device`: the SM-slots its grid occupies; 0 when unknown.
double wave_slots(const LaunchConfig& launch, const DeviceSpec& device) {
  return static_cast<double>(waves(launch, device.resources())) * device.sm_count;
}

/// The wave-quantization factor of a compute-bound kernel (1 when either count is unknown).
double wave_factor(const LaunchConfig* launch, const DeviceSpec& from, const DeviceSpec& to) {
  if (launch == nullptr || launch->blocks <= 0) return 1;
  const double slots_from = wave_slots(*launch, from), slots_to = wave_slots(*launch, to);
  return slots_from > 0 && slots_to > 0 ? slots_to / slots_from : 1;
}

}  // namespace

double element_bytes(Precision precision) {
  switch (precision) {
    case Precision::fp32:
    case Precision::tf32: return 4;
    case Precision::fp16:
    case Precision::bf16: return 2;
    case Precision::fp8: return 1;
  }
  return 4;
}

double engine_flops(const DeviceSpec& device, Engine engine, Precision precision) {
  if (engine == Engine::simt || precision == Precision::fp32) {
    const bool half = precision == Precision::fp16 || precision == Precision::bf16;
    return half && device.fp16_simt_flops > 0 ? device.fp16_simt_flops : device.fp32_flops;
  }
  const double peak = device.peak_flops(precision);
  if (peak > 0) return peak;
  if (precision == Precision::fp8) return engine_flops(device, engine, Precision::fp16);
  return device.fp32_flops;  // tf32/bf16 without tensor cores for it: fp32 SIMT (V100, T4)
}

double kernel_flops(const DeviceSpec& device, const KernelClass& kernel, KernelRun run) {
  constexpr double kTf32Products = 3;  // CUTLASS OpMultiplyAddFastF32: big + small TF32 parts
  if (kernel.fp32_as_3xtf32 && run.engine == Engine::tensor && run.precision == Precision::fp32 &&
      device.tf32_flops > 0)
    return device.tf32_flops / kTf32Products;
  return engine_flops(device, run.engine, run.precision);
}

double kernel_time_ratio(const KernelClass& kernel, const LaunchConfig* launch, const DeviceSpec& from,
                         const DeviceSpec& to, KernelRun run) {
  if (&from == &to && run.engine == kernel.engine && run.precision == kernel.precision) return 1;
  if (kernel.bound == Bound::memory)
    return from.memory_bandwidth / to.memory_bandwidth * element_bytes(run.precision) / element_bytes(kernel.precision);
  const double flops_from = kernel_flops(from, kernel, {kernel.engine, kernel.precision});
  const double flops_to = kernel_flops(to, kernel, run);
  if (!(flops_from > 0) || !(flops_to > 0)) return from.memory_bandwidth / to.memory_bandwidth;
  return flops_from / flops_to * wave_factor(launch, from, to);
}

KernelRun run_on(const KernelClass& kernel, const DeviceSpec& from, const DeviceSpec& to, bool tf32_convolutions,
                 bool tf32_matmul) {
  KernelRun run{kernel.engine, kernel.precision};
  if (kernel.bound != Bound::compute) return run;
  if (kernel.precision == Precision::tf32 && to.tf32_flops <= 0) return {Engine::simt, Precision::fp32};
  const bool allowed = kernel.convolution ? tf32_convolutions : tf32_matmul;
  if (kernel.engine == Engine::simt && kernel.precision == Precision::fp32 && from.tf32_flops <= 0 &&
      to.tf32_flops > 0 && allowed)
    return {Engine::tensor, Precision::tf32};
  return run;
}

KernelRun autocast_run(const KernelClass& kernel, Precision dtype) {
  const bool reduced = kernel.precision != Precision::fp32 && kernel.precision != Precision::tf32;
  if (reduced) return {kernel.engine, kernel.precision};
  return {kernel.engine == Engine::none ? Engine::none : Engine::tensor, dtype};
}

double autocast_time_ratio(const KernelClass& kernel, const LaunchConfig* launch, const DeviceSpec& device,
                           Precision dtype) {
  const KernelRun run = autocast_run(kernel, dtype);
  const bool chosen_over_tf32 = kernel.engine == Engine::simt && kernel.convolution &&
                                kernel.precision == Precision::fp32 && device.tf32_flops > 0;
  if (!chosen_over_tf32) return kernel_time_ratio(kernel, launch, device, device, run);
  KernelClass as_tf32 = kernel;
  as_tf32.engine = Engine::tensor;
  as_tf32.precision = Precision::tf32;
  return kernel_time_ratio(as_tf32, launch, device, device, run);
}

}  // namespace daydream
