#pragma once
// The Recorder collects activity records (from CUPTI's buffer callbacks, or from a test) and
// hands them out in batches ready to write: kept or dropped by the recording windows, NVTX start
// and end markers paired into ranges, synchronization records joined with their device and with
// the cudaEventRecord they waited for. Thread-safe: CUPTI delivers buffers on its own thread
// while the program calls start()/stop()/flush().
//
// Windows. By default everything is kept (whole run). The first open_window() switches to
// windows: a record is kept when it falls in some [open, close) window. An API call is judged by
// its start; a GPU activity or synchronization record by the API call with its correlation id
// (so a kernel launched inside a window is kept even when it runs after the window closed),
// or by its own start when that call is not in the same batch; an NVTX range by its start.

#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cupti/activity_records.hpp"

namespace daydream::cupti {

inline constexpr TimeNs kForever = std::numeric_limits<TimeNs>::max();

/// The [start, stop) intervals to record, or the whole run.
class RecordingWindows {
 public:
  bool whole_run() const { return whole_run_; }
  bool is_open() const { return !windows_.empty() && windows_.back().second == kForever; }
  /// Opens a window at `t`; the first call switches from the whole run to windows.
  void open(TimeNs t);
  /// Closes the open window at `t`. In whole-run mode keeps everything before `t`.
  void close(TimeNs t);
  bool contains(TimeNs t) const;
  /// The windows, [start, stop) ns; stop is kForever while open.
  const std::vector<std::pair<TimeNs, TimeNs>>& list() const { return windows_; }

 private:
  bool whole_run_ = true;
  std::vector<std::pair<TimeNs, TimeNs>> windows_;
};

/// A paired NVTX range (push/pop or start/end).
struct NvtxRange {
  std::string_view name;
  std::string_view domain;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  std::uint32_t process_id = 0;
  std::uint32_t thread_id = 0;
};

/// A synchronization record with what the trace needs resolved.
struct ResolvedSync {
  SyncRecord record;
  std::int64_t device = 0;
  std::int64_t wait_on_stream = -1;           ///< stream of the awaited cudaEventRecord, or -1
  std::int64_t wait_record_correlation = -1;  ///< correlation of that cudaEventRecord call, or -1
};

/// What was counted instead of written (cumulative over the process).
struct RecorderCounters {
  std::uint64_t records_without_timestamps = 0;  ///< CUPTI could not time them (start = end = 0)
  std::uint64_t records_outside_windows = 0;     ///< dropped by start()/stop()
  std::uint64_t cupti_dropped_records = 0;       ///< CUPTI's own count (buffers full)
  std::uint64_t nvtx_unmatched_markers = 0;      ///< range ends without a start, starts never ended
  std::uint64_t sync_device_unknown = 0;         ///< sync records whose context named no known device (device 0 used)
};

/// The records of one write, in a deterministic order (by start time, then correlation id).
struct Batch {
  std::vector<ApiRecord> apis;  ///< runtime calls first, then driver calls
  std::vector<KernelRecord> kernels;
  std::vector<MemcpyRecord> memcpys;  ///< `correlation` is that of the runtime call when CUPTI gave one
  std::vector<MemsetRecord> memsets;
  std::vector<ResolvedSync> syncs;
  std::vector<NvtxRange> ranges;
  std::vector<MarkerRecord> instants;  ///< nvtxMark
  std::vector<DeviceRecord> devices;   ///< every device seen so far
  RecordingWindows windows;
  RecorderCounters counters;

  std::size_t size() const {
    return apis.size() + kernels.size() + memcpys.size() + memsets.size() + syncs.size() + ranges.size() +
           instants.size();
  }
};

class Recorder {
 public:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  void add(const KernelRecord& record);
  void add(const MemcpyRecord& record);
  void add(const MemsetRecord& record);
  void add(const ApiRecord& record);
  void add(const SyncRecord& record);
  void add(const CudaEventRecord& record);
  void add(const MarkerRecord& record);
  void add(const DeviceRecord& record);
  void add(const ContextRecord& record);
  /// Records CUPTI reports it dropped (cuptiActivityGetNumDroppedRecords).
  void add_dropped(std::uint64_t count);

  void open_window(TimeNs t);
  void close_window(TimeNs t);
  bool window_open() const;
  bool whole_run() const;

  /// Records held and not yet written (open NVTX ranges excluded).
  std::size_t size() const;
  /// Whether any record was ever added.
  bool ever_recorded() const;
  /// The records to write, forgetting them. NVTX ranges still open stay for the next batch,
  /// unless `final` (then they are counted as unmatched).
  Batch take(bool final);
  RecorderCounters counters() const;

 private:
  std::string_view intern(std::string_view text);
  bool timed(TimeNs start, TimeNs end);
  void note_device(std::uint32_t context, std::uint32_t device);
  void pair_markers(Batch& batch, bool final);
  void resolve_syncs(Batch& batch, std::vector<SyncRecord> syncs);
  const CudaEventRecord* awaited_record(const SyncRecord& sync) const;

  mutable std::mutex mutex_;
  RecordingWindows windows_;
  RecorderCounters counters_;
  bool ever_recorded_ = false;
  std::unordered_set<std::string, StringHash, std::equal_to<>> strings_;  // node-based: views stay valid
  std::vector<ApiRecord> apis_;
  std::vector<KernelRecord> kernels_;
  std::vector<MemcpyRecord> memcpys_;
  std::vector<MemsetRecord> memsets_;
  std::vector<SyncRecord> syncs_;
  std::vector<MarkerRecord> markers_;  // new markers and, after take(), the starts of open ranges
  std::vector<DeviceRecord> devices_;
  std::unordered_map<std::uint32_t, std::uint32_t> context_device_;
  std::unordered_map<std::uint64_t, CudaEventRecord> events_by_sync_id_;
  // cuda_event id -> its records in call order (CUDA 12, where records carry no sync id).
  std::unordered_map<std::uint32_t, std::vector<CudaEventRecord>> events_by_id_;
};

}  // namespace daydream::cupti
