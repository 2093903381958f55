#include "cupti/collector_session.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

namespace daydream::cupti {
namespace {

std::string expand_pid(std::string path, std::int64_t process_id) {
  static constexpr std::string_view kPid = "{pid}";
  for (auto at = path.find(kPid); at != std::string::npos; at = path.find(kPid, at))
    path.replace(at, kPid.size(), std::to_string(process_id));
  return path;
}

// "1"/"0" (also on/off, true/false, yes/no); anything else keeps `fallback` and warns.
bool flag(const char* text, const char* name, bool fallback, std::vector<std::string>* warnings) {
  const std::string_view v = text;
  if (v == "1" || v == "on" || v == "ON" || v == "true" || v == "yes") return true;
  if (v == "0" || v == "off" || v == "OFF" || v == "false" || v == "no") return false;
  if (warnings) warnings->push_back(std::string(name) + "=" + text + ": expected 1 or 0; keeping the default");
  return fallback;
}

}  // namespace

CollectorOptions options_from_environment(const std::function<const char*(const char*)>& lookup,
                                          std::int64_t process_id, std::vector<std::string>* warnings) {
  CollectorOptions options;
  const char* path = lookup("DAYDREAM_TRACE_FILE");
  options.trace_path = expand_pid(path && *path ? path : "daydream_trace_{pid}.json", process_id);
  if (const char* start = lookup("DAYDREAM_COLLECTOR_START"); start && *start) {
    const std::string_view v = start;
    if (v == "manual") options.start_mode = StartMode::manual;
    else if (v != "immediate" && warnings)
      warnings->push_back(std::string("DAYDREAM_COLLECTOR_START=") + start +
                          ": expected immediate or manual; recording from the start");
  }
  if (const char* v = lookup("DAYDREAM_COLLECTOR_DRIVER"); v && *v)
    options.driver_api = flag(v, "DAYDREAM_COLLECTOR_DRIVER", true, warnings);
  if (const char* v = lookup("DAYDREAM_COLLECTOR_NVTX"); v && *v)
    options.nvtx = flag(v, "DAYDREAM_COLLECTOR_NVTX", true, warnings);
  if (const char* v = lookup("DAYDREAM_COLLECTOR_BUFFER_MB"); v && *v) {
    const std::string_view text = v;
    unsigned megabytes = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), megabytes);
    if (error == std::errc{} && end == text.data() + text.size() && megabytes >= 1 && megabytes <= 1024)
      options.buffer_bytes = std::size_t{megabytes} << 20;
    else if (warnings)
      warnings->push_back(std::string("DAYDREAM_COLLECTOR_BUFFER_MB=") + v + ": expected 1 to 1024; using 8");
  }
  return options;
}

Collector::Collector(ActivitySource& source, CollectorOptions options, TraceInfo info)
    : source_(source), options_(std::move(options)), info_(std::move(info)) {}

Collector::State Collector::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

Outcome Collector::begin() {
  std::lock_guard lock(mutex_);
  if (options_.start_mode == StartMode::manual || source_enabled_) return {};
  Outcome enabled = source_.enable();
  if (!enabled.ok) return enabled;
  source_enabled_ = true;
  state_ = State::recording;
  return {};
}

Outcome Collector::start() {
  std::lock_guard lock(mutex_);
  if (state_ == State::finished) return Outcome::failure("start(): the collector has finished (the process is exiting)");
  if (state_ == State::recording && !recorder_.whole_run())
    return Outcome::failure("start(): already recording; call stop() first");
  if (!source_enabled_) {
    Outcome enabled = source_.enable();
    if (!enabled.ok) return enabled;
    source_enabled_ = true;
  }
  recorder_.open_window(source_.now_ns());
  state_ = State::recording;
  return {};
}

Outcome Collector::stop() {
  std::lock_guard lock(mutex_);
  if (state_ != State::recording) return Outcome::failure("stop(): not recording; call start() first");
  recorder_.close_window(source_.now_ns());
  if (options_.start_mode == StartMode::manual) {
    source_.disable();
    source_enabled_ = false;
  }
  state_ = State::idle;
  return {};
}

Outcome Collector::flush(const std::string& path) {
  std::lock_guard lock(mutex_);
  if (state_ == State::finished) return Outcome::failure("flush(): the collector has finished (the process is exiting)");
  source_.flush(false);
  return write(path.empty() ? options_.trace_path : path, false);
}

Outcome Collector::finish() {
  std::lock_guard lock(mutex_);
  if (state_ == State::finished) return {};
  state_ = State::finished;
  source_.flush(true);
  if (recorder_.size() == 0 && (written_ || !recorder_.ever_recorded())) return {};
  return write(options_.trace_path, true);
}

Outcome Collector::write(const std::string& path, bool final) {
  const Batch batch = recorder_.take(final);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) write_chrome_trace(batch, info_, out);
  out.close();
  if (!out) return Outcome::failure("cannot write the trace file '" + path + "': " + std::strerror(errno));
  written_ = true;
  return {true, path};
}

}  // namespace daydream::cupti
