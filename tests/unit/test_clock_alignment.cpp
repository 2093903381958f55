// GPU clock alignment (lib/ingest/clock_alignment.cpp): a device whose GPU timestamps contradict
// its launches and blocking copies is shifted by the offset causality bounds; an aligned one is
// left as it is. Traces built in memory, one device per case; and load_trace() applying it.
#include <catch2/catch.hpp>

#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "daydream/ingest.hpp"
#include "ingest/clock_alignment.hpp"
#include "unit/trace_builder.hpp"

using namespace daydream;

namespace {

constexpr TimeNs ms = 1'000'000;
constexpr TimeNs us = 1'000;

// A trace with one CPU thread; GPU lanes are added per device (stream 7).
class TraceMaker {
 public:
  TraceMaker() {
    trace_.strings.push_back("");
    trace_.lanes.push_back({LaneKind::cpu_thread, 100, 1, "thread 1"});
  }

  /// An API call on the thread and the GPU activity it launched on `device`, times in ns.
  TraceMaker& launch(std::string call, TimeNs call_start, TimeNs call_duration, EventKind kind, std::string activity,
                     std::int64_t device, TimeNs gpu_start, TimeNs gpu_duration) {
    const std::int64_t correlation = next_correlation_++;
    add(EventKind::runtime, call, call_start, call_duration, 0, correlation);
    add(kind, activity, gpu_start, gpu_duration, gpu_lane(device), correlation);
    return *this;
  }
  /// A synchronization record on the device's stream (CPU-clock times: never shifted).
  TraceMaker& sync_record(std::int64_t device, TimeNs start) {
    add(EventKind::cuda_sync, "Stream Sync", start, 10 * us, gpu_lane(device), 9999);
    return *this;
  }
  Trace& trace() { return trace_; }

 private:
  std::uint32_t gpu_lane(std::int64_t device) {
    for (std::uint32_t l = 0; l < trace_.lanes.size(); ++l)
      if (trace_.lanes[l].kind == LaneKind::gpu_stream && trace_.lanes[l].process == device) return l;
    trace_.lanes.push_back({LaneKind::gpu_stream, device, 7, "GPU " + std::to_string(device) + " stream 7"});
    return static_cast<std::uint32_t>(trace_.lanes.size() - 1);
  }
  void add(EventKind kind, const std::string& name, TimeNs start, TimeNs duration, std::uint32_t lane,
           std::int64_t correlation) {
    TraceEvent e;
    e.kind = kind;
    e.start_ns = start;
    e.duration_ns = duration;
    e.lane = lane;
    e.correlation = correlation;
    e.name = static_cast<std::uint32_t>(trace_.strings.size());
    e.source_index = static_cast<std::uint32_t>(trace_.events.size());
    trace_.strings.push_back(name);
    trace_.events.push_back(e);
  }

  Trace trace_;
  std::int64_t next_correlation_ = 1;
};

const TraceEvent& event_named(const Trace& trace, std::string_view name) {
  const auto it = std::find_if(trace.events.begin(), trace.events.end(),
                               [&](const TraceEvent& e) { return trace.name_of(e) == name; });
  REQUIRE(it != trace.events.end());
  return *it;
}

const ImportStat* stat_named(const Trace& trace, std::string_view key) {
  for (const auto& s : trace.report.stats())
    if (s.key == key) return &s;
  return nullptr;
}

}  // namespace

