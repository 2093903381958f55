#pragma once
// The CUDA occupancy rules: how many blocks of a kernel one SM holds at once, and so how many
// waves of the device's SMs its grid needs. The rules and per-architecture constants are those
// of NVIDIA's occupancy calculator (cuda_occupancy.h) and of the CUDA C++ Programming Guide's
// "Technical Specifications per Compute Capability" (see docs/simulator.md, "GPU occupancy").

#include <cstdint>
#include <optional>
#include <vector>

#include "daydream/trace.hpp"

namespace daydream {

/// `gpu` with what its compute capability implies in place of values the trace lacks
/// (warp size, resident blocks, registers); sm_count, max_threads_per_sm and the compute
/// capability itself cannot be implied and stay 0 when missing.
GpuResources with_architecture_defaults(GpuResources gpu);

/// Threads one SM holds at once by compute capability (Programming Guide, "Technical
/// Specifications per Compute Capability"): 1024 on 7.5, 1536 on 8.6 and 8.9, 2048 otherwise;
/// 0 for an unknown capability (major 0).
std::int32_t architecture_max_threads(std::int32_t major, std::int32_t minor);

/// Blocks of this launch one SM holds at once: the least of the limits set by warps, resident
/// blocks, registers and shared memory. 0 when the resources are not known well enough (no SM
/// count, no threads per SM, no compute capability) or when one block does not fit at all.
std::int32_t blocks_per_sm(const LaunchConfig& launch, const GpuResources& gpu);

/// Waves of the device's SMs the grid needs: ceil(blocks / (blocks_per_sm x SMs)); 0 when unknown.
std::int32_t waves(const LaunchConfig& launch, const GpuResources& gpu);

/// The resources of `device` among a trace's GPUs. Traces may number devices differently in
/// their device table and in their GPU records (Nsight's TARGET_INFO_GPU lists every GPU of the
/// node, a process's kernels say device 0): when no entry has the id and all entries describe
/// the same kind of GPU, that one is taken.
std::optional<GpuResources> resources_of(const std::vector<GpuResources>& gpus, std::int64_t device);

}  // namespace daydream
