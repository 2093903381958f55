#include "cupti/cupti_convert.hpp"

#include "cupti/cupti_call.hpp"
#include "cupti/names.hpp"

namespace daydream::cupti {
namespace {

// The record structures CUPTI fills for the activity kinds we enable. CUPTI writes the newest
// version it knows, and newer versions only append fields, so a backend built against these
// headers reads the records of the same or a newer libcupti.
#if CUPTI_API_VERSION >= 130000  // CUDA 13
#define DAYDREAM_CUPTI_EVENT_SYNC_ID 1  // sync and event records carry cudaEventSyncId
using KernelActivity = CUpti_ActivityKernel10;
using MemcpyActivity = CUpti_ActivityMemcpy6;
using MemsetActivity = CUpti_ActivityMemset4;
using SyncActivity = CUpti_ActivitySynchronization2;
using CudaEventActivity = CUpti_ActivityCudaEvent2;
using DeviceActivity = CUpti_ActivityDevice5;
using ContextActivity = CUpti_ActivityContext3;
#else  // CUDA 12: events are joined by cudaEventId and call order instead
#define DAYDREAM_CUPTI_EVENT_SYNC_ID 0
using KernelActivity = CUpti_ActivityKernel9;
using MemcpyActivity = CUpti_ActivityMemcpy5;
using MemsetActivity = CUpti_ActivityMemset4;
using SyncActivity = CUpti_ActivitySynchronization;
using CudaEventActivity = CUpti_ActivityCudaEvent;
using DeviceActivity = CUpti_ActivityDevice4;  // a prefix of Device5 (12.4+): the fields read are the same
using ContextActivity = CUpti_ActivityContext;   // a prefix of Context2
#endif
using MarkerActivity = CUpti_ActivityMarker2;

// Our enums mirror CUPTI's values.
static_assert(static_cast<int>(MemcpyKind::dtoh) == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
static_assert(static_cast<int>(MemcpyKind::ptop) == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
static_assert(static_cast<int>(MemoryKind::pageable) == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
static_assert(static_cast<int>(MemoryKind::managed_static) == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC);
static_assert(static_cast<int>(SyncType::event_synchronize) == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE);
static_assert(static_cast<int>(SyncType::stream_wait_event) == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT);
static_assert(static_cast<int>(SyncType::stream_synchronize) ==
              CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
static_assert(static_cast<int>(SyncType::context_synchronize) ==
              CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE);
static_assert(marker_instantaneous == static_cast<std::uint32_t>(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS));
static_assert(marker_start == static_cast<std::uint32_t>(CUPTI_ACTIVITY_FLAG_MARKER_START));
static_assert(marker_end == static_cast<std::uint32_t>(CUPTI_ACTIVITY_FLAG_MARKER_END));
static_assert(kInvalidId == static_cast<std::uint32_t>(CUPTI_SYNCHRONIZATION_INVALID_VALUE));

TimeNs ns(std::uint64_t timestamp) { return static_cast<TimeNs>(timestamp); }

MemoryKind memory_kind(unsigned value) {
  return value <= static_cast<unsigned>(MemoryKind::managed_static) ? static_cast<MemoryKind>(value)
                                                                     : MemoryKind::unknown;
}

MemcpyKind memcpy_kind(unsigned value) {
  return value <= static_cast<unsigned>(MemcpyKind::ptop) ? static_cast<MemcpyKind>(value) : MemcpyKind::unknown;
}

SyncType sync_type(CUpti_ActivitySynchronizationType value) {
  const auto v = static_cast<unsigned>(value);
  return v <= static_cast<unsigned>(SyncType::context_synchronize) ? static_cast<SyncType>(v) : SyncType::unknown;
}

// The fields every GPU activity record (kernel, memcpy, memset) shares.
template <class Activity>
void copy_gpu_fields(const Activity& a, GpuActivity& r) {
  r.start_ns = ns(a.start);
  r.end_ns = ns(a.end);
  r.device = a.deviceId;
  r.context = a.contextId;
  r.stream = a.streamId;
  r.correlation = a.correlationId;
}

void add_kernel(const KernelActivity& k, Recorder& recorder) {
  KernelRecord r;
  r.name = k.name ? k.name : "";
  copy_gpu_fields(k, r);
  r.grid[0] = k.gridX, r.grid[1] = k.gridY, r.grid[2] = k.gridZ;
  r.block[0] = k.blockX, r.block[1] = k.blockY, r.block[2] = k.blockZ;
  r.shared_memory_bytes = k.staticSharedMemory + k.dynamicSharedMemory;
  r.registers_per_thread = k.registersPerThread;
  recorder.add(r);
}

void add_memcpy(const MemcpyActivity& m, Recorder& recorder) {
  MemcpyRecord r;
  copy_gpu_fields(m, r);
  r.bytes = m.bytes;
  r.runtime_correlation = m.runtimeCorrelationId;
  r.copy_kind = memcpy_kind(m.copyKind);
  r.src_kind = memory_kind(m.srcKind);
  r.dst_kind = memory_kind(m.dstKind);
  recorder.add(r);
}

void add_memset(const MemsetActivity& m, Recorder& recorder) {
  MemsetRecord r;
  copy_gpu_fields(m, r);
  r.bytes = m.bytes;
  r.memory_kind = memory_kind(m.memoryKind);
  recorder.add(r);
}

void add_api(const CUpti_ActivityAPI& a, ApiDomain domain, Recorder& recorder, ApiNames& names) {
  ApiRecord r;
  r.domain = domain;
  r.cbid = a.cbid;
  r.name = names.name(domain, a.cbid);
  r.start_ns = ns(a.start);
  r.end_ns = ns(a.end);
  r.process_id = a.processId;
  r.thread_id = a.threadId;
  r.correlation = a.correlationId;
  recorder.add(r);
}

void add_sync(const SyncActivity& s, Recorder& recorder) {
  SyncRecord r;
  r.type = sync_type(s.type);
  r.start_ns = ns(s.start);
  r.end_ns = ns(s.end);
  r.correlation = s.correlationId;
  r.context = s.contextId;
  r.stream = s.streamId;
  r.cuda_event = s.cudaEventId;
#if DAYDREAM_CUPTI_EVENT_SYNC_ID
  r.cuda_event_sync_id = s.cudaEventSyncId;
#endif
  recorder.add(r);
}

void add_cuda_event(const CudaEventActivity& e, Recorder& recorder) {
  CudaEventRecord r;
  r.correlation = e.correlationId;
  r.context = e.contextId;
  r.stream = e.streamId;
  r.cuda_event = e.eventId;
#if DAYDREAM_CUPTI_EVENT_SYNC_ID
  r.device = e.deviceId;
  r.cuda_event_sync_id = e.cudaEventSyncId;
#endif
  recorder.add(r);
}

void add_marker(const MarkerActivity& m, Recorder& recorder) {
  MarkerRecord r;
  r.flags = static_cast<std::uint32_t>(m.flags);
  r.timestamp_ns = ns(m.timestamp);
  r.id = m.id;
  if (m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    r.process_id = m.objectId.pt.processId;
    r.thread_id = m.objectId.pt.threadId;
  }
  r.name = m.name ? m.name : "";
  r.domain = m.domain ? m.domain : "";
  recorder.add(r);
}

void add_device(const DeviceActivity& d, Recorder& recorder) {
  DeviceRecord r;
  r.id = d.id;
  r.name = d.name ? d.name : "";
  r.global_memory_bytes = d.globalMemorySize;
  r.compute_major = d.computeCapabilityMajor;
  r.compute_minor = d.computeCapabilityMinor;
  r.multiprocessors = d.numMultiprocessors;
  recorder.add(r);
}

template <class Record>
const Record& as(const CUpti_Activity& activity) {
  return reinterpret_cast<const Record&>(activity);
}

}  // namespace

std::string_view ApiNames::name(ApiDomain domain, std::uint32_t cbid) {
  std::lock_guard lock(mutex_);
  const std::uint64_t key = (std::uint64_t{domain == ApiDomain::driver} << 32) | cbid;
  auto it = names_.find(key);
  if (it != names_.end()) return it->second;
  const char* raw = nullptr;
  const auto cb_domain = domain == ApiDomain::driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  std::string name = DAYDREAM_CUPTI_CALL(cuptiGetCallbackName(cb_domain, cbid, &raw)) == CUPTI_SUCCESS && raw
                         ? std::string(normalize_api_name(raw))
                         : (domain == ApiDomain::driver ? "cuda_driver_cbid_" : "cuda_runtime_cbid_") +
                               std::to_string(cbid);
  return names_.emplace(key, std::move(name)).first->second;
}

void add_activity(const CUpti_Activity& activity, Recorder& recorder, ApiNames& names) {
  switch (activity.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return add_kernel(as<KernelActivity>(activity), recorder);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return add_memcpy(as<MemcpyActivity>(activity), recorder);
    case CUPTI_ACTIVITY_KIND_MEMSET: return add_memset(as<MemsetActivity>(activity), recorder);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return add_api(as<CUpti_ActivityAPI>(activity), ApiDomain::runtime, recorder, names);
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return add_api(as<CUpti_ActivityAPI>(activity), ApiDomain::driver, recorder, names);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return add_sync(as<SyncActivity>(activity), recorder);
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: return add_cuda_event(as<CudaEventActivity>(activity), recorder);
    case CUPTI_ACTIVITY_KIND_MARKER: return add_marker(as<MarkerActivity>(activity), recorder);
    case CUPTI_ACTIVITY_KIND_DEVICE: return add_device(as<DeviceActivity>(activity), recorder);
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto& c = as<ContextActivity>(activity);
      return recorder.add(ContextRecord{c.contextId, c.deviceId});
    }
    default: return;
  }
}

}  // namespace daydream::cupti
