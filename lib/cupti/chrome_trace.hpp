#pragma once
// Writes a Batch as a Chrome-trace JSON document in the dialect of the PyTorch profiler (Kineto):
// the file daydream's importer reads (docs/formats.md) and Perfetto / chrome://tracing open.
//
//   cuda_runtime / cuda_driver   ph X on (pid, tid)       args: cbid, correlation
//   kernel                       ph X on (device, stream) args: device, context, stream, correlation, grid, block, ...
//   gpu_memcpy / gpu_memset      ph X on (device, stream) args: ... bytes, memory bandwidth (GB/s)
//   cuda_sync                    ph X on (device, stream) args: cuda_sync_kind, stream, correlation, device,
//                                                               wait_on_stream, wait_on_cuda_event_record_corr_id
//   user_annotation              ph X on (pid, tid)       NVTX ranges (args.domain); nvtxMark as ph i
//   ac2g                         ph s / f                 launch flow arrows (id = correlation)
//
// ts and dur are microseconds with exactly three decimals (integer ns, no rounding).

#include <cstdint>
#include <ostream>
#include <string>

#include "cupti/recorder.hpp"

namespace daydream::cupti {

struct TraceInfo {
  std::string collector_version;  ///< daydream's version
  std::int64_t process_id = 0;    ///< the traced process
};

void write_chrome_trace(const Batch& batch, const TraceInfo& info, std::ostream& out);

/// `ns` as microseconds with three decimals ("1712195495519695.812", "-0.005").
std::string format_us(TimeNs ns);

}  // namespace daydream::cupti
