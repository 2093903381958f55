// The CUPTI collector's core, without a GPU: synthetic activity records (what the CUPTI backend
// converts CUpti_Activity* records into) go through the Recorder and the Kineto-JSON writer, and
// daydream's own importer, graph builder and simulator must read back exactly the timeline the
// records describe. The start/stop session runs against a fake ActivitySource.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <variant>

#include "common/json_string.hpp"
#include "cupti/chrome_trace.hpp"
#include "cupti/collector_session.hpp"
#include "cupti/names.hpp"
#include "cupti/recorder.hpp"
#include "daydream/collector.hpp"
#include "daydream/error.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/simulate.hpp"
#include "unit/graph_helpers.hpp"

using namespace daydream;
using namespace daydream::cupti;
using test::edge_between;
using test::task_named;
using test::us;

namespace {

// CUPTI timestamps are epoch-scale nanoseconds; the traces below are written relative to this.
constexpr TimeNs kT0 = 1'700'000'000'000'000'000;
constexpr TimeNs at(double micros) { return kT0 + static_cast<TimeNs>(micros * 1000); }
constexpr std::uint32_t kPid = 4242, kTid = 4243, kContext = 1;

ApiRecord runtime(std::string_view name, double start, double end, std::uint32_t correlation) {
  ApiRecord r;
  r.name = name;
  r.domain = ApiDomain::runtime;
  r.cbid = 211;
  r.start_ns = at(start);
  r.end_ns = at(end);
  r.process_id = kPid;
  r.thread_id = kTid;
  r.correlation = correlation;
  return r;
}

KernelRecord kernel(std::string_view name, double start, double end, std::uint32_t correlation, std::uint32_t stream) {
  KernelRecord k;
  k.name = name;
  k.start_ns = at(start);
  k.end_ns = at(end);
  k.device = 0;
  k.context = kContext;
  k.stream = stream;
  k.correlation = correlation;
  k.grid[0] = 80, k.grid[1] = 1, k.grid[2] = 1;
  k.block[0] = 256, k.block[1] = 1, k.block[2] = 1;
  k.registers_per_thread = 32;
  return k;
}

MarkerRecord marker(std::uint32_t flags, double time, std::uint32_t id, std::string_view name = {}) {
  MarkerRecord m;
  m.flags = flags;
  m.timestamp_ns = at(time);
  m.id = id;
  m.process_id = kPid;
  m.thread_id = kTid;
  m.name = name;
  return m;
}

/// One training step as CUPTI would report it, in the order buffers might deliver it (GPU records
/// interleaved with API records, an NVTX end before its start's buffer is read).
void record_training_step(Recorder& r) {
  r.add(DeviceRecord{0, "Test GPU", 80ull << 30, 9, 0, 132});
  r.add(ContextRecord{kContext, 0});
  r.add(marker(marker_start, 0, 1, "ProfilerStep#1"));
  r.add(marker(marker_start, 5, 2, "forward"));
  r.add(runtime("cudaLaunchKernel", 10, 14, 1));
  ApiRecord driver = runtime("cuLaunchKernel", 11, 13, 1);  // nested in the runtime call, same id
  driver.domain = ApiDomain::driver;
  driver.cbid = 307;
  r.add(driver);
  r.add(kernel("_Z5k_fwdPfi", 15, 45, 1, 7));  // demangled to k_fwd(float*, int)
  r.add(runtime("cudaLaunchKernel", 20, 24, 2));
  r.add(runtime("cudaLaunchKernel", 30, 34, 3));
  r.add(kernel("k_side", 25, 55, 2, 13));
  r.add(kernel("k_long", 46, 120, 3, 7));  // queued behind k_fwd on stream 7
  r.add(marker(marker_end, 60, 2));
  r.add(runtime("cudaMemcpyAsync", 70, 100, 4));
  MemcpyRecord copy;
  copy.start_ns = at(75);
  copy.end_ns = at(95);
  copy.bytes = 4096;
  copy.context = kContext;
  copy.stream = 13;
  copy.correlation = 104;  // the driver call's id; the runtime call's id is preferred
  copy.runtime_correlation = 4;
  copy.copy_kind = MemcpyKind::dtoh;
  copy.src_kind = MemoryKind::device;
  copy.dst_kind = MemoryKind::pageable;
  r.add(copy);
  r.add(runtime("cudaStreamSynchronize", 105, 122, 5));
  SyncRecord sync;
  sync.type = SyncType::stream_synchronize;
  sync.start_ns = at(105);
  sync.end_ns = at(122);
  sync.correlation = 5;
  sync.context = kContext;
  sync.stream = 7;
  r.add(sync);
  r.add(marker(marker_start, 140, 3, "optimizer"));  // nvtxRangeStart/End
  r.add(runtime("cudaMemsetAsync", 150, 154, 6));
  MemsetRecord memset;
  memset.start_ns = at(155);
  memset.end_ns = at(157);
  memset.bytes = 256;
  memset.context = kContext;
  memset.stream = 7;
  memset.correlation = 6;
  r.add(memset);
  r.add(marker(marker_instantaneous, 180, 4, "checkpoint"));
  r.add(marker(marker_end, 190, 3));
  r.add(marker(marker_end, 200.5, 1));
}

std::string to_json(const Batch& batch) {
  std::ostringstream out;
  write_chrome_trace(batch, {"test", kPid}, out);
  return out.str();
}

std::string step_json() {
  Recorder r;
  record_training_step(r);
  return to_json(r.take(true));
}

const TraceEvent& event_named(const Trace& trace, std::string_view name, int occurrence = 0) {
  for (const auto& e : trace.events)
    if (trace.name_of(e) == name && occurrence-- == 0) return e;
  FAIL("no event named " << name);
  return trace.events.front();
}

/// Delivers queued records to the recorder when flushed, like CUPTI's buffers.
class FakeSource final : public ActivitySource {
 public:
  using Record = std::variant<ApiRecord, KernelRecord, MarkerRecord>;
  std::deque<Record> pending;
  Recorder* recorder = nullptr;
  TimeNs now = 0;
  int enables = 0, disables = 0, flushes = 0, forced_flushes = 0;
  bool refuse = false;

