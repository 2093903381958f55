// Times daydream accepts (trace.hpp: kMaxTraceTimeNs, kMaxTaskDurationNs; issue 18, item 1):
// out-of-range times are refused at ingest naming the file, event and field; durations a what-if
// sets are bounded; the simulator never wraps its clock around. Each case here overflowed a
// 64-bit sum before (a negative busy time or iteration, or undefined behaviour).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "daydream/error.hpp"
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/layers.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/simulate.hpp"
#include "daydream/transform.hpp"
#include "unit/graph_helpers.hpp"
#include "unit/trace_builder.hpp"

namespace {

using daydream::Error;
using daydream::kMaxTaskDurationNs;
using daydream::kMaxTraceTimeNs;
using daydream::test::KinetoJson;

std::string with_kernel(const std::string& ts, const std::string& dur) {
  KinetoJson json;
  json.annotation("ProfilerStep#1", 0, 100).runtime("cudaLaunchKernel", 10, 5, 1).kernel("k", 20, 30, 1);
  json.raw(R"({"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": )" + ts + R"(, "dur": )" + dur +
           R"(, "args": {"stream": 7}})");
  return json.str();
}

Error parse_error(const std::string& json) {
  try {
    (void)daydream::parse_kineto_json(json, "times.json");
  } catch (const Error& e) {
    return e;
  }
  FAIL("no daydream::Error for " << json);
  return Error("unreachable");
}

}  // namespace

TEST_CASE("time ranges: a start beyond 2^62 ns is refused, naming the event and field", "[time_ranges]") {
  for (const char* ts : {"9000000000000000", "-9000000000000000", "4611686018427387.904", "9.2e15"}) {
    INFO("ts: " << ts);
    const Error e = parse_error(with_kernel(ts, "5"));
    CHECK(e.file() == "times.json");
    CHECK(e.event_index() == 3);
    CHECK(e.field() == "ts");
    CHECK_THAT(e.what(), Catch::Contains("outside the times daydream accepts"));
  }
  // A start just inside whose end would leave the range is refused too.
  CHECK(parse_error(with_kernel("4611686018427387.000", "1000")).field() == "ts");
}

TEST_CASE("time ranges: a duration over one day is refused", "[time_ranges]") {
  const Error e = parse_error(with_kernel("60", "86400000001"));  // one day + 1 us
  CHECK(e.field() == "dur");
  CHECK_THAT(e.what(), Catch::Contains("longer than one day"));
  CHECK_NOTHROW(daydream::parse_kineto_json(with_kernel("60", "86400000000"), "day.json"));  // exactly one day
}

TEST_CASE("time ranges: a trace spanning more than 2^62 ns is refused", "[time_ranges]") {
  // Each event is within +-2^62 ns (4.6e18), but they are 6e18 ns apart.
  KinetoJson json;
  json.annotation("ProfilerStep#1", -3000000000000000.0, 100).cpu_op("late", 3000000000000000.0, 10);
  const Error span = parse_error(json.str());
  CHECK(span.event_index() == Error::kNoEvent);
  CHECK_THAT(span.what(), Catch::Contains("span") && Catch::Contains("2^62"));
}

TEST_CASE("time ranges: durations a what-if sets stay within one day", "[time_ranges]") {
  using namespace daydream;
  Graph g = test::graph_of(with_kernel("60", "5"));
  const TaskId k = test::task_named(g, "k");
  CHECK_THROWS_WITH(g.set_duration(k, kMaxTaskDurationNs + 1), Catch::Contains("longer than one day"));
  CHECK_NOTHROW(g.set_duration(k, kMaxTaskDurationNs));
  // scale checks before rounding: 30 us x 1e300 used to be undefined (llround overflow)
  g.set_duration(k, 30 * test::us);
  CHECK_THROWS_WITH(g.select(TaskFilter{}.name("^k$")).scale(1e300),
                    Catch::Contains("scale: task") && Catch::Contains("'k'") && Catch::Contains("longer than one day"));
  CHECK(g.task(k).duration_ns == 30 * test::us);  // unchanged
}

