#pragma once
/// @file bottleneck.hpp
/// @brief "What is my bottleneck?" on the unmodified run: the baseline's critical path by the
/// categories `predict` uses, by layer and by operator; each GPU stream's idle time split by what
/// it waited for (the CPU, data, a sync, another stream, communication, or latency no task
/// covers), as Holistic Trace Analysis's idle-time breakdown; the kernels and operators that
/// hold the most critical-path time. docs/cli.md, "bottleneck".
///
/// @code
///   const daydream::Predictor predictor(daydream::build_graph(daydream::load_trace(path)));
///   const daydream::BottleneckReport report = daydream::find_bottleneck(predictor);
///   std::cout << report.summary << "\n";
/// @endcode

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daydream/predict.hpp"

namespace daydream {

/// What a GPU stream's idle stretch waited for: the binding chain that ended it, clipped to the
/// stretch, by the category of each task on it (path_category).
enum class IdleCause : std::uint8_t {
  cpu,            ///< CPU work and launch calls of the thread that launched the next GPU task
  data,           ///< data loading (DataLoader on the main thread, its workers)
  sync,           ///< a blocking CUDA call (the CPU waited for the GPU, then had to launch again)
  other_stream,   ///< GPU work of another stream it waited for
  communication,  ///< collectives
  latency,        ///< no task covers it: launch latencies, wake-ups, gaps the trace keeps
};
inline constexpr std::size_t kIdleCauseCount = 6;
std::string_view to_string(IdleCause cause);

/// One GPU stream inside the iterations.
struct StreamIdle {
  std::string unit;
  /// The busiest stream of its GPU (its rank's device): the summary speaks of these, so that a
  /// side stream idle by design (NCCL's, a copy stream) does not count as the GPU's idle time.
  bool main = false;
  TimeNs window_ns = 0;  ///< its rank's iterations' window (the graph's, for the graph of one trace)
  TimeNs busy_ns = 0;    ///< its tasks' time inside the window
  std::array<TimeNs, kIdleCauseCount> idle_by_cause_ns{};
  TimeNs idle_ns() const;  ///< sum of idle_by_cause_ns = window - busy
};

/// Critical-path time of one name (an operator, a kernel), and on how many of its tasks.
struct NamedTime {
  std::string name;
  TimeNs ns = 0;
  std::int64_t tasks = 0;
};

struct BottleneckReport {
  TimeNs iteration_ns = 0;       ///< median iteration, as predict's baseline (whole run without iterations)
  std::size_t iterations = 0;    ///< iterations the window covers
  TimeNs window_start_ns = 0, window_end_ns = 0;  ///< first iteration's start to last one's end
  PathBreakdown critical_path;   ///< inside the window: by category and by layer
  /// Critical-path task time inside the window by innermost operator (tasks outside any: "(no
  /// operator)"), and of GPU tasks by kernel name; longest first, ties by name.
  std::vector<NamedTime> by_operator, by_kernel;
  std::vector<StreamIdle> streams;     ///< every GPU stream with a task in the window
  /// One line: the dominant category, then the idle time and its causes of each GPU's busiest stream.
  std::string summary;
};

/// The bottleneck report of the predictor's baseline (its graph and simulation).
BottleneckReport find_bottleneck(const Predictor& predictor);

/// `daydream bottleneck --json` (field names are a contract; docs/cli.md).
std::string to_json(const BottleneckReport& report, const std::string& trace_path);

}  // namespace daydream
