#pragma once
// The collector's session: the start/stop state machine, the recording windows and the trace
// file, driving an ActivitySource. The CUPTI backend is one ActivitySource; tests use a fake one,
// so every state change is tested without a GPU (the Kineto habit: CUPTI behind virtual methods).
//
//   immediate mode (default): recording from injection to exit, the whole run. The first start()
//   narrows it to windows: from then on only [start(), stop()) windows are kept. A stop() before
//   any start() keeps everything up to it.
//   manual mode: nothing is recorded (CUPTI activities stay disabled) until start(); stop()
//   disables them again, so the overhead is paid only inside windows.
//
// flush() writes what was recorded so far to a file and forgets it; at exit (finish()) what is
// left is written to the configured path. Errors are returned as an Outcome, never thrown: this
// code runs inside CUPTI callbacks and atexit handlers of programs that are not ours.

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "cupti/chrome_trace.hpp"
#include "cupti/recorder.hpp"

namespace daydream::cupti {

/// The result of a session call: ok, or a message for the user.
struct Outcome {
  bool ok = true;
  std::string message;
  static Outcome failure(std::string text) { return {false, std::move(text)}; }
};

/// Where activity records come from (CUPTI, or a test). Implementations deliver records to the
/// Recorder themselves; `flush` must have delivered every completed record when it returns.
class ActivitySource {
 public:
  virtual ~ActivitySource() = default;
  /// Enables recording of the activity kinds (kernels, copies, API calls, syncs, NVTX).
  virtual Outcome enable() = 0;
  virtual void disable() = 0;
  /// Delivers buffered records; `forced` also delivers incomplete buffers (at exit).
  virtual void flush(bool forced) = 0;
  /// The current time on the records' clock.
  virtual TimeNs now_ns() = 0;
};

enum class StartMode : std::uint8_t { immediate, manual };

struct CollectorOptions {
  StartMode start_mode = StartMode::immediate;
  std::string trace_path;        ///< where finish() and flush("") write
  bool driver_api = true;        ///< record CUDA driver calls (cuda_driver) besides runtime calls
  bool nvtx = true;              ///< record NVTX ranges (sets NVTX_INJECTION64_PATH when unset)
  std::size_t buffer_bytes = std::size_t{8} << 20;  ///< size of each CUPTI activity buffer
};

/// Reads the collector's environment variables through `lookup` (getenv in the injection library,
/// a table in tests): DAYDREAM_TRACE_FILE ("{pid}" is replaced by the process id; default
/// daydream_trace_<pid>.json), DAYDREAM_COLLECTOR_START (immediate | manual),
/// DAYDREAM_COLLECTOR_DRIVER (1 | 0), DAYDREAM_COLLECTOR_NVTX (1 | 0),
/// DAYDREAM_COLLECTOR_BUFFER_MB (1..1024). Unusable values keep the default and add a warning.
CollectorOptions options_from_environment(const std::function<const char*(const char*)>& lookup,
                                          std::int64_t process_id, std::vector<std::string>* warnings);

class Collector {
 public:
  enum class State : std::uint8_t { idle, recording, finished };

  Collector(ActivitySource& source, CollectorOptions options, TraceInfo info);

  Recorder& recorder() { return recorder_; }
  const CollectorOptions& options() const { return options_; }
  State state() const;

  /// Called once at injection: in immediate mode enables the source and records the whole run.
  Outcome begin();
  Outcome start();
  Outcome stop();
  /// Writes what was recorded so far to `path` (the configured path when empty) and forgets it.
  /// On success the message is the path written.
  Outcome flush(const std::string& path);
  /// At exit: flushes CUPTI (forced) and writes what is left, if anything. Returns the path
  /// written, or an empty message when there was nothing to write.
  Outcome finish();

 private:
  Outcome write(const std::string& path, bool final);

  mutable std::mutex mutex_;
  ActivitySource& source_;
  CollectorOptions options_;
  TraceInfo info_;
  Recorder recorder_;
  State state_ = State::idle;
  bool source_enabled_ = false;
  bool written_ = false;
};

}  // namespace daydream::cupti