TEST_CASE("time ranges: the simulator refuses to run its clock past 2^62 ns", "[time_ranges]") {
  using namespace daydream;
  Graph g = test::graph_of(with_kernel("60", "5"));
  const TaskId k = test::task_named(g, "k");
  // A gap of over 2^61 ns on an edge: refused, naming the edge.
  const auto successors = g.successors(k);
  REQUIRE(!successors.empty());
  Edge edge = successors.front().edge;
  edge.delay_ns = kMaxTraceTimeNs / 2 + 1;
  g.disconnect(k, successors.front().task);
  g.connect(k, successors.front().task, edge);
  CHECK_THROWS_WITH(simulate(g), Catch::Contains("delay") && Catch::Contains("beyond what the simulator accepts"));
  // 2^62 / one day = 53,375 tasks of a day each in a chain: the clock passes 2^62 ns.
  Graph chain = test::graph_of(with_kernel("60", "5"));
  const auto root = test::task_named(chain, "k");
  for (TaskId t = 0; t < chain.num_tasks(); ++t) chain.set_duration(t, kMaxTaskDurationNs);
  TaskId last = root;
  for (int i = 0; i < 53'400; ++i) {
    NewTask spec;
    spec.name = "day";
    spec.duration_ns = kMaxTaskDurationNs;
    spec.unit = chain.task(root).unit;
    spec.kind = TaskKind::kernel;
    spec.after = {last};
    last = chain.insert(spec);
  }
  CHECK_THROWS_WITH(simulate(chain), Catch::Contains("the simulated clock") && Catch::Contains("2^62"));
}

TEST_CASE("time ranges: a layer file's times are held to the same range", "[time_ranges]") {
  using namespace daydream;
  Graph g = test::graph_of(with_kernel("60", "5"));
  const auto path = std::filesystem::temp_directory_path() / "daydream_time_ranges_layers.json";
  for (const std::string start : {"9300000000000000", "-9300000000000000", "4.7e15", "1e300"}) {
    std::ofstream(path) << R"({"layers": [{"name": "l", "phase": "forward", "thread": 1, "start_us": )" << start
                        << R"(, "end_us": 30}]})";
    CHECK_THROWS_WITH(apply_layer_file(g, path),
                      Catch::Contains("daydream_time_ranges_layers.json") && Catch::Contains("start_us") &&
                          Catch::Contains("outside the times daydream accepts"));
  }
  std::filesystem::remove(path);
}

TEST_CASE("time ranges: busy time sums cannot overflow: one unit runs its tasks one at a time", "[time_ranges]") {
  // 50,000 tasks of one day on one stream: 4.32e18 ns of busy time, within int64 and within the
  // clock limit (2^62 ns); the report's busy time is their exact sum, not a wrapped-around one.
  using namespace daydream;
  Graph chain = test::graph_of(with_kernel("60", "5"));
  const TaskId root = test::task_named(chain, "k");
  const UnitId stream = chain.task(root).unit;
  const std::size_t tasks_before = chain.num_tasks();
  TaskId last = root;
  for (int i = 0; i < 50'000; ++i) {
    NewTask spec = NewTask::of("day", TaskKind::kernel, kMaxTaskDurationNs, 0);
    spec.unit = stream;
    spec.after = {last};
    last = chain.insert(spec);
  }
  const SimulationResult result = simulate(chain);
  TimeNs expected = 0;
  for (TaskId t = 0; t < chain.num_tasks(); ++t)
    if (chain.task(t).unit == stream) expected += chain.task(t).duration_ns;
  CHECK(chain.num_tasks() == tasks_before + 50'000);
  CHECK(result.units[stream].busy_ns == expected);
  CHECK(expected > 50'000 * kMaxTaskDurationNs - 1);
  CHECK(result.makespan_ns > 50'000 * kMaxTaskDurationNs);
  const ReplayReport report = make_replay_report(chain, result);
  const auto unit = std::find_if(report.units.begin(), report.units.end(),
                                 [&](const UnitReport& u) { return u.name == chain.units()[stream].name; });
  REQUIRE(unit != report.units.end());
  CHECK(unit->busy_ns == expected);
  CHECK(to_json(report).find(": -") == std::string::npos);  // no negative number anywhere
}
