#include "cupti/chrome_trace.hpp"

#include <charconv>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "common/json_string.hpp"
#include "cupti/names.hpp"

namespace daydream::cupti {
namespace {

/// One JSON object per event, appended to a string: `{"ph": "X", "cat": ..., "args": {...}}`.
class EventWriter {
 public:
  explicit EventWriter(std::string& out) : out_(out) {}

  EventWriter& begin(char ph, std::string_view cat, std::string_view name) {
    out_ += first_event_ ? "\n  {\"ph\": \"" : ",\n  {\"ph\": \"";
    first_event_ = false;
    out_ += ph;
    out_ += "\", \"cat\": ";
    out_ += json::quoted(cat);
    out_ += ", \"name\": ";
    out_ += json::quoted(name);
    return *this;
  }
  EventWriter& field(std::string_view key, std::int64_t value) {
    key_(key);
    append_int(value);
    return *this;
  }
  EventWriter& time(std::string_view key, TimeNs ns) {
    key_(key);
    out_ += format_us(ns);
    return *this;
  }
  EventWriter& text(std::string_view key, std::string_view value) {
    key_(key);
    out_ += json::quoted(value);
    return *this;
  }
  EventWriter& raw(std::string_view key, std::string_view json) {
    key_(key);
    out_ += json;
    return *this;
  }
  /// ph X: ts and dur from [start, end] (end before start: dur 0).
  EventWriter& span(TimeNs start, TimeNs end) { return time("ts", start).time("dur", end > start ? end - start : 0); }
  EventWriter& args() {
    out_ += ", \"args\": {";
    first_arg_ = true;
    in_args_ = true;
    return *this;
  }
  void end() {
    if (in_args_) out_ += '}';
    out_ += '}';
    in_args_ = false;
  }

 private:
  void key_(std::string_view key) {
    if (in_args_ && first_arg_) first_arg_ = false;
    else out_ += ", ";
    out_ += json::quoted(key);
    out_ += ": ";
  }
  void append_int(std::int64_t value) {
    char buffer[24];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    out_.append(buffer, static_cast<std::size_t>(result.ptr - buffer));
  }

  std::string& out_;
  bool first_event_ = true;
  bool first_arg_ = true;
  bool in_args_ = false;
};

std::string triple(const std::int32_t (&v)[3]) {
  std::string out = "[";
  for (int i = 0; i < 3; ++i) {
    if (i) out += ", ";
    out += std::to_string(v[i]);
  }
  return out += ']';
}

std::string bandwidth_gbps(std::uint64_t bytes, TimeNs start, TimeNs end) {
  char buffer[32];
  const double ns = end > start ? static_cast<double>(end - start) : 0.0;
  std::snprintf(buffer, sizeof buffer, "%.3f", ns > 0 ? static_cast<double>(bytes) / ns : 0.0);  // bytes/ns = GB/s
  return buffer;
}

std::int64_t signed_id(std::uint32_t id) { return id == kInvalidId ? -1 : static_cast<std::int64_t>(id); }

/// Writes the events of one batch; CPU events first, then GPU events, syncs and flows.
class TraceWriter {
 public:
  TraceWriter(const Batch& batch, std::string& out) : batch_(batch), events_(out) {}

  void run() {
    metadata();
    for (const ApiRecord& api : batch_.apis) api_call(api);
    for (const NvtxRange& range : batch_.ranges) nvtx_range(range);
    for (const MarkerRecord& mark : batch_.instants) nvtx_mark(mark);
    for (const KernelRecord& k : batch_.kernels) kernel(k);
    for (const MemcpyRecord& m : batch_.memcpys) memcpy(m);
    for (const MemsetRecord& m : batch_.memsets) memset(m);
    for (const ResolvedSync& s : batch_.syncs) sync(s);
    flows();
  }

