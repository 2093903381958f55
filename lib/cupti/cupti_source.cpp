#include "cupti/cupti_source.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "cupti/cupti_call.hpp"

namespace daydream::cupti {
namespace {

constexpr std::size_t kRecordAlignment = 8;  // CUPTI requires 8-byte aligned activity buffers

struct Kind {
  CUpti_ActivityKind kind;
  const char* name;
};

std::vector<Kind> window_kinds(const CollectorOptions& options) {
  std::vector<Kind> kinds = {{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL"},
                             {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
                             {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"},
                             {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME"},
                             {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION"},
                             {CUPTI_ACTIVITY_KIND_CUDA_EVENT, "CUDA_EVENT"}};
  if (options.driver_api) kinds.push_back({CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER"});
  if (options.nvtx) kinds.push_back({CUPTI_ACTIVITY_KIND_MARKER, "MARKER"});
  return kinds;
}

}  // namespace

CuptiSource* CuptiSource::instance_ = nullptr;

CuptiSource::CuptiSource(const CollectorOptions& options) : options_(options) { instance_ = this; }

CuptiSource::~CuptiSource() {
  if (instance_ == this) instance_ = nullptr;
}

Outcome CuptiSource::initialize(Recorder& recorder) {
  recorder_ = &recorder;
  DAYDREAM_CUPTI_CALL(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
  const CUptiResult registered = DAYDREAM_CUPTI_CALL(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  if (registered != CUPTI_SUCCESS)
    return Outcome::failure(std::string("CUPTI cannot be used in this process: cuptiActivityRegisterCallbacks: ") +
                            cupti_result_text(registered));
  DAYDREAM_CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE));
  DAYDREAM_CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONTEXT));
  return {};
}

Outcome CuptiSource::enable() {
  std::string failed;
  std::vector<CUpti_ActivityKind> enabled;
  for (const Kind& k : window_kinds(options_)) {
    const CUptiResult result = DAYDREAM_CUPTI_CALL(cuptiActivityEnable(k.kind));
    if (result == CUPTI_SUCCESS) enabled.push_back(k.kind);
    else failed += std::string(failed.empty() ? "" : ", ") + k.name + " (" + cupti_result_text(result) + ")";
  }
  auto has = [&](CUpti_ActivityKind kind) { return std::find(enabled.begin(), enabled.end(), kind) != enabled.end(); };
  if (!has(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) || !has(CUPTI_ACTIVITY_KIND_RUNTIME)) {
    for (CUpti_ActivityKind kind : enabled) DAYDREAM_CUPTI_CALL(cuptiActivityDisable(kind));
    return Outcome::failure("CUPTI could not enable kernel and runtime API recording: " + failed);
  }
  if (!failed.empty()) std::fprintf(stderr, "daydream-cupti: recording without %s\n", failed.c_str());
  return {};
}

void CuptiSource::disable() {
  for (const Kind& k : window_kinds(options_)) DAYDREAM_CUPTI_CALL(cuptiActivityDisable(k.kind));
}

void CuptiSource::flush(bool forced) {
  DAYDREAM_CUPTI_CALL(cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0));
}

TimeNs CuptiSource::now_ns() {
  std::uint64_t timestamp = 0;
  DAYDREAM_CUPTI_CALL(cuptiGetTimestamp(&timestamp));
  return static_cast<TimeNs>(timestamp);
}

void CuptiSource::buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  const std::size_t bytes = instance_ ? instance_->options_.buffer_bytes : std::size_t{8} << 20;
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kRecordAlignment, bytes));
  *size = *buffer ? bytes : 0;  // no buffer: CUPTI drops records and counts them
  *max_records = 0;             // as many as fit
}

void CuptiSource::buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid_size) {
  if (instance_ && instance_->recorder_ && buffer) instance_->read_buffer(buffer, valid_size);
  std::free(buffer);
}

void CuptiSource::read_buffer(std::uint8_t* buffer, std::size_t valid_size) {
  // Called by CUPTI on its own thread (or in cuptiActivityFlushAll): nothing may escape.
  try {
    CUpti_Activity* record = nullptr;
    while (DAYDREAM_CUPTI_CALL_EXPECTING(cuptiActivityGetNextRecord(buffer, valid_size, &record),
                                         CUPTI_ERROR_MAX_LIMIT_REACHED) == CUPTI_SUCCESS)
      add_activity(*record, *recorder_, names_);
    std::size_t dropped = 0;
    if (DAYDREAM_CUPTI_CALL(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped)) == CUPTI_SUCCESS && dropped)
      recorder_->add_dropped(dropped);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "daydream-cupti: lost part of an activity buffer: %s\n", e.what());
  }
}

}  // namespace daydream::cupti
