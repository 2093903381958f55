#include "cupti/recorder.hpp"

#include <algorithm>
#include <tuple>

namespace daydream::cupti {
namespace {

// cudaEventRecord records kept to resolve later waits; beyond this many the table is reset
// (a wait on an event recorded that long ago then goes unresolved, as in a Kineto trace).
constexpr std::size_t kMaxRememberedEvents = std::size_t{1} << 20;
// Without sync ids (CUDA 12), the latest records of each event are kept (events are reused).
constexpr std::size_t kRecordsPerEvent = 64;

template <class Record>
void sort_by_start(std::vector<Record>& records) {
  std::stable_sort(records.begin(), records.end(), [](const Record& a, const Record& b) {
    return std::tie(a.start_ns, a.correlation) < std::tie(b.start_ns, b.correlation);
  });
}

/// Keeps the records `keep` accepts; returns how many were dropped.
template <class Record, class Keep>
std::uint64_t keep_if(std::vector<Record>& records, Keep keep) {
  const auto before = records.size();
  records.erase(std::remove_if(records.begin(), records.end(), [&](const Record& r) { return !keep(r); }),
                records.end());
  return before - records.size();
}

}  // namespace

// --- windows ---

void RecordingWindows::open(TimeNs t) {
  if (whole_run_) {
    whole_run_ = false;
    windows_.clear();
  }
  if (!is_open()) windows_.emplace_back(t, kForever);
}

void RecordingWindows::close(TimeNs t) {
  if (whole_run_) {
    whole_run_ = false;
    windows_.assign(1, {std::numeric_limits<TimeNs>::min(), t});
  } else if (is_open()) {
    windows_.back().second = t;
  }
}

bool RecordingWindows::contains(TimeNs t) const {
  if (whole_run_) return true;
  return std::any_of(windows_.begin(), windows_.end(), [t](const auto& w) { return w.first <= t && t < w.second; });
}

// --- adding records (called on CUPTI's thread) ---

std::string_view Recorder::intern(std::string_view text) {
  auto it = strings_.find(text);
  if (it == strings_.end()) it = strings_.emplace(text).first;
  return *it;
}

bool Recorder::timed(TimeNs start, TimeNs end) {
  if (start == 0 && end == 0) {
    ++counters_.records_without_timestamps;
    return false;
  }
  ever_recorded_ = true;
  return true;
}

void Recorder::note_device(std::uint32_t context, std::uint32_t device) { context_device_[context] = device; }

void Recorder::add(const KernelRecord& record) {
  std::lock_guard lock(mutex_);
  if (!timed(record.start_ns, record.end_ns)) return;
  note_device(record.context, record.device);
  kernels_.push_back(record);
  kernels_.back().name = intern(record.name);
}

void Recorder::add(const MemcpyRecord& record) {
  std::lock_guard lock(mutex_);
  if (!timed(record.start_ns, record.end_ns)) return;
  note_device(record.context, record.device);
  memcpys_.push_back(record);
}

void Recorder::add(const MemsetRecord& record) {
  std::lock_guard lock(mutex_);
  if (!timed(record.start_ns, record.end_ns)) return;
  note_device(record.context, record.device);
  memsets_.push_back(record);
}

void Recorder::add(const ApiRecord& record) {
  std::lock_guard lock(mutex_);
  if (!timed(record.start_ns, record.end_ns)) return;
  apis_.push_back(record);
  apis_.back().name = intern(record.name);
}

void Recorder::add(const SyncRecord& record) {
  std::lock_guard lock(mutex_);
  if (!timed(record.start_ns, record.end_ns)) return;
  syncs_.push_back(record);
}

void Recorder::add(const CudaEventRecord& record) {
  std::lock_guard lock(mutex_);
  if (record.device != kInvalidId) note_device(record.context, record.device);
  if (record.cuda_event_sync_id != 0 && record.cuda_event_sync_id != kInvalidId) {
    events_by_sync_id_[record.cuda_event_sync_id] = record;
    return;
  }
  auto& records = events_by_id_[record.cuda_event];
  records.push_back(record);
  if (records.size() > kRecordsPerEvent) records.erase(records.begin(), records.begin() + kRecordsPerEvent / 2);
}

void Recorder::add(const MarkerRecord& record) {
  std::lock_guard lock(mutex_);
  if (!timed(record.timestamp_ns, record.timestamp_ns)) return;
  markers_.push_back(record);
  markers_.back().name = intern(record.name);
  markers_.back().domain = intern(record.domain);
}

void Recorder::add(const DeviceRecord& record) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(devices_.begin(), devices_.end(), [&](const DeviceRecord& d) { return d.id == record.id; });
  if (it == devices_.end()) it = devices_.insert(devices_.end(), record);
  *it = record;
  it->name = intern(record.name);
}

