#pragma once
// Reader for Nsight Systems SQLite exports (`nsys export --type sqlite`), plain or
// gzip-compressed: CUDA API calls, kernels, copies, memsets, synchronization records and NVTX
// ranges become the same Trace model as Kineto JSON. See docs/formats.md.

#include <cstdint>
#include <memory>

#include "daydream/ingest.hpp"
#include "ingest/input_stream.hpp"

namespace daydream {

class NsysSqliteReader final : public TraceReader {
 public:
  std::string_view format() const override { return "nsys-sqlite"; }
  /// True when the decoded bytes start with the SQLite magic "SQLite format 3\0".
  bool can_read(const InputFile& file) const override;
  /// Writes the bytes to a temporary file (SQLite reads files), opens it read-only, reads it and
  /// removes the file again, also on error.
  Trace read(const InputFile& file) const override;
  /// read_nsys_stream (below).
  std::optional<Trace> read_stream(InputStream& in) const override;
};

/// The same Trace as NsysSqliteReader::read, without the file in memory: a plain export is opened
/// where it lies, a gzip one inflated block by block into the temporary copy.
Trace read_nsys_stream(InputStream& in);


namespace nsys {

/// A thread as Nsight Systems serializes it (`globalTid`, also `globalPid` with tid 0): bits
/// 0-23 the Linux thread id, bits 24-47 the process id, bits 48-55 the VM id and 56-63 the
/// hardware id. Nsight's own queries decode it as `globalTid / 0x1000000 % 0x1000000` (pid) and
/// `globalTid % 0x1000000` (tid).
struct GlobalThread {
  std::int64_t pid = 0;
  std::int64_t tid = 0;
};
inline GlobalThread decode_global_tid(std::int64_t global_tid) {
  return {(global_tid >> 24) & 0xFFFFFF, global_tid & 0xFFFFFF};
}

}  // namespace nsys
}  // namespace daydream