TEST_CASE("clock alignment: a device 100 ms behind is shifted by the middle of its bounds", "[ingest][clock]") {
  // Device 0's clock reads 100 ms less than the CPU's. The kernel really started 10 us after its
  // call (hi = -99.99 ms); the pageable copy really ended 10 us before its call returned
  // (lo = -100.01 ms). The middle of [lo, hi] is the true offset.
  TraceMaker m;
  m.launch("cudaLaunchKernel", 1 * ms, 5 * us, EventKind::kernel, "k", 0, 1 * ms + 10 * us - 100 * ms, 30 * us)
      .launch("cudaMemcpyAsync", 2 * ms, 50 * us, EventKind::memcpy, "Memcpy DtoH (Device -> Pageable)", 0,
              2 * ms + 20 * us - 100 * ms, 20 * us)
      .sync_record(0, 3 * ms);
  Trace& trace = m.trace();
  align_gpu_clocks(trace);

  CHECK(event_named(trace, "k").start_ns == 1 * ms + 10 * us);
  CHECK(event_named(trace, "k").duration_ns == 30 * us);
  CHECK(event_named(trace, "Memcpy DtoH (Device -> Pageable)").start_ns == 2 * ms + 20 * us);
  CHECK(event_named(trace, "cudaLaunchKernel").start_ns == 1 * ms);  // the CPU side stays
  CHECK(event_named(trace, "Stream Sync").start_ns == 3 * ms);       // sync records are CPU times
  const ImportStat* stat = stat_named(trace, "gpu_clock_aligned:device 0");
  REQUIRE(stat);
  CHECK(stat->count == 1);
  CHECK(stat->total_ns == 100 * ms);
  CHECK(stat->severity == Severity::error);
  CHECK(trace.report.total_ns("gpu_clock_aligned:device 0") == 100 * ms);
  CHECK(stat->description.find("100.000 ms") != std::string::npos);
}

TEST_CASE("clock alignment: one bound known, the smallest correction that satisfies it", "[ingest][clock]") {
  SECTION("launches only: kernels 100 ms before their calls move to their earliest call-relative start") {
    TraceMaker m;
    m.launch("cudaLaunchKernel", 200 * ms, 5 * us, EventKind::kernel, "k1", 3, 100 * ms + 10 * us, 30 * us)
        .launch("cudaLaunchKernel", 201 * ms, 5 * us, EventKind::kernel, "k2", 3, 101 * ms + 40 * us, 30 * us);
    Trace& trace = m.trace();
    align_gpu_clocks(trace);
    // hi = min(-99.99 ms, -99.96 ms): k1 ends up starting with its call.
    CHECK(event_named(trace, "k1").start_ns == 200 * ms);
    CHECK(event_named(trace, "k2").start_ns == 201 * ms + 30 * us);
    CHECK(trace.report.get("gpu_clock_aligned:device 3") == 1);
    CHECK(trace.report.total_ns("gpu_clock_aligned:device 3") == 100 * ms - 10 * us);
  }
  SECTION("a synchronous DtoH cudaMemcpy whose copy ended 5 ms after the call returned") {
    // Device 2's clock is 5 ms ahead: lo = 15.08 - 10.1 = 4.98 ms, hi = 15.02 - 10 = 5.02 ms.
    TraceMaker m;
    m.launch("cudaMemcpy", 10 * ms, 100 * us, EventKind::memcpy, "Memcpy DtoH (Device -> Pinned)", 2,
             15 * ms + 20 * us, 60 * us);
    Trace& trace = m.trace();
    align_gpu_clocks(trace);
    CHECK(event_named(trace, "Memcpy DtoH (Device -> Pinned)").start_ns == 10 * ms + 20 * us);
    CHECK(trace.report.total_ns("gpu_clock_aligned:device 2") == 5 * ms);
  }
}

TEST_CASE("clock alignment: aligned devices and non-blocking copies are left as they are", "[ingest][clock]") {
  TraceMaker m;
  // Device 1: a kernel 1.5 us before its call and a pageable copy ending 1.9 us after its call
  // returned: timestamp jitter within the 2 us tolerance.
  m.launch("cudaLaunchKernel", 1 * ms, 5 * us, EventKind::kernel, "jitter_kernel", 1, 1 * ms - 1500, 30 * us)
      .launch("cudaMemcpyAsync", 2 * ms, 50 * us, EventKind::memcpy, "Memcpy DtoH (Device -> Pageable)", 1,
              2 * ms + 30 * us, 21'900)
      // Device 4: an asynchronous copy to pinned memory returns before the copy ends: no evidence.
      .launch("cudaMemcpyAsync", 3 * ms, 10 * us, EventKind::memcpy, "Memcpy DtoH (Device -> Pinned)", 4,
              3 * ms + 20 * us, 50 * ms)
      // An asynchronous host-to-device copy neither.
      .launch("cudaMemcpyAsync", 4 * ms, 10 * us, EventKind::memcpy, "Memcpy HtoD (Pageable -> Device)", 4,
              4 * ms + 20 * us, 50 * ms);
  Trace& trace = m.trace();
  const Trace before = trace;
  align_gpu_clocks(trace);
  REQUIRE(trace.events.size() == before.events.size());
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    CAPTURE(i);
    CHECK(trace.events[i].start_ns == before.events[i].start_ns);
  }
  CHECK(trace.report.stats().empty());
}

