#pragma once
/// @file import_stats.hpp
/// @brief The catalogue of the import report: every counter daydream may record while reading a
/// trace and building its graph, with its severity, its meaning and the stage that records it
/// (as Perfetto's trace processor keeps its stats in one table, `storage/stats.h`).
///
/// A call site names a stat by its id; the report takes key, severity and description from here:
/// @code
///   trace.report.count(stats::flow_without_id_or_ts, event_index);
///   trace.report.count(stats::unsupported_phase, raw.ph, event_index);  // keyed: "unsupported_phase:B"
/// @endcode
/// docs/formats.md ("Import report") lists the same table; a test keeps the two in step.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace daydream {

/// How bad an import oddity is (the Perfetto trace processor's stat severities).
enum class Severity : std::uint8_t { info, error, data_loss };
std::string_view to_string(Severity severity);

namespace stats {

/// Which part of daydream records a stat.
enum class Stage : std::uint8_t {
  kineto,  ///< the Kineto JSON reader
  nsys,    ///< the Nsight Systems SQLite reader
  ingest,  ///< every reader, or the clock alignment that follows reading
  graph,   ///< the graph builder
};
std::string_view to_string(Stage stage);

// F(id, severity, stage, suffix, description), one row per stat:
// - id is the key, or for a keyed stat (a family of counters) the key's prefix: the counter is
//   "<id>:<suffix>", and `suffix` says what the call site puts there ("<ph>" for
//   unsupported_phase:X); "" for a plain stat.
// - description says what the counter means and what daydream did about it. One "{name}" in it is
//   a slot that the first occurrence fills with a detail (the first cycle edge dropped, a clock
//   offset), since a count alone would not say enough.
// Rows are grouped by stage; the report lists counters in the order they first occur.
#define DAYDREAM_IMPORT_STATS(F)                                                                                       \
  /* the Kineto JSON reader (lib/ingest/kineto) */                                                                     \
  F(instant_events, info, kineto, "", "instant events (memory, markers): not simulated")                               \
  F(unsupported_phase, data_loss, kineto, "<ph>", "events of a phase daydream does not read (only X, s/f, M, i)")      \
  F(unknown_category, info, kineto, "<cat>",                                                                           \
    "complete events of a category daydream does not model: kept out of the graph")                                    \
  F(flow_without_id_or_ts, info, kineto, "", "flow events lacking id or ts: ignored")                                  \
  F(malformed_input_shapes, error, kineto, "",                                                                         \
    "operators whose \"Input Dims\" or \"Input type\" are malformed (not lists of lists of non-negative "              \
    "integers, or not one type per shape): their shapes are dropped; the GPU model classes their kernels "             \
    "by name")                                                                                                         \
  /* the Nsight Systems reader (lib/ingest/nsys) */                                                                    \
  F(nsys_null_field, data_loss, nsys, "<table>.<column>",                                                              \
    "rows with NULL in a column daydream needs (time, thread, device, stream, name): skipped")                         \
  F(nsys_end_before_start, data_loss, nsys, "<table>", "rows that end before they start: skipped")                     \
  F(nsys_unknown_string_id, error, nsys, "<table>.<column>",                                                           \
    "ids that StringIds does not hold: the event is kept, named \"<string N>\"")                                       \
  F(nsys_cuda_backtrace_rows, info, nsys, "",                                                                          \
    "API rows of class TRACE_PROCESS_EVENT_CUDABACKTRACE (--cudabacktrace): a second record, with a call "             \
    "stack, of a call already recorded: skipped")                                                                      \
  F(nsys_unknown_event_class, info, nsys, "<eventClass>",                                                              \
    "API rows of an event class daydream does not know: read as CUDA calls")                                           \
  F(nvtx_other_events, info, nsys, "<eventType>",                                                                      \
    "NVTX events other than push/pop (59) and start/end (60) ranges, such as marks (34), thread names "                \
    "(39) and domains (75): not simulated")                                                                            \
  F(nvtx_range_without_end, data_loss, nsys, "",                                                                       \
    "NVTX ranges with no end (still open when profiling stopped): skipped")                                            \
  F(nvtx_range_end_before_start, data_loss, nsys, "", "NVTX ranges that end before they start: skipped")               \
  F(nvtx_range_ends_on_other_thread, info, nsys, "",                                                                   \
    "NVTX start/end ranges ended on another thread: kept on the thread that started them")                             \
  F(nvtx_range_without_text, info, nsys, "", "NVTX ranges with no message: named \"(unnamed NVTX range)\"")            \
  F(nvtx_operator_ranges, info, nsys, "",                                                                              \
    "NVTX ranges that PyTorch's emit_nvtx wrote around an operator (\"aten::addmm, seq = 12, op_id = 40, "             \
    "sizes = [[8, 512], ...]\", or a bare \"aten::\" name): read as framework operators, named without the "        \
    "fields, with their sequence number and inputs' sizes")                                                            \
  F(nvtx_malformed_sizes, error, nsys, "",                                                                             \
    "operator ranges whose \"sizes = [...]\" is not a list of lists of non-negative integers: their sizes "          \
    "are dropped; the GPU model classes their kernels by name")                                                       \
  F(nsys_processes_share_device, error, nsys, "",                                                                      \
    "GPU activity of several processes on one device: lanes are (device, stream), so equal stream ids of "             \
    "different processes share a lane")                                                                                \
  F(cuda_sync_event_record_unknown, info, nsys, "",                                                                    \
    "event syncs and stream waits whose cudaEventRecord is not in CUPTI_ACTIVITY_KIND_CUDA_EVENT: the "                \
    "graph infers the event's stream")                                                                                 \
  F(cuda_sync_type_mismatch, info, nsys, "",                                                                           \
    "synchronization records whose type disagrees with their API call (e.g. \"Event Sync\" on "                        \
    "cudaDeviceSynchronize): kept as recorded; the graph goes by the call")                                            \
  /* every reader, and the clock alignment after reading (lib/ingest) */                                               \
  F(zero_duration_events, info, ingest, "", "events with dur 0: kept, take no time")                                   \
  F(gpu_clock_aligned, error, ingest, "device <N>",                                                                    \
    "the device's GPU timestamps were {offset} ms away from the CPU's (launches started before their calls, "          \
    "or blocking copies ended after their calls returned): its GPU events were shifted by that offset")                \
  /* the graph builder (lib/graph) */                                                                                  \
  F(cycle_edges_dropped, error, graph, "", "edges removed to break a cycle the rules closed (first: {edge})")          \
  F(event_inside_api_call, info, graph, "", "events nested in a CUDA API call: folded into that call's task")          \
  F(overlapping_cpu_events, info, graph, "",                                                                           \
    "CPU events ending after their enclosing event: cut at the enclosing event's end")                                 \
  F(layers_from_forward_ops, info, graph, "",                                                                          \
    "backward tasks given the layer of their forward operator (same autograd sequence number)")                        \
  F(background_threads, info, graph, "",                                                                               \
    "CPU threads with CUDA calls but no operators and no launches (e.g. NCCL watchdog): no cross_thread "              \
    "edges")                                                                                                           \
  F(waits_inside_cpu_ranges, info, graph, "",                                                                          \
    "long CPU segments taken as waits for another thread (cross_thread edge; duration = time after the "               \
    "waker ended)")                                                                                                    \
  F(cross_thread_contradicted, info, graph, "",                                                                        \
    "long CPU segments whose latest candidate waker on another thread ended after the segment: no "                    \
    "cross_thread edge")                                                                                               \
  F(wakers_by_handoff, info, graph, "",                                                                                \
    "resumptions whose waker is a hand-off (a task after which its thread went idle) that ended less than "            \
    "thread_idle_ns before a busy thread's later task: the hand-off is taken (cross_thread edge)")                     \
  F(unexplained_gaps, info, graph, "",                                                                                 \
    "idle stretches longer than thread_idle_ns with no waker in the trace and no scheduling data: CPU "                \
    "work or a wait for something not traced, kept as delays")                                                         \
  F(unexplained_waits, info, graph, "",                                                                                \
    "stretches in which a thread was switched out (blocked) with no waker in the trace (another process, "             \
    "I/O, a timer): kept as delays; total = off-CPU time")                                                             \
  F(no_launch_latency_samples, info, graph, "",                                                                        \
    "no GPU task was launched onto an idle stream: launch latency taken as 0")                                         \
  F(gpu_task_without_launch, info, graph, "",                                                                          \
    "GPU tasks whose launch call is not in the trace (launched before profiling began): they start at "                \
    "their recorded time or after their stream predecessor")                                                           \
  F(gpu_start_before_launch, error, graph, "",                                                                         \
    "GPU tasks recorded as starting before their launch call (clock skew): launch delay set to 0")                     \
  F(overlapping_gpu_tasks, error, graph, "",                                                                           \
    "GPU tasks starting before the previous task on their stream ended: simulated one after the other")                \
  F(gpu_holds_by_occupancy, info, graph, "",                                                                           \
    "SM work held back on its stream by a kernel of another stream that filled the GPU (launch "                       \
    "configurations): simulated by the occupancy model; total = time held while that kernel ran")                      \
  F(gpu_holds_kept, info, graph, "",                                                                                   \
    "SM work held back on its stream while a kernel of another stream ran, in a trace without launch "                 \
    "configurations (the occupancy model cannot tell whether it filled the GPU): the recorded hold is "                \
    "kept as a delay; total = held time")                                                                              \
  F(gpu_holds_unexplained, info, graph, "",                                                                            \
    "GPU tasks that started long after their launch while the whole device was idle (nothing in the "                  \
    "trace held them): the recorded launch delay is kept")                                                             \
  F(launches_without_gpu_record, data_loss, graph, "",                                                                 \
    "launch and copy calls whose GPU activity is not in the trace (records dropped or not flushed): the "              \
    "GPU work they started is missing from the graph")                                                                 \
  F(iteration_pattern_unmatched, error, graph, "",                                                                     \
    "the --iterations pattern names no CPU range of the trace: no iterations")                                         \
  F(driver_lock_waits, info, graph, "",                                                                                \
    "long CUDA calls that returned right after a long call of another thread of the process (the driver "              \
    "serialises them): they wait for that call's end in the simulation when its thread reached it first")              \
  F(launch_queue_waits, info, graph, "",                                                                               \
    "launch calls that waited for a slot in the full GPU launch queue: sync edge from the GPU task whose "             \
    "end freed it")                                                                                                    \
  F(copy_without_record_waits, info, graph, "",                                                                        \
    "copy calls without a copy record that lasted as long as a wait: sync edge from the last work "                    \
    "launched on the thread's stream before them (inferred)")                                                          \
  F(pageable_copy_staging_waits, info, graph, "",                                                                      \
    "pageable copy calls that returned right after an earlier pageable copy ended (the driver waits for "              \
    "its staging buffer): sync edge from that copy")                                                                   \
  F(event_syncs_from_timing, info, graph, "",                                                                          \
    "cudaEventSynchronize calls whose event record is unknown, resolved by timing: the call waited and "               \
    "returned right after recorded GPU work of its device ended (inferred sync edge)")                                 \
  F(event_sync_unresolved, info, graph, "",                                                                            \
    "cudaEventSynchronize calls whose event could not be traced to a stream: no edge")                                 \
  F(sync_stream_inferred, info, graph, "",                                                                             \
    "sync calls whose stream or event was inferred from the thread's launches")                                        \
  F(inferred_sync_contradicted, info, graph, "",                                                                       \
    "blocking calls that returned before the GPU work they wait for ended (wrong inference or clock "                  \
    "skew): no sync edge")                                                                                             \
  F(sync_returned_before_gpu_end, error, graph, "",                                                                    \
    "blocking calls that returned before the GPU work they wait for ended (wrong inference or clock "                  \
    "skew): no sync edge")                                                                                             \
  F(stream_waits_from_timing, info, graph, "",                                                                         \
    "cudaStreamWaitEvent calls whose event record is unknown, resolved by timing: the held task started "              \
    "within one launch latency after a task on another stream ended (inferred cross_stream edge)")                     \
  F(cross_stream_contradicted, info, graph, "",                                                                        \
    "stream waits whose waiting task started before the awaited task ended: no edge")

/// The stats, by name: `stats::cycle_edges_dropped`. Unscoped, as Perfetto's stats::KeyIDs, so
/// that call sites read `report.count(stats::instant_events, event)`.
enum Id : std::uint16_t {
#define DAYDREAM_STAT_ID(id, severity, stage, suffix, description) id,
  DAYDREAM_IMPORT_STATS(DAYDREAM_STAT_ID)
#undef DAYDREAM_STAT_ID
};

#define DAYDREAM_STAT_ONE(id, severity, stage, suffix, description) +1
inline constexpr std::size_t kNumStats = 0 DAYDREAM_IMPORT_STATS(DAYDREAM_STAT_ONE);
#undef DAYDREAM_STAT_ONE

/// One row of the catalogue.
struct Stat {
  Id id;
  std::string_view key;     ///< the counter's key; a keyed stat's prefix
  Severity severity;
  Stage stage;
  std::string_view suffix;  ///< keyed stats: what follows "<key>:" ("<ph>"); empty otherwise
  std::string_view description;  ///< meaning and what daydream did; may hold one "{name}" slot

  bool keyed() const { return !suffix.empty(); }
  /// Whether the description has a slot for a detail text.
  bool detailed() const { return description.find('{') != std::string_view::npos; }
  /// The key the report counts under: `key`, or "<key>:<suffix>" for a keyed stat.
  std::string counter_key(std::string_view suffix_value) const;
  /// The description with its slot, if any, replaced by `detail`.
  std::string describe(std::string_view detail) const;
  /// "unsupported_phase:<ph>" for a keyed stat, the key otherwise: how docs and listings name it.
  std::string pattern() const;
};

/// Every stat, in id order (`catalogue()[id].id == id`).
const std::array<Stat, kNumStats>& catalogue();
inline const Stat& stat(Id id) { return catalogue()[id]; }

/// The text that fills the slot of a detailed stat's description; a type of its own so that it
/// cannot be taken for a keyed stat's suffix.
struct Detail {
  std::string_view text;
};

}  // namespace stats
}  // namespace daydream
