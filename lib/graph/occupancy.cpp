// The CUDA occupancy rules (see occupancy.hpp).
#include "graph/occupancy.hpp"

#include <algorithm>
#include <tuple>

namespace daydream {
namespace {

std::int64_t divide_round_up(std::int64_t x, std::int64_t y) { return (x + y - 1) / y; }
std::int64_t round_up(std::int64_t x, std::int64_t y) { return divide_round_up(x, y) * y; }

/// Resident blocks per SM by compute capability (Programming Guide, "Technical Specifications").
std::int32_t architecture_max_blocks(std::int32_t major, std::int32_t minor) {
  if (major == 3) return 16;
  if (major == 7) return minor == 5 ? 16 : 32;
  if (major == 8) return minor == 0 ? 32 : minor == 9 ? 24 : 16;
  return 32;  // 5.x, 6.x, 9.0 and later
}

// Allocation granularities of cuda_occupancy.h: registers per warp in units of 256, over 4 SM
// sub-partitions (2 on compute capability 6.0); shared memory per block in units of 256 bytes
// up to Volta/Turing, 128 bytes from Ampere on, which also reserves 1 KiB per block for the system.
constexpr std::int64_t kRegisterUnit = 256;
std::int64_t sub_partitions(const GpuResources& gpu) { return gpu.compute_major == 6 && gpu.compute_minor == 0 ? 2 : 4; }
std::int64_t shared_memory_unit(const GpuResources& gpu) { return gpu.compute_major >= 8 ? 128 : 256; }
std::int64_t reserved_shared_memory(const GpuResources& gpu) { return gpu.compute_major >= 8 ? 1024 : 0; }

std::int64_t limit_by_registers(const LaunchConfig& launch, const GpuResources& gpu, std::int64_t warps_per_block) {
  if (launch.registers_per_thread <= 0) return INT32_MAX;
  const std::int64_t per_warp = round_up(std::int64_t{launch.registers_per_thread} * gpu.warp_size, kRegisterUnit);
  if (per_warp * warps_per_block > gpu.registers_per_block) return 0;
  const std::int64_t parts = sub_partitions(gpu);
  const std::int64_t warps = gpu.registers_per_sm / parts / per_warp * parts;
  return warps / warps_per_block;
}

std::int64_t limit_by_shared_memory(const LaunchConfig& launch, const GpuResources& gpu) {
  const std::int64_t per_block =
      round_up(std::int64_t{launch.shared_memory_bytes} + reserved_shared_memory(gpu), shared_memory_unit(gpu));
  const std::int64_t per_sm = launch.shared_memory_config_bytes > 0 ? launch.shared_memory_config_bytes : gpu.shared_memory_per_sm;
  if (per_block == 0 || per_sm <= 0) return INT32_MAX;  // no shared memory, or the SM's size unknown
  return per_sm / per_block;
}

}  // namespace

std::int32_t architecture_max_threads(std::int32_t major, std::int32_t minor) {
  if (major <= 0) return 0;
  if (major == 7 && minor == 5) return 1024;
  return major == 8 && (minor == 6 || minor == 9) ? 1536 : 2048;
}

GpuResources with_architecture_defaults(GpuResources gpu) {
  if (gpu.warp_size <= 0) gpu.warp_size = 32;
  if (gpu.max_blocks_per_sm <= 0 && gpu.compute_major > 0)
    gpu.max_blocks_per_sm = architecture_max_blocks(gpu.compute_major, gpu.compute_minor);
  if (gpu.registers_per_sm <= 0) gpu.registers_per_sm = 65536;  // every compute capability from 3.0 on
  if (gpu.registers_per_block <= 0) gpu.registers_per_block = 65536;
  return gpu;
}

std::int32_t blocks_per_sm(const LaunchConfig& launch, const GpuResources& resources) {
  const GpuResources gpu = with_architecture_defaults(resources);
  if (gpu.sm_count <= 0 || gpu.max_threads_per_sm <= 0 || gpu.max_blocks_per_sm <= 0 || launch.threads_per_block <= 0)
    return 0;
  const std::int64_t warps_per_block = divide_round_up(launch.threads_per_block, gpu.warp_size);
  const std::int64_t fit = std::min({std::int64_t{gpu.max_threads_per_sm / gpu.warp_size} / warps_per_block,
                                     std::int64_t{gpu.max_blocks_per_sm}, limit_by_registers(launch, gpu, warps_per_block),
                                     limit_by_shared_memory(launch, gpu)});
  return static_cast<std::int32_t>(std::max<std::int64_t>(fit, 0));
}

std::int32_t waves(const LaunchConfig& launch, const GpuResources& gpu) {
  const std::int64_t fit = blocks_per_sm(launch, gpu);
  if (fit == 0 || launch.blocks <= 0) return 0;
  const std::int64_t n = divide_round_up(launch.blocks, fit * gpu.sm_count);
  return static_cast<std::int32_t>(std::min<std::int64_t>(n, INT32_MAX));
}

std::optional<GpuResources> resources_of(const std::vector<GpuResources>& gpus, std::int64_t device) {
  for (const auto& gpu : gpus)
    if (gpu.device == device) return gpu;
  if (gpus.empty()) return std::nullopt;
  const auto kind = [](const GpuResources& g) {
    return std::tie(g.sm_count, g.compute_major, g.compute_minor, g.warp_size, g.max_threads_per_sm, g.max_blocks_per_sm,
                    g.registers_per_sm, g.registers_per_block, g.shared_memory_per_sm);
  };
  for (const auto& gpu : gpus)
    if (kind(gpu) != kind(gpus.front())) return std::nullopt;
  return gpus.front();
}

}  // namespace daydream