TEST_CASE("clock alignment: bounds that cross leave the device as it is", "[ingest][clock]") {
  SECTION("launches agree, one pageable copy 'returned' 275 us before it ended") {
    // hi = 10 us, lo = 275 us: shifting by lo would move every kernel 265 us before its call.
    TraceMaker m;
    m.launch("cudaLaunchKernel", 20 * us, 5 * us, EventKind::kernel, "k", 0, 30 * us, 200 * us)
        .launch("cudaMemcpyAsync", 100 * us, 10 * us, EventKind::memcpy, "Memcpy DtoH (Device -> Pageable)", 0,
                335 * us, 50 * us);
    Trace& trace = m.trace();
    align_gpu_clocks(trace);
    CHECK(event_named(trace, "k").start_ns == 30 * us);
    CHECK(event_named(trace, "Memcpy DtoH (Device -> Pageable)").start_ns == 335 * us);
    CHECK(trace.report.get("gpu_clock_aligned:device 0") == 0);
  }
  SECTION("kernels 100 ms before their calls, a blocking copy ending 1 ms after its call returned") {
    TraceMaker m;
    m.launch("cudaLaunchKernel", 200 * ms, 5 * us, EventKind::kernel, "k", 0, 100 * ms, 30 * us)
        .launch("cudaMemcpy", 300 * ms, 10 * us, EventKind::memcpy, "Memcpy DtoH (Device -> Pinned)", 0,
                300 * ms + 900 * us, 110 * us);
    Trace& trace = m.trace();
    align_gpu_clocks(trace);
    CHECK(event_named(trace, "k").start_ns == 100 * ms);
    CHECK(trace.report.get("gpu_clock_aligned:device 0") == 0);
  }
}

TEST_CASE("clock alignment: load_trace aligns the devices of a Kineto file", "[ingest][clock]") {
  // Device 0 runs 100 ms behind: a kernel and a pageable DtoH copy, both 100 ms early.
  const std::string json = test::KinetoJson()
                               .runtime("cudaLaunchKernel", 200'000, 5, 1)
                               .kernel("k", 100'010, 30, 1)
                               .runtime("cudaMemcpyAsync", 300'000, 50, 2)
                               .memcpy("Memcpy DtoH (Device -> Pageable)", 200'020, 20, 2)
                               .str();
  std::string dir = (std::filesystem::temp_directory_path() / "daydream-test-clock-XXXXXX").string();
  REQUIRE(mkdtemp(dir.data()) != nullptr);
  const auto path = std::filesystem::path(dir) / "skewed.json";
  std::ofstream(path) << json;
  const Trace trace = load_trace(path);
  std::filesystem::remove_all(dir);

  // lo = 200.04 - 300.05 ms, hi = 100.01 - 200 ms: the offset is -100 ms.
  CHECK(event_named(trace, "k").start_ns == 200'010 * us);
  CHECK(event_named(trace, "Memcpy DtoH (Device -> Pageable)").start_ns == 300'020 * us);
  CHECK(trace.report.total_ns("gpu_clock_aligned:device 0") == 100 * ms);
  // parse_kineto_json alone does not align (load_trace does, for every format).
  CHECK(event_named(parse_kineto_json(json, "skewed.json"), "k").start_ns == 100'010 * us);
}
