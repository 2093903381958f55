// Launch-latency calibration (lib/graph/gpu_edges.cpp, calibrate_latencies): the lower quartile
// of each kind's idle-stream samples, capped at the median over all kinds; samples a recorded
// cudaStreamWaitEvent may have held are left out. And text::lower_quantile.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "common/text.hpp"
#include "unit/graph_helpers.hpp"
#include "unit/trace_builder.hpp"

using namespace daydream;
using test::us;

namespace {

TimeNs latency(const Graph& g, TaskKind kind) {
  return g.calibration().launch_latency_ns[static_cast<std::size_t>(kind)];
}

/// How the two stream waits before the held launches on stream 9 are recorded.
enum class WaitRecord {
  recorded,          ///< a "Stream Wait Event" record joined to its cudaStreamWaitEvent call
  mislabelled,       ///< a record of another type, joined to a cudaStreamWaitEvent call
  record_only,       ///< a "Stream Wait Event" record whose call is not in the trace
  other_call,        ///< a "Stream Wait Event" record joined to a cudaEventSynchronize call: no wait
  other_stream,      ///< a wait recorded for stream 8, not 9
};

// Every launch finds its stream idle. Kernels on stream 7 start 10, 20, 30, 40, 50 us after
// their calls; copies on stream 8 100, 110, 120 us after theirs. On stream 9, two kernels start
// 900 and 1000 us after their calls, each issued after a stream wait on stream 9; a third one,
// with no wait since the previous launch, starts 60 us after its call.
std::string calibration_trace(WaitRecord how) {
  test::KinetoJson t;
  std::int64_t c = 1;
  for (int i = 0; i < 5; ++i, ++c) {
    t.runtime("cudaLaunchKernel", 100 * i, 5, c).kernel("k", 100 * i + 10 * (i + 1), 5, c, 7);
  }
  for (int i = 0; i < 3; ++i, ++c) {
    t.runtime("cudaMemcpyAsync", 500 + 200 * i, 5, c).memcpy("Memcpy HtoD (Pinned -> Device)", 600 + 210 * i, 5, c, 8);
  }
  for (const auto& [wait_at, held_for] : {std::pair{1100.0, 900.0}, std::pair{2100.0, 1000.0}}) {
    const std::int64_t wait = c++, launch = c++;
    const char* call = how == WaitRecord::other_call ? "cudaEventSynchronize" : "cudaStreamWaitEvent";
    if (how != WaitRecord::record_only) t.runtime(call, wait_at, 2, wait);
    const char* kind = how == WaitRecord::mislabelled ? "Event Sync" : "Stream Wait Event";
    t.cuda_sync(kind, wait_at, 2, wait, how == WaitRecord::other_stream ? 8 : 9, 7);
    t.runtime("cudaLaunchKernel", wait_at + 10, 5, launch).kernel("held", wait_at + 10 + held_for, 5, launch, 9);
  }
  t.runtime("cudaLaunchKernel", 3200, 5, c).kernel("free", 3260, 5, c, 9);
  return t.str();
}

}  // namespace

TEST_CASE("text::lower_quantile: the value at (n - 1) / parts of the sorted values", "[common]") {
  std::vector<TimeNs> none;
  CHECK(text::lower_quantile(none, 4) == 0);
  std::vector<TimeNs> one = {5};
  CHECK(text::lower_quantile(one, 4) == 5);
  std::vector<TimeNs> four = {40, 10, 30, 20};
  CHECK(text::lower_quantile(four, 4) == 10);  // index 0
  CHECK(text::lower_quantile(four, 2) == 20);  // index 1: the lower middle
  CHECK(text::median(four) == 20);
  CHECK(text::median(four, text::EvenCount::upper) == 30);  // the scenarios' rule (median_high)
  CHECK(text::median({7, 1, 4}, text::EvenCount::upper) == 4);  // odd counts: the middle either way
  CHECK(text::median({}, text::EvenCount::upper) == 0);
  std::vector<TimeNs> nine = {9, 1, 8, 2, 7, 3, 6, 4, 5};
  CHECK(text::lower_quantile(nine, 4) == 3);  // index 2
  CHECK(text::lower_quantile(nine, 2) == 5);  // index 4
  CHECK(text::lower_quantile(nine, 1) == 9);  // index 8
  std::vector<TimeNs> five = {50, 10, 40, 20, 30};
  CHECK(text::lower_quantile(five, 4) == 20);  // index 1
}

TEST_CASE("launch latency: lower quartile per kind, capped at the median over all kinds, held samples left out",
          "[graph][calibration]") {
  SECTION("waits recorded on the launches' stream: the held samples are left out") {
    const WaitRecord how = GENERATE(WaitRecord::recorded, WaitRecord::mislabelled, WaitRecord::record_only);
    CAPTURE(static_cast<int>(how));
    const Graph g = test::graph_of(calibration_trace(how));
    // Samples: kernels 10, 20, 30, 40, 50, 60; copies 100, 110, 120 (900 and 1000 held).
    CHECK(g.calibration().launch_samples == 9);
    CHECK(latency(g, TaskKind::kernel) == 20 * us);         // lower quartile: index 1 of 6
    CHECK(latency(g, TaskKind::memcpy) == 50 * us);         // own quartile 100 us, capped at the median of 9
    CHECK(latency(g, TaskKind::memset) == 30 * us);         // never seen: the lower quartile of all 9
    CHECK(latency(g, TaskKind::communication) == 30 * us);
  }
  SECTION("no wait on the launches' stream: every sample counts") {
    const WaitRecord how = GENERATE(WaitRecord::other_call, WaitRecord::other_stream);
    CAPTURE(static_cast<int>(how));
    const Graph g = test::graph_of(calibration_trace(how));
    CHECK(g.calibration().launch_samples == 11);
    CHECK(latency(g, TaskKind::kernel) == 20 * us);  // index 1 of 8
    CHECK(latency(g, TaskKind::memcpy) == 60 * us);  // capped at the median of 11
    CHECK(latency(g, TaskKind::memset) == 30 * us);  // index 2 of 11
  }
}

TEST_CASE("launch latency: the launch edge of a kernel carries its kind's calibrated latency", "[graph][calibration]") {
  const Graph g = test::graph_of(calibration_trace(WaitRecord::recorded));
  const TaskId call = test::task_named(g, "cudaLaunchKernel"), kernel = test::task_named(g, "k");
  const auto launch = test::edge_between(g, call, kernel);
  REQUIRE(launch);
  CHECK(launch->type == EdgeType::launch);
  CHECK(launch->delay_ns == 20 * us);
  const auto copy = test::edge_between(g, test::task_named(g, "cudaMemcpyAsync"),
                                       test::task_named(g, "Memcpy HtoD (Pinned -> Device)"));
  REQUIRE(copy);
  CHECK(copy->delay_ns == 50 * us);
}