void Recorder::add(const ContextRecord& record) {
  std::lock_guard lock(mutex_);
  note_device(record.context, record.device);
}

void Recorder::add_dropped(std::uint64_t count) {
  std::lock_guard lock(mutex_);
  counters_.cupti_dropped_records += count;
}

// --- windows and state ---

void Recorder::open_window(TimeNs t) {
  std::lock_guard lock(mutex_);
  windows_.open(t);
}

void Recorder::close_window(TimeNs t) {
  std::lock_guard lock(mutex_);
  windows_.close(t);
}

bool Recorder::window_open() const {
  std::lock_guard lock(mutex_);
  return windows_.is_open();
}

bool Recorder::whole_run() const {
  std::lock_guard lock(mutex_);
  return windows_.whole_run();
}

std::size_t Recorder::size() const {
  std::lock_guard lock(mutex_);
  return apis_.size() + kernels_.size() + memcpys_.size() + memsets_.size() + syncs_.size() + markers_.size();
}

bool Recorder::ever_recorded() const {
  std::lock_guard lock(mutex_);
  return ever_recorded_;
}

RecorderCounters Recorder::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

// --- taking a batch ---

void Recorder::pair_markers(Batch& batch, bool final) {
  std::vector<MarkerRecord> markers;
  markers.swap(markers_);
  std::stable_sort(markers.begin(), markers.end(),
                   [](const MarkerRecord& a, const MarkerRecord& b) { return a.timestamp_ns < b.timestamp_ns; });
  std::unordered_map<std::uint32_t, MarkerRecord> open;  // range id -> its start marker
  for (const MarkerRecord& m : markers) {
    if (m.flags & marker_instantaneous) {
      batch.instants.push_back(m);
    } else if (m.flags & marker_start) {
      if (!open.emplace(m.id, m).second) ++counters_.nvtx_unmatched_markers;  // id reused before its end
    } else if (m.flags & marker_end) {
      auto it = open.find(m.id);
      if (it == open.end()) {
        markers_.push_back(m);  // its start may come in a later buffer
        continue;
      }
      const MarkerRecord& s = it->second;
      batch.ranges.push_back({s.name, s.domain, s.timestamp_ns, m.timestamp_ns, s.process_id, s.thread_id});
      open.erase(it);
    }
  }
  for (const auto& [id, start] : open) markers_.push_back(start);
  if (final) {
    counters_.nvtx_unmatched_markers += markers_.size();
    markers_.clear();
  }
  std::stable_sort(batch.ranges.begin(), batch.ranges.end(), [](const NvtxRange& a, const NvtxRange& b) {
    return std::tie(a.start_ns, a.thread_id, b.end_ns) < std::tie(b.start_ns, b.thread_id, a.end_ns);
  });
}

// The cudaEventRecord a wait refers to: by CUPTI's sync id when it has one, else the event's
// last record whose call came before the wait's call (correlation ids grow in call order).
const CudaEventRecord* Recorder::awaited_record(const SyncRecord& sync) const {
  if (sync.cuda_event_sync_id != 0 && sync.cuda_event_sync_id != kInvalidId) {
    auto it = events_by_sync_id_.find(sync.cuda_event_sync_id);
    return it == events_by_sync_id_.end() ? nullptr : &it->second;
  }
  auto it = events_by_id_.find(sync.cuda_event);
  if (it == events_by_id_.end()) return nullptr;
  const CudaEventRecord* latest = nullptr;
  for (const CudaEventRecord& r : it->second)
    if (r.correlation < sync.correlation && (!latest || r.correlation > latest->correlation)) latest = &r;
  return latest;
}