 private:
  void metadata() {
    std::set<std::int64_t> devices;
    std::set<std::pair<std::int64_t, std::int64_t>> streams;
    for (const DeviceRecord& d : batch_.devices) devices.insert(d.id);
    auto note = [&](std::int64_t device, std::int64_t stream) {
      devices.insert(device);
      streams.insert({device, stream});
    };
    for (const auto& k : batch_.kernels) note(k.device, k.stream);
    for (const auto& m : batch_.memcpys) note(m.device, m.stream);
    for (const auto& m : batch_.memsets) note(m.device, m.stream);
    for (std::int64_t d : devices)
      events_.begin('M', "__metadata", "process_name").field("pid", d).field("tid", 0).args()
          .text("name", "GPU " + std::to_string(d)).end();
    for (const auto& [d, s] : streams)
      events_.begin('M', "__metadata", "thread_name").field("pid", d).field("tid", s).args()
          .text("name", "stream " + std::to_string(s)).end();
  }

  void api_call(const ApiRecord& api) {
    events_.begin('X', api.domain == ApiDomain::runtime ? "cuda_runtime" : "cuda_driver", api.name)
        .field("pid", api.process_id).field("tid", api.thread_id).span(api.start_ns, api.end_ns)
        .args().field("cbid", api.cbid).field("correlation", api.correlation).end();
    launches_.try_emplace(api.correlation, &api);
  }

  void nvtx_range(const NvtxRange& range) {
    events_.begin('X', "user_annotation", range.name).field("pid", range.process_id).field("tid", range.thread_id)
        .span(range.start_ns, range.end_ns);
    if (!range.domain.empty()) events_.args().text("domain", range.domain);
    events_.end();
  }

  void nvtx_mark(const MarkerRecord& mark) {
    events_.begin('i', "user_annotation", mark.name).field("pid", mark.process_id).field("tid", mark.thread_id)
        .time("ts", mark.timestamp_ns).text("s", "t");
    if (!mark.domain.empty()) events_.args().text("domain", mark.domain);
    events_.end();
  }

  void gpu_place(std::uint32_t device, std::uint32_t stream, TimeNs start, TimeNs end) {
    events_.field("pid", device).field("tid", stream).span(start, end).args()
        .field("device", device).field("stream", stream);
  }

  void kernel(const KernelRecord& k) {
    auto [it, inserted] = demangled_.try_emplace(k.name.data());
    if (inserted) it->second = demangle(k.name);
    events_.begin('X', "kernel", it->second);
    gpu_place(k.device, k.stream, k.start_ns, k.end_ns);
    events_.field("context", k.context).field("correlation", k.correlation)
        .field("registers per thread", k.registers_per_thread).field("shared memory", k.shared_memory_bytes)
        .raw("grid", triple(k.grid)).raw("block", triple(k.block)).end();
    gpu_flows_.push_back({k.correlation, k.device, k.stream, k.start_ns});
  }

  void memcpy(const MemcpyRecord& m) {
    transfer("gpu_memcpy", memcpy_name(m.copy_kind, m.src_kind, m.dst_kind), m, m.bytes);
  }

  void memset(const MemsetRecord& m) { transfer("gpu_memset", memset_name(m.memory_kind), m, m.bytes); }

  // A copy or memset: placed on its stream, with its size and achieved bandwidth.
  void transfer(std::string_view category, std::string_view name, const GpuActivity& a, std::uint64_t bytes) {
    events_.begin('X', category, name);
    gpu_place(a.device, a.stream, a.start_ns, a.end_ns);
    events_.field("context", a.context).field("correlation", a.correlation)
        .field("bytes", static_cast<std::int64_t>(bytes))
        .raw("memory bandwidth (GB/s)", bandwidth_gbps(bytes, a.start_ns, a.end_ns)).end();
    gpu_flows_.push_back({a.correlation, a.device, a.stream, a.start_ns});
  }

  void sync(const ResolvedSync& s) {
    const SyncRecord& r = s.record;
    const std::string_view kind = sync_kind_name(r.type);
    events_.begin('X', "cuda_sync", kind).field("pid", s.device).field("tid", signed_id(r.stream))
        .span(r.start_ns, r.end_ns).args().text("cuda_sync_kind", kind).field("stream", signed_id(r.stream))
        .field("correlation", r.correlation).field("device", s.device).field("context", r.context);
    if (r.type == SyncType::event_synchronize || r.type == SyncType::stream_wait_event)
      events_.field("wait_on_stream", s.wait_on_stream)
          .field("wait_on_cuda_event_record_corr_id", s.wait_record_correlation)
          .field("wait_on_cuda_event_id", signed_id(r.cuda_event));
    events_.end();
  }

