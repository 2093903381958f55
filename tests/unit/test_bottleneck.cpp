// "What is my bottleneck?" (bottleneck.hpp): GPU idle time split by what ended each idle stretch,
// exactly, on a hand-built step; the critical path by operator and kernel; real traces.
#include <catch2/catch.hpp>

#include <numeric>

#include "daydream/bottleneck.hpp"
#include "daydream/ingest.hpp"
#include "unit/graph_helpers.hpp"
#include "unit/shared_traces.hpp"
#include "unit/trace_builder.hpp"

using namespace daydream;

namespace {

constexpr TimeNs us = 1000;

TimeNs idle(const StreamIdle& s, IdleCause cause) { return s.idle_by_cause_ns[static_cast<std::size_t>(cause)]; }

/// One 697 us step whose stream idles for each cause in turn (kernels start 5 us after their
/// launch call ends, the latency the graph calibrates): kernel A [10, 110); CPU work [20, 300),
/// a launch, kernel D [308, 348); a cudaDeviceSynchronize [304, 349) waiting for D, CPU work
/// [349, 398), a launch, kernel E [406, 446); a DataLoader range [449, 598), a launch, kernel F
/// [606, 696); a final sync ends the step at 697.
Graph idle_causes_step() {
  test::KinetoJson t;
  t.annotation("ProfilerStep#1", 0, 697);
  t.cpu_op("aten::mm", 1, 9);
  t.runtime("cudaLaunchKernel", 2, 3, 1);
  t.kernel("kernel_a", 10, 100, 1);
  t.cpu_op("aten::relu", 20, 280);
  t.runtime("cudaLaunchKernel", 300, 3, 2);
  t.kernel("kernel_d", 308, 40, 2);
  t.runtime("cudaDeviceSynchronize", 304, 45, 3);
  t.cpu_op("aten::item", 349, 49);
  t.runtime("cudaLaunchKernel", 398, 3, 4);
  t.kernel("kernel_e", 406, 40, 4);
  t.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 449, 149);
  t.runtime("cudaLaunchKernel", 598, 3, 5);
  t.kernel("kernel_f", 606, 90, 5);
  t.runtime("cudaDeviceSynchronize", 601, 96, 6);
  return test::graph_of(t.str());
}

}  // namespace

TEST_CASE("bottleneck: a stream's idle time by what ended each idle stretch, exactly", "[bottleneck]") {
  const Predictor predictor(idle_causes_step());
  const BottleneckReport r = find_bottleneck(predictor);
  CHECK(r.iterations == 1);
  CHECK(r.window_start_ns == 0);
  CHECK(r.window_end_ns == 697 * us);
  REQUIRE(r.streams.size() == 1);
  const StreamIdle& s = r.streams.front();
  CHECK(s.window_ns == 697 * us);
  CHECK(s.busy_ns == (100 + 40 + 40 + 90) * us);
  // [0, 10): the step's and mm's CPU time and A's launch (5 us), then launch latency (5 us).
  // [110, 308): relu's CPU time from 110 and D's launch (193 us), latency 5 us.
  // [348, 406): the sync's return (1 us), then item and E's launch (52 us): refilling the queue
  //   the sync drained, so the sync's (53 us); latency 5 us.
  // [446, 606): the step's own 3 us and F's launch (6 us), the DataLoader range (149 us), latency 5 us.
  // [696, 697): the final sync returns: no task starts after it, latency.
  CHECK(idle(s, IdleCause::cpu) == (5 + 193 + 6) * us);
  CHECK(idle(s, IdleCause::sync) == 53 * us);
  CHECK(idle(s, IdleCause::data) == 149 * us);
  CHECK(idle(s, IdleCause::latency) == (5 + 5 + 5 + 5 + 1) * us);
  CHECK(idle(s, IdleCause::other_stream) == 0);
  CHECK(s.idle_ns() + s.busy_ns == s.window_ns);
  // The critical path runs on the CPU but for D and F (the syncs wait for them).
  CHECK(r.critical_path.length_ns == 697 * us);
  REQUIRE(r.by_kernel.size() == 2);
  CHECK(r.by_kernel[0].name == "kernel_f");
  CHECK(r.by_kernel[0].ns == 90 * us);
  CHECK(r.by_kernel[1].name == "kernel_d");
  REQUIRE_FALSE(r.by_operator.empty());
  CHECK(r.by_operator.front().name == "aten::relu");
  CHECK(r.by_operator.front().ns == 280 * us);
  TimeNs by_operator = 0;
  for (const NamedTime& op : r.by_operator) by_operator += op.ns;
  CHECK(by_operator <= r.critical_path.length_ns);
  CHECK(r.summary.rfind("bottleneck: ", 0) == 0);
  CHECK(r.summary.find("data 21.4%") != std::string::npos);  // 149 of 697 us
}

TEST_CASE("bottleneck on real traces: busy plus idle fills each stream's window, the path is the replay's",
          "[bottleneck][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  for (const char* relative : {"resnet-2080ti-sgd/resnet_kineto.json.gz", "resnet50-v100-dataloader/workers0"}) {
    for (const auto& path : test::traces_at(relative)) {
      INFO(path.string());
      const Predictor predictor(build_graph(load_trace(path)));
      const BottleneckReport r = find_bottleneck(predictor);
      REQUIRE_FALSE(r.streams.empty());
      for (const StreamIdle& s : r.streams) CHECK(s.busy_ns + s.idle_ns() == s.window_ns);
      const Prediction baseline = predictor.compare("baseline", predictor.base(), predictor.baseline());
      CHECK(r.critical_path.by_category_ns == baseline.critical_path.by_category_ns);
      CHECK(r.iteration_ns == baseline.baseline_median_ns);
    }
  }
}
