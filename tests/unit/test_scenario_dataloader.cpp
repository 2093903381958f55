// The dataloader_workers scenario: exact arithmetic on a hand-built three-step trace, and the
// measured pair of ../shared/traces/resnet50-v100-dataloader (predict workers=4 from workers=0).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "daydream/predict.hpp"
#include "graph_helpers.hpp"
#include "shared_traces.hpp"
#include "trace_builder.hpp"

namespace daydream::test {
namespace {

// Three 100 us steps: a 60 us DataLoader __next__ (with a nested aten::stack), then a 40 us
// operator that launches a 30 us kernel (10 us launch latency; the GPU is never the bottleneck).
std::string three_loading_steps() {
  KinetoJson trace;
  for (int step = 0; step < 3; ++step) {
    const double t0 = 100.0 * step;
    trace.annotation("ProfilerStep#" + std::to_string(step + 1), t0, 100)
        .cpu_op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0, 60)
        .cpu_op("aten::stack", t0 + 10, 20)
        .cpu_op("aten::conv2d", t0 + 60, 40)
        .runtime("cudaLaunchKernel", t0 + 70, 10, step + 1)
        .kernel("conv_kernel", t0 + 80, 30, step + 1);
  }
  return trace.str();
}

std::vector<TimeNs> predicted_steps(const std::string& spec) {
  const Predictor predictor(graph_of(three_loading_steps()));
  std::vector<TimeNs> out;
  for (const auto& it : predictor.predict(parse_scenario_spec(spec)).iterations) out.push_back(it.predicted_ns);
  return out;
}

TEST_CASE("dataloader_workers: main-thread loading becomes a fetch; one worker cannot keep up", "[scenario][dataloader]") {
  const Graph g = graph_of(three_loading_steps());
  CHECK(g.task(task_named(g, "aten::stack")).phase == Phase::data_loading);
  CHECK(g.task(task_named(g, "aten::conv2d")).phase == Phase::forward);
  // Baseline replay: 100 us per step.
  CHECK(predicted_steps("dataloader_workers:workers=0") == std::vector<TimeNs>{100 * us, 100 * us, 100 * us});
  // workers=1, prefetch=1, fetch=5us: batch 0 is queued. Step 1 = fetch 5 + operator 40 = 45 us.
  // Worker loads batch 1 from fetch 0's end (5) for 60 us -> ready at 65; step 2 waits for it:
  // fetch [65,70), operator [70,110) -> 110 - 45 = 65 us. Batch 2: from max(fetch 1 end 70,
  // load 1 end 65) = 70 to 130; step 3: fetch [130,135), operator to 175 -> 65 us.
  CHECK(predicted_steps("dataloader_workers:workers=1,prefetch=1,fetch=5us") ==
        std::vector<TimeNs>{45 * us, 65 * us, 65 * us});
  // Two workers: batch 2 is loaded by worker 0 from 5 to 65, before step 3 needs it at 90.
  CHECK(predicted_steps("dataloader_workers:workers=2,prefetch=1,fetch=5us") ==
        std::vector<TimeNs>{45 * us, 45 * us, 45 * us});
  // The default prefetch (2) queues batches 0 and 1; batch 2 is loaded from 5 to 65 us, before
  // step 3 needs it at 90: one worker is enough.
  CHECK(predicted_steps("dataloader_workers:workers=1,fetch=5us") == std::vector<TimeNs>{45 * us, 45 * us, 45 * us});
}

TEST_CASE("dataloader_workers: inserted worker tasks and refusals", "[scenario][dataloader]") {
  Graph g = graph_of(three_loading_steps());
  const auto outcome = apply_scenario(g, parse_scenario_spec("dataloader_workers:workers=1,prefetch=1,fetch=5us"));
  REQUIRE(g.find_unit("DataLoader worker 0"));
  const TaskId load1 = task_named(g, "DataLoader worker: load batch 1");
  const TaskId load2 = task_named(g, "DataLoader worker: load batch 2");
  CHECK(g.task(load1).duration_ns == 60 * us);
  CHECK(edge_between(g, load1, load2).has_value());
  CHECK(edge_between(g, load1, task_named(g, "DataLoader: take a ready batch", 1))->type == EdgeType::cross_thread);
  CHECK(g.task(task_named(g, "aten::stack")).duration_ns == 0);
  REQUIRE(outcome.notes.size() == 2);
  CHECK(outcome.notes[1] == "1 workers x prefetch 1: 1 batches were already queued, 2 loaded by workers in the window");

  Graph plain = graph_of(KinetoJson().annotation("ProfilerStep#1", 0, 10).cpu_op("aten::mm", 0, 10).str());
  CHECK_THROWS_WITH(apply_scenario(plain, parse_scenario_spec("dataloader_workers")),
                    Catch::Contains("no 'enumerate(DataLoader)' ranges"));
  Graph multi = graph_of(KinetoJson().cpu_op("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 0, 1).str());
  CHECK_THROWS_WITH(apply_scenario(multi, parse_scenario_spec("dataloader_workers")), Catch::Contains("load=<duration>"));
  CHECK_THROWS_WITH(apply_scenario(g, parse_scenario_spec("dataloader_workers:workers=-1")),
                    Catch::Contains("out of range"));
  CHECK_THROWS_WITH(apply_scenario(g, parse_scenario_spec("dataloader_workers:worker=2")),
                    Catch::Contains("workers (integer"));
}

// The measured pair: 4 workers from the workers=0 trace alone (no constant fitted to workers4).
TEST_CASE("dataloader_workers: ResNet-50 workers=4 predicted from workers=0 within 10% on the median",
          "[scenario][dataloader][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const auto before = traces_at("resnet50-v100-dataloader/workers0");
  const auto after = traces_at("resnet50-v100-dataloader/workers4");
  REQUIRE(before.size() == 1);
  REQUIRE(after.size() == 1);
  const Predictor predictor(build_graph(load_trace(before[0].string())));
  const Prediction p = predictor.predict(parse_scenario_spec("dataloader_workers:workers=4"));
  const Graph measured = build_graph(load_trace(after[0].string()));
  REQUIRE(p.iterations.size() == measured.iterations().size());
  std::vector<TimeNs> measured_ns;
  for (std::size_t i = 0; i < p.iterations.size(); ++i) {
    const TimeNs m = measured.iterations()[i].measured_ns;
    measured_ns.push_back(m);
    std::printf("%-16s workers0 %8.1f ms  predicted %8.1f ms  workers4 measured %8.1f ms  error %+6.1f%%\n",
                p.iterations[i].name.c_str(), double(p.iterations[i].measured_ns) / 1e6,
                double(p.iterations[i].predicted_ns) / 1e6, double(m) / 1e6,
                100.0 * (double(p.iterations[i].predicted_ns) / double(m) - 1));
  }
  std::sort(measured_ns.begin(), measured_ns.end());
  const double measured_median = double(measured_ns[2] + measured_ns[3]) / 2;  // six steps
  std::vector<TimeNs> predicted_ns;
  for (const auto& it : p.iterations) predicted_ns.push_back(it.predicted_ns);
  std::sort(predicted_ns.begin(), predicted_ns.end());
  const double predicted_median = double(predicted_ns[2] + predicted_ns[3]) / 2;
  const double error = predicted_median / measured_median - 1;
  std::printf("median: predicted %.1f ms, measured %.1f ms, error %+.1f%%\n", predicted_median / 1e6,
              measured_median / 1e6, 100 * error);
  CHECK(std::abs(error) <= 0.10);
  CHECK(p.speedup() > 1.3);  // the data loading (about 70 ms of 176 ms) leaves the critical path
}

}  // namespace
}  // namespace daydream::test
