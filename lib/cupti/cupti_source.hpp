#pragma once
// The CUPTI ActivitySource: registers the activity buffer callbacks, enables and disables the
// activity kinds, flushes, and hands every completed record to the Recorder.
//
// Kinds enabled by enable() (and disabled by disable()): CONCURRENT_KERNEL, MEMCPY, MEMSET,
// RUNTIME, DRIVER (unless options.driver_api is off), SYNCHRONIZATION, CUDA_EVENT (to know which
// cudaEventRecord an event wait refers to) and MARKER (NVTX; unless options.nvtx is off).
// Enabled once by initialize() and kept on: DEVICE and CONTEXT (device names, context -> device).

#include <cstddef>

#include "cupti/collector_session.hpp"
#include "cupti/cupti_convert.hpp"

namespace daydream::cupti {

class CuptiSource final : public ActivitySource {
 public:
  explicit CuptiSource(const CollectorOptions& options);
  ~CuptiSource() override;
  CuptiSource(const CuptiSource&) = delete;
  CuptiSource& operator=(const CuptiSource&) = delete;

  /// Thread ids as gettid(), buffer callbacks, DEVICE and CONTEXT records; records go to
  /// `recorder` from then on. Fails when CUPTI cannot be used in this process (the reason is on
  /// stderr and in the message).
  Outcome initialize(Recorder& recorder);

  Outcome enable() override;
  void disable() override;
  void flush(bool forced) override;
  TimeNs now_ns() override;

 private:
  // CUPTI's buffer callbacks carry no user pointer: they reach the one source through this.
  static CuptiSource* instance_;
  static void buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records);
  static void buffer_completed(CUcontext context, std::uint32_t stream, std::uint8_t* buffer, std::size_t size,
                               std::size_t valid_size);
  void read_buffer(std::uint8_t* buffer, std::size_t valid_size);

  Recorder* recorder_ = nullptr;
  CollectorOptions options_;
  ApiNames names_;
};

}  // namespace daydream::cupti