  Outcome enable() override {
    if (refuse) return Outcome::failure("CUPTI could not enable kernel and runtime API recording: test");
    ++enables;
    return {};
  }
  void disable() override { ++disables; }
  void flush(bool forced) override {
    ++(forced ? forced_flushes : flushes);
    for (const Record& record : pending) std::visit([&](const auto& r) { recorder->add(r); }, record);
    pending.clear();
  }
  TimeNs now_ns() override { return now; }
};

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("daydream_collector_" + std::to_string(getpid()) + "_" + name);
}

}  // namespace

TEST_CASE("collector names: API names, copies, syncs, demangling, times and JSON text", "[collector]") {
  CHECK(normalize_api_name("cudaLaunchKernel_v7000") == "cudaLaunchKernel");
  CHECK(normalize_api_name("cudaStreamSynchronize_v3020") == "cudaStreamSynchronize");
  CHECK(normalize_api_name("cudaLaunchKernel_ptsz_v7000") == "cudaLaunchKernel_ptsz");
  CHECK(normalize_api_name("cuMemcpyDtoH_v2") == "cuMemcpyDtoH_v2");  // a real driver function name
  CHECK(normalize_api_name("cuLaunchKernel") == "cuLaunchKernel");
  CHECK(memcpy_name(MemcpyKind::dtoh, MemoryKind::device, MemoryKind::pageable) == "Memcpy DtoH (Device -> Pageable)");
  CHECK(memcpy_name(MemcpyKind::htod, MemoryKind::pinned, MemoryKind::device) == "Memcpy HtoD (Pinned -> Device)");
  CHECK(memset_name(MemoryKind::device) == "Memset (Device)");
  CHECK(sync_kind_name(SyncType::stream_wait_event) == "Stream Wait Event");
  CHECK(sync_kind_name(SyncType::context_synchronize) == "Context Sync");
  CHECK(demangle("_Z5k_fwdPfi") == "k_fwd(float*, int)");
  CHECK(demangle("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  CHECK(demangle("_Znot_valid") == "_Znot_valid");
  CHECK(format_us(kT0 + 123) == "1700000000000000.123");
  CHECK(format_us(5) == "0.005");
  CHECK(format_us(-1500) == "-1.500");
  CHECK(json::quoted("a\"b\\c\n\x01") == R"("a\"b\\c\n\u0001")");
  CHECK(json::quoted("caf\xc3\xa9") == "\"caf\xc3\xa9\"");                   // valid UTF-8 kept
  CHECK(json::quoted("bad\xff\xc3") == "\"bad\xef\xbf\xbd\xef\xbf\xbd\"");  // invalid bytes: U+FFFD
}

TEST_CASE("synthetic CUPTI records become exactly the Kineto events daydream reads", "[collector]") {
  const std::string json = step_json();
  const Trace trace = parse_kineto_json(json, "collector.json");
  CHECK(trace.metadata.format == "kineto-json");
  REQUIRE(trace.metadata.devices == std::vector<std::string>{"Test GPU"});
  CHECK(trace.report.get("instant_events") == 1);  // the nvtxMark
  CHECK(trace.report.get("unknown_category:(none)") == 0);

  std::map<EventKind, int> kinds;
  for (const auto& e : trace.events) ++kinds[e.kind];
  CHECK(kinds[EventKind::runtime] == 6);
  CHECK(kinds[EventKind::driver] == 1);
  CHECK(kinds[EventKind::kernel] == 3);
  CHECK(kinds[EventKind::memcpy] == 1);
  CHECK(kinds[EventKind::memset] == 1);
  CHECK(kinds[EventKind::cuda_sync] == 1);
  CHECK(kinds[EventKind::user_annotation] == 3);
  CHECK(trace.events.size() == 16);

  const TraceEvent& step = event_named(trace, "ProfilerStep#1");
  CHECK(step.kind == EventKind::user_annotation);
  CHECK(step.start_ns == kT0);
  CHECK(step.duration_ns == 200'500);  // 200.500 us, exact to the ns at epoch scale
  CHECK(trace.lanes[step.lane].kind == LaneKind::cpu_thread);
  CHECK(trace.lanes[step.lane].process == kPid);
  CHECK(trace.lanes[step.lane].thread == kTid);
  CHECK(event_named(trace, "optimizer").duration_ns == 50 * us);

  const TraceEvent& launch = event_named(trace, "cudaLaunchKernel");
  CHECK(launch.correlation == 1);
  CHECK(launch.start_ns == at(10));
  CHECK(launch.duration_ns == 4 * us);
  CHECK(event_named(trace, "cuLaunchKernel").kind == EventKind::driver);

  const TraceEvent& fwd = event_named(trace, "k_fwd(float*, int)");
  CHECK(fwd.kind == EventKind::kernel);
  CHECK(fwd.correlation == 1);
  CHECK(fwd.start_ns == at(15));
  CHECK(fwd.duration_ns == 30 * us);
  CHECK(trace.lanes[fwd.lane].kind == LaneKind::gpu_stream);
  CHECK(trace.lanes[fwd.lane].process == 0);
  CHECK(trace.lanes[fwd.lane].thread == 7);
  CHECK(trace.lanes[event_named(trace, "k_side").lane].thread == 13);

  const TraceEvent& copy = event_named(trace, "Memcpy DtoH (Device -> Pageable)");
  CHECK(copy.correlation == 4);  // the runtime call's id, not the driver's 104
  CHECK(copy.bytes == 4096);
  CHECK(trace.lanes[copy.lane].thread == 13);
  CHECK(event_named(trace, "Memset (Device)").bytes == 256);

  const TraceEvent& sync = event_named(trace, "Stream Sync");
  CHECK(sync.kind == EventKind::cuda_sync);
  CHECK(sync.sync_kind == SyncKind::stream_sync);
  CHECK(sync.sync_stream == 7);
  CHECK(sync.correlation == 5);
  CHECK(trace.lanes[sync.lane].process == 0);  // device from the context record

  // Launch flows for Perfetto: one start/finish pair per GPU activity.
  CHECK(trace.flows.size() == 2 * 5);
  CHECK(json.find("\"daydream_collector\": {\"version\": \"test\"") != std::string::npos);
  CHECK(json.find("\"grid\": [80, 1, 1]") != std::string::npos);
}

TEST_CASE("a collector trace builds the expected graph and replays its own timeline", "[collector]") {
  const Graph g = build_graph(parse_kineto_json(step_json(), "collector.json"));
  const TaskId launch = task_named(g, "cudaLaunchKernel"), fwd = task_named(g, "k_fwd(float*, int)");
  const TaskId side = task_named(g, "k_side"), long_kernel = task_named(g, "k_long");
  const TaskId copy = task_named(g, "Memcpy DtoH (Device -> Pageable)");
  const TaskId copy_wait = task_named(g, "cudaMemcpyAsync (wait)");
  const TaskId stream_sync = task_named(g, "cudaStreamSynchronize"), memset = task_named(g, "Memset (Device)");

  CHECK(g.task_counts()[static_cast<std::size_t>(TaskKind::kernel)] == 3);
  CHECK(g.report().get("event_inside_api_call") == 1);  // cuLaunchKernel folded into cudaLaunchKernel
  CHECK(g.calibration().launch_latency_ns[static_cast<std::size_t>(TaskKind::kernel)] == 5 * us);
  CHECK(g.calibration().gpu_gap_ns == 1 * us);

  const auto launch_edge = edge_between(g, launch, fwd);
  REQUIRE(launch_edge);
  CHECK(launch_edge->type == EdgeType::launch);
  CHECK(launch_edge->timing == Timing::start_to_start);
  CHECK(launch_edge->delay_ns == 5 * us);
  CHECK(edge_between(g, task_named(g, "cudaLaunchKernel", 1), side)->type == EdgeType::launch);
  CHECK(edge_between(g, task_named(g, "cudaLaunchKernel", 2), long_kernel)->type == EdgeType::launch);
  CHECK(edge_between(g, fwd, long_kernel)->type == EdgeType::gpu_sequential);
  CHECK(edge_between(g, task_named(g, "cudaMemcpyAsync"), copy)->type == EdgeType::launch);
  CHECK(edge_between(g, task_named(g, "cudaMemsetAsync"), memset)->type == EdgeType::launch);
  CHECK(test::count_of(g, EdgeType::launch) == 5);

  // The pageable copy blocks its call; the recorded Stream Sync names stream 7 (not inferred).
  const auto copy_edge = edge_between(g, copy, copy_wait);
  REQUIRE(copy_edge);
  CHECK(copy_edge->type == EdgeType::sync);
  const auto sync_edge = edge_between(g, long_kernel, stream_sync);
  REQUIRE(sync_edge);
  CHECK(sync_edge->type == EdgeType::sync);
  CHECK_FALSE(sync_edge->inferred);
  CHECK(g.report().get("sync_stream_inferred") == 0);
  CHECK(test::count_of(g, EdgeType::sync) == 2);
  CHECK(g.task(stream_sync).duration_ns == 2 * us);  // returns 2 us after k_long ends

  REQUIRE(g.iterations().size() == 1);
  CHECK(g.iterations()[0].name == "ProfilerStep#1");
  CHECK(g.iterations()[0].measured_ns == 200'500);

  // Replay: every GPU task starts when the records say, and the step takes its measured time.
  const SimulationResult r = simulate(g);
  CHECK(r.start_ns[fwd] == 15 * us);
  CHECK(r.start_ns[side] == 25 * us);
  CHECK(r.start_ns[long_kernel] == 46 * us);
  CHECK(r.start_ns[copy] == 75 * us);
  CHECK(r.end_ns[copy_wait] == 100 * us);
  CHECK(r.end_ns[stream_sync] == 122 * us);
  CHECK(r.start_ns[memset] == 155 * us);
  const ReplayReport report = make_replay_report(g, r);
  REQUIRE(report.iterations.size() == 1);
  CHECK(report.iterations[0].simulated_ns == report.iterations[0].measured_ns);
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    if (!is_gpu(g.task(t).kind)) continue;
    CAPTURE(g.name(t));
    CHECK(r.start_ns[t] == g.task(t).recorded_start_ns);
  }
}

TEST_CASE("event waits carry the awaited cudaEventRecord and give a cross_stream edge", "[collector]") {
  // CUDA 13's CUPTI joins them by cudaEventSyncId; CUDA 12's has only the event id (reused
  // events: the last record called before the wait counts).
  const bool sync_ids = GENERATE(true, false);
  CAPTURE(sync_ids);
  Recorder r;
  r.add(ContextRecord{kContext, 0});
  r.add(runtime("cudaLaunchKernel", 0, 5, 1));
  r.add(kernel("producer", 10, 50, 1, 20));
  r.add(runtime("cudaEventRecord", 6, 7, 2));
  r.add(CudaEventRecord{2, kContext, 20, 0, 9, sync_ids ? 777u : 0u});
  r.add(runtime("cudaStreamWaitEvent", 8, 9, 3));
  SyncRecord wait;
  wait.type = SyncType::stream_wait_event;
  wait.start_ns = at(8);
  wait.end_ns = at(9);
  wait.correlation = 3;
  wait.context = kContext;
  wait.stream = 24;
  wait.cuda_event = 9;
  wait.cuda_event_sync_id = sync_ids ? 777 : 0;
  r.add(wait);
  r.add(runtime("cudaLaunchKernel", 10, 12, 4));
  r.add(kernel("consumer", 51, 60, 4, 24));
  r.add(runtime("cudaEventRecord", 61, 62, 5));  // the same event recorded again, after the wait
  r.add(CudaEventRecord{5, kContext, 30, 0, 9, sync_ids ? 778u : 0u});
  const Trace trace = parse_kineto_json(to_json(r.take(true)), "wait.json");
  const TraceEvent& sync = event_named(trace, "Stream Wait Event");
  CHECK(sync.sync_kind == SyncKind::stream_wait_event);
  CHECK(sync.sync_stream == 24);
  CHECK(sync.wait_on_stream == 20);
  CHECK(sync.wait_record_correlation == 2);
  const Graph g = build_graph(trace);
  const auto edge = edge_between(g, task_named(g, "producer"), task_named(g, "consumer"));
  REQUIRE(edge);
  CHECK(edge->type == EdgeType::cross_stream);
  CHECK_FALSE(edge->inferred);
}

TEST_CASE("NVTX markers pair across batches, unmatched ones are counted", "[collector]") {
  Recorder r;
  r.add(marker(marker_start, 0, 1, "outer"));
  r.add(marker(marker_end, 30, 9));  // its start arrives in a later buffer
  Batch first = r.take(false);
  CHECK(first.ranges.empty());
  r.add(marker(marker_start, 20, 9, "late"));
  r.add(marker(marker_end, 50, 1));
  r.add(marker(marker_start, 60, 5, "never ended"));
  Batch second = r.take(true);
  REQUIRE(second.ranges.size() == 2);
  CHECK(second.ranges[0].name == "outer");
  CHECK(second.ranges[0].end_ns == at(50));
  CHECK(second.ranges[1].name == "late");
  CHECK(second.ranges[1].end_ns == at(30));
  CHECK(second.counters.nvtx_unmatched_markers == 1);
}

TEST_CASE("start/stop windows keep only what they enclose, and a kernel goes with its launch", "[collector]") {
  FakeSource source;
  CollectorOptions options;
  options.start_mode = StartMode::manual;
  options.trace_path = temp_path("windows.json").string();
  Collector collector(source, options, {"test", kPid});
  source.recorder = &collector.recorder();
  REQUIRE(collector.begin().ok);
  CHECK(source.enables == 0);  // manual: CUPTI stays off until start()

  source.pending = {runtime("cudaLaunchKernel", 10, 14, 1), kernel("before", 15, 30, 1, 7),
                    marker(marker_start, 12, 1, "before_range"), marker(marker_end, 40, 1)};
  source.now = at(50);
  REQUIRE(collector.start().ok);
  CHECK(source.enables == 1);
  source.pending.insert(source.pending.end(),
                        {runtime("cudaLaunchKernel", 100, 104, 2), kernel("inside", 105, 300, 2, 7),
                         marker(marker_start, 60, 2, "inside_range"), marker(marker_end, 190, 2)});
  source.now = at(200);
  REQUIRE(collector.stop().ok);
  CHECK(source.disables == 1);
  source.pending.insert(source.pending.end(), {runtime("cudaLaunchKernel", 250, 254, 3), kernel("after", 255, 260, 3, 7)});

  const Outcome flushed = collector.flush("");
  REQUIRE(flushed.ok);
  CHECK(flushed.message == options.trace_path);
  const Trace trace = load_trace(flushed.message);
  std::vector<std::string> names;
  for (const auto& e : trace.events) names.emplace_back(trace.name_of(e));
  CHECK(names == std::vector<std::string>{"cudaLaunchKernel", "inside_range", "inside"});
  CHECK(event_named(trace, "inside").duration_ns == 195 * us);  // ran past stop(): kept with its launch
  CHECK(collector.recorder().counters().records_outside_windows == 5);
  std::ifstream file(flushed.message);
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"recording\": \"windows\", \"windows_us\": [[1700000000000050.000, 1700000000000200.000]]") !=
        std::string::npos);
  std::filesystem::remove(flushed.message);

  // Nothing new since the flush: nothing is written at exit.
  CHECK(collector.finish().message.empty());
  CHECK(source.forced_flushes == 1);
  CHECK_FALSE(std::filesystem::exists(options.trace_path));
}

TEST_CASE("immediate mode records the whole run, the first start() narrows it to windows", "[collector]") {
  for (bool narrow : {false, true}) {
    CAPTURE(narrow);
    FakeSource source;
    CollectorOptions options;
    options.trace_path = temp_path("immediate.json").string();
    Collector collector(source, options, {"test", kPid});
    source.recorder = &collector.recorder();
    REQUIRE(collector.begin().ok);
    CHECK(source.enables == 1);
    CHECK(collector.state() == Collector::State::recording);
    source.pending = {runtime("cudaLaunchKernel", 10, 14, 1), kernel("early", 15, 30, 1, 7)};
    source.now = at(40);
    if (narrow) REQUIRE(collector.start().ok);
    source.pending.insert(source.pending.end(), {runtime("cudaLaunchKernel", 50, 54, 2), kernel("late", 55, 60, 2, 7)});
    const Outcome written = collector.finish();  // at exit
    REQUIRE(written.ok);
    CHECK(written.message == options.trace_path);
    const Trace trace = load_trace(written.message);
    CHECK(trace.events.size() == (narrow ? 2u : 4u));
    CHECK(event_named(trace, "late").start_ns == at(55));
    CHECK(source.disables == 0);  // immediate mode never turns CUPTI off
    std::filesystem::remove(written.message);
    CHECK(collector.state() == Collector::State::finished);
    CHECK_FALSE(collector.start().ok);
  }
}

TEST_CASE("session errors are answers, not exceptions", "[collector]") {
  FakeSource source;
  CollectorOptions options;
  options.start_mode = StartMode::manual;
  options.trace_path = temp_path("errors.json").string();
  Collector collector(source, options, {"test", kPid});
  source.recorder = &collector.recorder();
  REQUIRE(collector.begin().ok);
  Outcome stop = collector.stop();
  CHECK_FALSE(stop.ok);
  CHECK(stop.message == "stop(): not recording; call start() first");
  REQUIRE(collector.start().ok);
  Outcome again = collector.start();
  CHECK_FALSE(again.ok);
  CHECK(again.message == "start(): already recording; call stop() first");
  REQUIRE(collector.stop().ok);

  source.refuse = true;  // CUPTI unusable (no GPU, another profiler holds it)
  Outcome refused = collector.start();
  CHECK_FALSE(refused.ok);
  CHECK(refused.message.find("could not enable") != std::string::npos);
  CHECK(collector.state() == Collector::State::idle);

  Outcome unwritable = collector.flush("/nonexistent-dir/trace.json");
  CHECK_FALSE(unwritable.ok);
  CHECK(unwritable.message.find("cannot write the trace file '/nonexistent-dir/trace.json'") == 0);
  CHECK(collector.finish().message.empty());  // nothing was ever recorded: no file at exit
  CHECK_FALSE(std::filesystem::exists(options.trace_path));
}

TEST_CASE("collector options come from DAYDREAM_* environment variables", "[collector]") {
  std::map<std::string, std::string> env;
  auto lookup = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  std::vector<std::string> warnings;
  CollectorOptions defaults = options_from_environment(lookup, 77, &warnings);
  CHECK(defaults.trace_path == "daydream_trace_77.json");
  CHECK(defaults.start_mode == StartMode::immediate);
  CHECK(defaults.driver_api);
  CHECK(defaults.nvtx);
  CHECK(defaults.buffer_bytes == 8u << 20);
  CHECK(warnings.empty());

  env = {{"DAYDREAM_TRACE_FILE", "/tmp/rank_{pid}.json"}, {"DAYDREAM_COLLECTOR_START", "manual"},
         {"DAYDREAM_COLLECTOR_DRIVER", "0"}, {"DAYDREAM_COLLECTOR_NVTX", "off"}, {"DAYDREAM_COLLECTOR_BUFFER_MB", "32"}};
  CollectorOptions set = options_from_environment(lookup, 77, &warnings);
  CHECK(set.trace_path == "/tmp/rank_77.json");
  CHECK(set.start_mode == StartMode::manual);
  CHECK_FALSE(set.driver_api);
  CHECK_FALSE(set.nvtx);
  CHECK(set.buffer_bytes == 32u << 20);
  CHECK(warnings.empty());

  env = {{"DAYDREAM_COLLECTOR_START", "later"}, {"DAYDREAM_COLLECTOR_BUFFER_MB", "0"}, {"DAYDREAM_COLLECTOR_NVTX", "maybe"}};
  CollectorOptions bad = options_from_environment(lookup, 77, &warnings);
  CHECK(bad.start_mode == StartMode::immediate);
  CHECK(bad.buffer_bytes == 8u << 20);
  CHECK(bad.nvtx);
  CHECK(warnings.size() == 3);
}

TEST_CASE("daydream::collector without the injected library says how to inject it", "[collector]") {
  CHECK_FALSE(collector::available());
  for (const std::function<void()>& call : std::vector<std::function<void()>>{
           [] { collector::start(); }, [] { collector::stop(); }, [] { collector::flush("x.json"); }}) {
    try {
      call();
      FAIL("expected daydream::Error");
    } catch (const Error& e) {
      const std::string message = e.what();
      CHECK(message.find("libdaydream_cupti.so is not loaded in this process") != std::string::npos);
      CHECK(message.find("CUDA_INJECTION64_PATH=") != std::string::npos);
    }
  }
}
