#pragma once
// The names the collector writes, spelled the way the PyTorch profiler (Kineto) spells them so
// that daydream's importer, HTA and Perfetto read the collector's traces like Kineto's.

#include <string>
#include <string_view>

#include "cupti/activity_records.hpp"

namespace daydream::cupti {

/// CUPTI's callback name without its version suffix: "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
/// Real suffixes of driver functions ("cuMemcpyDtoH_v2", "_ptsz") are kept: only `_v` followed by
/// four or more digits (a CUDA version) is dropped.
std::string_view normalize_api_name(std::string_view callback_name);

/// "Memcpy DtoH (Device -> Pageable)".
std::string memcpy_name(MemcpyKind kind, MemoryKind src, MemoryKind dst);
/// "Memset (Device)".
std::string memset_name(MemoryKind kind);
/// The `cuda_sync_kind` of a synchronization record: "Stream Sync", "Event Sync", "Context Sync",
/// "Stream Wait Event" or "Unknown".
std::string_view sync_kind_name(SyncType type);

/// A C++ kernel name demangled ("_Z3addPfS_" -> "add(float*, float*)"); other names unchanged.
std::string demangle(std::string_view name);

}  // namespace daydream::cupti