void Recorder::resolve_syncs(Batch& batch, std::vector<SyncRecord> syncs) {
  for (const SyncRecord& s : syncs) {
    ResolvedSync r;
    r.record = s;
    if (auto it = context_device_.find(s.context); it != context_device_.end()) {
      r.device = it->second;
    } else {
      r.device = devices_.size() == 1 ? devices_.front().id : 0;
      if (devices_.size() != 1) ++counters_.sync_device_unknown;
    }
    if (s.type == SyncType::event_synchronize || s.type == SyncType::stream_wait_event) {
      if (const CudaEventRecord* awaited = awaited_record(s)) {
        r.wait_on_stream = awaited->stream;
        r.wait_record_correlation = awaited->correlation;
      }
    }
    batch.syncs.push_back(r);
  }
  if (events_by_sync_id_.size() > kMaxRememberedEvents) events_by_sync_id_.clear();
  if (events_by_id_.size() > kMaxRememberedEvents) events_by_id_.clear();
}

Batch Recorder::take(bool final) {
  std::lock_guard lock(mutex_);
  Batch batch;
  batch.apis.swap(apis_);
  batch.kernels.swap(kernels_);
  batch.memcpys.swap(memcpys_);
  batch.memsets.swap(memsets_);
  std::vector<SyncRecord> syncs;
  syncs.swap(syncs_);
  batch.devices = devices_;
  std::sort(batch.devices.begin(), batch.devices.end(),
            [](const DeviceRecord& a, const DeviceRecord& b) { return a.id < b.id; });
  batch.windows = windows_;
  pair_markers(batch, final);
  resolve_syncs(batch, std::move(syncs));

  // Runtime calls first: when a driver call nested in a runtime call shares its correlation id,
  // the runtime call is the launch.
  std::stable_sort(batch.apis.begin(), batch.apis.end(), [](const ApiRecord& a, const ApiRecord& b) {
    return std::tie(a.domain, a.start_ns, a.correlation) < std::tie(b.domain, b.start_ns, b.correlation);
  });
  std::unordered_map<std::uint32_t, TimeNs> call_start;
  for (const ApiRecord& api : batch.apis) call_start.try_emplace(api.correlation, api.start_ns);
  for (MemcpyRecord& m : batch.memcpys)
    if (m.runtime_correlation != 0 && call_start.count(m.runtime_correlation)) m.correlation = m.runtime_correlation;
  sort_by_start(batch.kernels);
  sort_by_start(batch.memcpys);
  sort_by_start(batch.memsets);
  std::stable_sort(batch.syncs.begin(), batch.syncs.end(), [](const ResolvedSync& a, const ResolvedSync& b) {
    return std::tie(a.record.start_ns, a.record.correlation) < std::tie(b.record.start_ns, b.record.correlation);
  });

  if (!windows_.whole_run()) {
    const RecordingWindows& w = windows_;
    // A GPU activity or sync goes with its API call when that call is in this batch.
    auto judged_start = [&](std::uint32_t correlation, TimeNs own_start) {
      auto it = call_start.find(correlation);
      return it != call_start.end() ? it->second : own_start;
    };
    auto in_window = [&](std::uint32_t correlation, TimeNs start) { return w.contains(judged_start(correlation, start)); };
    std::uint64_t dropped = 0;
    dropped += keep_if(batch.apis, [&](const ApiRecord& r) { return w.contains(r.start_ns); });
    dropped += keep_if(batch.kernels, [&](const KernelRecord& r) { return in_window(r.correlation, r.start_ns); });
    dropped += keep_if(batch.memcpys, [&](const MemcpyRecord& r) { return in_window(r.correlation, r.start_ns); });
    dropped += keep_if(batch.memsets, [&](const MemsetRecord& r) { return in_window(r.correlation, r.start_ns); });
    dropped += keep_if(batch.syncs, [&](const ResolvedSync& r) {
      return in_window(r.record.correlation, r.record.start_ns);
    });
    dropped += keep_if(batch.ranges, [&](const NvtxRange& r) { return w.contains(r.start_ns); });
    dropped += keep_if(batch.instants, [&](const MarkerRecord& r) { return w.contains(r.timestamp_ns); });
    counters_.records_outside_windows += dropped;
  }
  batch.counters = counters_;
  return batch;
}

}  // namespace daydream::cupti
