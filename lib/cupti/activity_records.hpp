#pragma once
// The activity records the collector keeps: CUPTI-free mirrors of the fields daydream needs from
// CUpti_ActivityKernel*, CUpti_ActivityMemcpy*, CUpti_ActivityMemset*, CUpti_ActivityAPI,
// CUpti_ActivitySynchronization*, CUpti_ActivityCudaEvent*, CUpti_ActivityMarker*,
// CUpti_ActivityDevice* and CUpti_ActivityContext*. The CUPTI backend converts real records into
// these; tests build them by hand. Enum values equal CUPTI's (the backend static_asserts it).
//
// Times are CUPTI timestamps in ns (one clock for CPU and GPU records). Names are views valid
// for the duration of Recorder::add(); the recorder copies them.

#include <cstdint>
#include <string_view>

#include "daydream/trace.hpp"

namespace daydream::cupti {

/// CUPTI's "no stream / no event" value (CUPTI_SYNCHRONIZATION_INVALID_VALUE).
inline constexpr std::uint32_t kInvalidId = 0xffffffffu;

/// CUpti_ActivityMemcpyKind.
enum class MemcpyKind : std::uint8_t {
  unknown = 0, htod = 1, dtoh = 2, htoa = 3, atoh = 4, atoa = 5, atod = 6, dtoa = 7, dtod = 8, htoh = 9, ptop = 10
};

/// CUpti_ActivityMemoryKind.
enum class MemoryKind : std::uint8_t {
  unknown = 0, pageable = 1, pinned = 2, device = 3, array = 4, managed = 5, device_static = 6, managed_static = 7
};

/// CUpti_ActivitySynchronizationType.
enum class SyncType : std::uint8_t {
  unknown = 0, event_synchronize = 1, stream_wait_event = 2, stream_synchronize = 3, context_synchronize = 4
};

/// Which API a CUpti_ActivityAPI record belongs to (CUPTI_ACTIVITY_KIND_RUNTIME or _DRIVER).
enum class ApiDomain : std::uint8_t { runtime, driver };

/// CUpti_ActivityFlag bits of NVTX markers.
enum MarkerFlag : std::uint32_t { marker_instantaneous = 1u << 0, marker_start = 1u << 1, marker_end = 1u << 2 };

/// The fields every GPU activity (kernel, copy, memset) has.
struct GpuActivity {
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  std::uint32_t device = 0;
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  /// Of the API call that launched it: runtime or driver for kernels and memsets, driver for
  /// copies (see MemcpyRecord::runtime_correlation).
  std::uint32_t correlation = 0;
};

struct KernelRecord : GpuActivity {
  std::string_view name;  ///< as CUPTI reports it (mangled); demangled when written
  std::int32_t grid[3] = {0, 0, 0};
  std::int32_t block[3] = {0, 0, 0};
  std::int32_t shared_memory_bytes = 0;  ///< static + dynamic
  std::uint16_t registers_per_thread = 0;
};

struct MemcpyRecord : GpuActivity {
  std::uint64_t bytes = 0;
  std::uint32_t runtime_correlation = 0;  ///< of the runtime call, 0 when none
  MemcpyKind copy_kind = MemcpyKind::unknown;
  MemoryKind src_kind = MemoryKind::unknown;
  MemoryKind dst_kind = MemoryKind::unknown;
};

struct MemsetRecord : GpuActivity {
  std::uint64_t bytes = 0;
  MemoryKind memory_kind = MemoryKind::device;
};

/// One CUDA runtime or driver call.
struct ApiRecord {
  std::string_view name;  ///< function name without CUPTI's version suffix (normalize_api_name)
  ApiDomain domain = ApiDomain::runtime;
  std::uint32_t cbid = 0;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  std::uint32_t process_id = 0;
  std::uint32_t thread_id = 0;  ///< system thread id (gettid) with CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM
  std::uint32_t correlation = 0;
};

/// What a blocking call or a cudaStreamWaitEvent waited for.
struct SyncRecord {
  SyncType type = SyncType::unknown;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  std::uint32_t correlation = 0;     ///< of the API call
  std::uint32_t context = 0;
  std::uint32_t stream = kInvalidId;  ///< the stream synchronized or made to wait
  std::uint32_t cuda_event = kInvalidId;
  /// Joins the CudaEventRecord of the awaited cudaEventRecord (CUDA 13 CUPTI). 0 (or kInvalidId)
  /// when CUPTI has no such field (CUDA 12): then the event's last record before this call is used.
  std::uint64_t cuda_event_sync_id = 0;
};

/// A cudaEventRecord: on which stream, by which call.
struct CudaEventRecord {
  std::uint32_t correlation = 0;  ///< of the cudaEventRecord call
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  std::uint32_t device = kInvalidId;  ///< kInvalidId when CUPTI does not say (CUDA 12)
  std::uint32_t cuda_event = 0;
  std::uint64_t cuda_event_sync_id = 0;  ///< 0 when CUPTI has no such field
};

/// An NVTX marker: the start or end of a range (push/pop or start/end), or an instant (nvtxMark).
struct MarkerRecord {
  std::uint32_t flags = 0;  ///< MarkerFlag bits
  TimeNs timestamp_ns = 0;
  std::uint32_t id = 0;     ///< the same for the start and the end of one range
  std::uint32_t process_id = 0;
  std::uint32_t thread_id = 0;
  std::string_view name;    ///< empty for an end marker
  std::string_view domain;  ///< empty for NVTX's default domain
};

struct DeviceRecord {
  std::uint32_t id = 0;
  std::string_view name;
  std::uint64_t global_memory_bytes = 0;
  std::uint32_t compute_major = 0;
  std::uint32_t compute_minor = 0;
  std::uint32_t multiprocessors = 0;
};

struct ContextRecord {
  std::uint32_t context = 0;
  std::uint32_t device = 0;
};

}  // namespace daydream::cupti