  // ac2g arrows from each launch call to the GPU work it launched (Perfetto draws them).
  void flows() {
    for (const GpuStart& g : gpu_flows_) {
      auto it = launches_.find(g.correlation);
      if (it == launches_.end()) continue;
      const ApiRecord& api = *it->second;
      events_.begin('s', "ac2g", "ac2g").field("id", g.correlation).field("pid", api.process_id)
          .field("tid", api.thread_id).time("ts", api.start_ns).end();
      events_.begin('f', "ac2g", "ac2g").field("id", g.correlation).field("pid", g.device).field("tid", g.stream)
          .time("ts", g.start_ns).text("bp", "e").end();
    }
  }

  struct GpuStart {
    std::uint32_t correlation, device, stream;
    TimeNs start_ns;
  };
  const Batch& batch_;
  EventWriter events_;
  std::unordered_map<std::uint32_t, const ApiRecord*> launches_;  // the first call (runtime before driver)
  std::unordered_map<const char*, std::string> demangled_;        // interned names: one pointer per name
  std::vector<GpuStart> gpu_flows_;
};

std::string device_properties(const Batch& batch) {
  std::string out = "[";
  for (const DeviceRecord& d : batch.devices) {
    if (out.size() > 1) out += ", ";
    out += "{\"id\": " + std::to_string(d.id) + ", \"name\": " + json::quoted(d.name) +
           ", \"totalGlobalMem\": " + std::to_string(d.global_memory_bytes) +
           ", \"computeMajor\": " + std::to_string(d.compute_major) +
           ", \"computeMinor\": " + std::to_string(d.compute_minor) +
           ", \"numSms\": " + std::to_string(d.multiprocessors) + "}";
  }
  return out + "]";
}

std::string window_bound(TimeNs t) {
  return t == kForever || t == std::numeric_limits<TimeNs>::min() ? "null" : format_us(t);
}

std::string collector_info(const Batch& batch, const TraceInfo& info) {
  const RecorderCounters& c = batch.counters;
  std::string out = "{\"version\": " + json::quoted(info.collector_version) +
                    ", \"pid\": " + std::to_string(info.process_id) +
                    ", \"clock\": \"CUPTI timestamps\", \"recording\": ";
  out += batch.windows.whole_run() ? "\"whole run\"" : "\"windows\"";
  out += ", \"windows_us\": [";
  for (std::size_t i = 0; i < batch.windows.list().size(); ++i) {
    const auto& [start, stop] = batch.windows.list()[i];
    out += (i ? ", [" : "[") + window_bound(start) + ", " + window_bound(stop) + "]";
  }
  out += "], \"records_outside_windows\": " + std::to_string(c.records_outside_windows) +
         ", \"records_without_timestamps\": " + std::to_string(c.records_without_timestamps) +
         ", \"cupti_dropped_records\": " + std::to_string(c.cupti_dropped_records) +
         ", \"nvtx_unmatched_markers\": " + std::to_string(c.nvtx_unmatched_markers) +
         ", \"sync_device_unknown\": " + std::to_string(c.sync_device_unknown) + "}";
  return out;
}

}  // namespace

std::string format_us(TimeNs ns) {
  const bool negative = ns < 0;
  // Magnitude as unsigned so that the most negative value does not overflow.
  const std::uint64_t magnitude = negative ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  const std::uint64_t fraction = magnitude % 1000;
  std::string out = negative ? "-" : "";
  out += std::to_string(magnitude / 1000);
  out += '.';
  out += static_cast<char>('0' + fraction / 100);
  out += static_cast<char>('0' + fraction / 10 % 10);
  out += static_cast<char>('0' + fraction % 10);
  return out;
}


void write_chrome_trace(const Batch& batch, const TraceInfo& info, std::ostream& out) {
  std::string text = "{\"schemaVersion\": 1,\n \"deviceProperties\": " + device_properties(batch) +
                     ",\n \"daydream_collector\": " + collector_info(batch, info) + ",\n \"traceEvents\": [";
  TraceWriter(batch, text).run();
  text += "\n]}\n";
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace daydream::cupti
