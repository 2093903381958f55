// Predictions: per-iteration times, the critical-path breakdown, sweeps (order, threads,
// errors) and determinism.
#include <catch2/catch.hpp>

#include "daydream/error.hpp"
#include "daydream/predict.hpp"
#include "daydream/report/chrome_trace.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/transform.hpp"
#include "graph_helpers.hpp"
#include "trace_builder.hpp"
#include "graph/graph_access.hpp"
#include "predict/report_columns.hpp"

namespace daydream::test {
namespace {

// One 100 us step: aten::mm (20 us of CPU, then a 10 us launch) -> a 50 us gemm kernel, waited
// for by cudaDeviceSynchronize, then 20 us of aten::add.
std::string launch_and_sync_step() {
  return KinetoJson()
      .annotation("ProfilerStep#1", 0, 100)
      .cpu_op("aten::mm", 0, 30)
      .runtime("cudaLaunchKernel", 20, 10, 1)
      .kernel("gemm", 30, 50, 1)
      .runtime("cudaDeviceSynchronize", 30, 50, 2)
      .cpu_op("aten::add", 80, 20)
      .str();
}

TEST_CASE("critical path breakdown: categories of each task and the path's gaps", "[predict]") {
  const Graph g = graph_of(launch_and_sync_step());
  const SimulationResult r = simulate(g);
  CHECK(path_category(g, task_named(g, "aten::mm")) == PathCategory::cpu);
  CHECK(path_category(g, task_named(g, "cudaLaunchKernel")) == PathCategory::launch_overhead);
  CHECK(path_category(g, task_named(g, "gemm")) == PathCategory::compute);
  CHECK(path_category(g, task_named(g, "cudaDeviceSynchronize")) == PathCategory::synchronization);
  const PathBreakdown b = break_down_critical_path(g, r);
  INFO("path of " << r.critical_path.size() << " tasks");
  // mm 20 (cpu) -> launch 10 -> gemm 50 (compute) -> the sync returns at the kernel's end -> add 20.
  CHECK(b.length_ns == 100 * us);
  CHECK(b.by_category_ns[std::size_t(PathCategory::cpu)] == 40 * us);
  CHECK(b.by_category_ns[std::size_t(PathCategory::launch_overhead)] == 10 * us);
  CHECK(b.by_category_ns[std::size_t(PathCategory::compute)] == 50 * us);
  CHECK(b.dominant() == PathCategory::compute);
  REQUIRE(b.by_layer_ns.size() == 1);
  CHECK(b.by_layer_ns[0] == std::pair<std::string, TimeNs>{"(no layer)", 100 * us});
  // A window clips the path: [25, 60) us holds 5 us of launch and 30 us of gemm.
  const PathBreakdown w = break_down_critical_path(g, r, 25 * us, 60 * us);
  CHECK(w.length_ns == 35 * us);
  CHECK(w.by_category_ns[std::size_t(PathCategory::launch_overhead)] == 5 * us);
  CHECK(w.by_category_ns[std::size_t(PathCategory::compute)] == 30 * us);
}

TEST_CASE("critical path breakdown: a name decides a category exactly where category_reads_name says", "[predict]") {
  // Every kind, phase and blocking flag, named once as a wait on the GPU and once as a launch.
  Graph g;
  const UnitId unit = g.add_unit({UnitKind::cpu_thread, "cpu", 1, 1});
  int checked_by_name = 0;
  for (std::size_t k = 0; k < kTaskKindCount; ++k)
    for (const Phase phase : {Phase::unknown, Phase::forward, Phase::backward, Phase::update, Phase::data_loading})
      for (const bool blocking : {false, true}) {
        Task task;
        task.kind = static_cast<TaskKind>(k);
        task.phase = phase;
        task.blocking = blocking;
        task.unit = unit;
        task.name = g.intern("cudaStreamSynchronize");
        const TaskId waits = g.add_task(task);
        task.name = g.intern("cudaLaunchKernel");
        const TaskId launches = g.add_task(task);
        INFO("kind " << k << ", phase " << static_cast<int>(phase) << ", blocking " << blocking);
        const bool by_name = path_category(g, waits) != path_category(g, launches);
        CHECK(by_name == ReportColumns::category_reads_name(task));
        checked_by_name += by_name;
      }
  CHECK(checked_by_name > 0);
}

TEST_CASE("critical path breakdown: a base's report columns, shared by copies, follow their changes", "[predict]") {
  // A Predictor's base builds the columns reports read (category, layer, iteration per task) and
  // its copies share them; renaming a call, marking it blocking, or adding a task must give the
  // breakdown a graph without the columns gives.
  Graph base = graph_of(launch_and_sync_step());
  const PathBreakdown plain = break_down_critical_path(base, simulate(base));
  REQUIRE(report_columns(base) != nullptr);
  CHECK(report_columns_if_built(base) == report_columns(base));
  CHECK(break_down_critical_path(base, simulate(base)).by_category_ns == plain.by_category_ns);

  Graph renamed = base;
  CHECK(report_columns_if_built(renamed) == report_columns(base));  // shared
  const TaskId launch = task_named(renamed, "cudaLaunchKernel");
  renamed.rename(launch, "cudaStreamSynchronize");  // a call by that name waits for the GPU
  CHECK(report_columns_if_built(renamed) == nullptr);
  CHECK(report_columns_if_built(base) != nullptr);  // the base keeps its own
  const PathBreakdown after_rename = break_down_critical_path(renamed, simulate(renamed));
  CHECK(after_rename.by_category_ns[std::size_t(PathCategory::launch_overhead)] == 0);
  CHECK(after_rename.by_category_ns[std::size_t(PathCategory::synchronization)] == 10 * us);

  // Renaming a CPU operator cannot change a category: the copy keeps sharing the base's columns.
  Graph renamed_op = base;
  renamed_op.rename(task_named(renamed_op, "aten::mm"), "aten::matmul");
  CHECK(report_columns_if_built(renamed_op) == report_columns(base));
  CHECK(break_down_critical_path(renamed_op, simulate(renamed_op)).by_category_ns == plain.by_category_ns);

  Graph blocking = base;
  blocking.set_blocking(launch, true);
  CHECK(break_down_critical_path(blocking, simulate(blocking)).by_category_ns ==
        after_rename.by_category_ns);

  // A task added after the columns were built is read from its record: a 30 us CPU task after add.
  Graph grown = base;
  const TaskId add = task_named(grown, "aten::add");
  NewTask extra = NewTask::of("extra", TaskKind::cpu, 30 * us, 0, Phase::data_loading);
  extra.unit = grown.task(add).unit;
  extra.after = {add};
  grown.insert(extra);
  REQUIRE(report_columns_if_built(grown) == report_columns(base));  // still shared: it covers the old tasks
  const PathBreakdown grown_path = break_down_critical_path(grown, simulate(grown));
  CHECK(grown_path.by_category_ns[std::size_t(PathCategory::data_loading)] == 30 * us);
  CHECK(grown_path.by_category_ns[std::size_t(PathCategory::cpu)] == 40 * us);
}

TEST_CASE("predict: a 2x faster GPU on a GPU-bound step, iterations and JSON", "[predict]") {
  const Predictor predictor(graph_of(launch_and_sync_step()));
  const Prediction p = predictor.predict(parse_scenario_spec("faster_gpu:factor=2"));
  REQUIRE(p.iterations.size() == 1);
  CHECK(p.iterations[0].name == "ProfilerStep#1");
  CHECK(p.iterations[0].measured_ns == 100 * us);
  CHECK(p.iterations[0].baseline_ns == 100 * us);
  CHECK(p.iterations[0].predicted_ns == 75 * us);  // the 50 us kernel takes 25 us
  CHECK(p.speedup() == Approx(100.0 / 75.0));
  const std::string json = to_json(p, "t.json");
  CHECK_THAT(json, Catch::StartsWith("{\"trace\": \"t.json\", \"scenario\": \"faster_gpu:factor=2\", \"iteration_rule\": "
                                     "{\"form\": \"ProfilerStep#N\", \"measure\": \"range\""));
  CHECK_THAT(json, Catch::Contains("\"iterations\": [{\"name\": \"ProfilerStep#1\", \"baseline_ms\": 0.1, "
                                   "\"predicted_ms\": 0.075"));
  CHECK_THAT(json, Catch::Contains("\"total\": {\"baseline_ms\": 0.1, \"predicted_ms\": 0.075}"));
}

// Three ProfilerStep ranges with the profiler's bookkeeping (10 us) between them and an operator
// inside each; a 60 us kernel per step that the step waits for; a second thread polls (an NCCL
// watchdog's cudaEventQuery) long after the last step.
std::string steps_and_a_poller() {
  KinetoJson json;
  for (int k = 0; k < 3; ++k) {
    const double start = 110.0 * k;
    json.annotation("ProfilerStep#" + std::to_string(k + 1), start, 100)
        .cpu_op("aten::mm", start + 5, 60)
        .runtime("cudaLaunchKernel", start + 10, 5, k + 1)
        .kernel("gemm", start + 20, 60, k + 1)
        .runtime("cudaDeviceSynchronize", start + 70, 10, 10 + k);
  }
  return json.cpu_op("cudaEventQuery", 2000, 5, 2).str();
}

TEST_CASE("predict: replay, Result and predict share one definition of iteration time", "[predict][iterations]") {
  const Graph g = graph_of(steps_and_a_poller());
  const Predictor predictor(g);
  const ReplayReport replay = make_replay_report(g, simulate(g));
  const Prediction p = predictor.predict(parse_scenario_spec("faster_gpu:factor=1"));
  REQUIRE(replay.iterations.size() == 3);
  REQUIRE(p.iterations.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(replay.iterations[i].simulated_ns == 100 * us);  // the measured range, to the ns
    CHECK(p.iterations[i].baseline_ns == replay.iterations[i].simulated_ns);
    CHECK(p.iterations[i].predicted_ns == p.iterations[i].baseline_ns);
  }
  CHECK(p.baseline_median_ns == 100 * us);
}

TEST_CASE("predict: a polling thread does not pin the whole run", "[predict][iterations]") {
  const Graph g = graph_of(steps_and_a_poller());
  const SimulationResult r = simulate(g);
  CHECK(r.makespan_ns == 2005 * us);  // the poller's call ends the simulation...
  CHECK(run_span_ns(g, r) == 320 * us);  // ...but the run is the main thread's and the GPU's work
  SimulationResult of_another_graph = r;
  of_another_graph.units.pop_back();
  CHECK_THROWS_WITH(run_span_ns(g, of_another_graph), Catch::Contains("a result of another graph"));
  const Prediction p = Predictor(g).predict(parse_scenario_spec("faster_gpu:factor=2"));
  CHECK(p.baseline_total_ns == 320 * us);
  CHECK(p.predicted_total_ns < p.baseline_total_ns);
}

TEST_CASE("sweep: rows in input order, identical for 1 and 2 threads, errors per row", "[predict][sweep]") {
  const Predictor predictor(graph_of(launch_and_sync_step()));
  std::vector<ScenarioSpec> specs;
  for (const char* s : {"faster_gpu:factor=1", "faster_gpu:factor=2", "faster_gpu:factor=4", "faster_gpu:factor=8",
                        "dataloader_workers"})
    specs.push_back(parse_scenario_spec(s));
  std::size_t progress_calls = 0;
  const auto one = sweep(predictor, specs, {1, [&](std::size_t done, std::size_t total) {
                                              CHECK(total == 5);
                                              CHECK(done == ++progress_calls);
                                            }});
  const auto two = sweep(predictor, specs, {2, {}});
  CHECK(progress_calls == 5);
  REQUIRE(one.size() == 5);
  const TimeNs expected[] = {100 * us, 75 * us, 62500, 56250};  // 50 us of kernel / factor + 50 us
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(one[i].spec.text() == specs[i].text());
    REQUIRE(one[i].prediction);
    CHECK(one[i].prediction->predicted_median_ns == expected[i]);
    CHECK(to_json(*one[i].prediction, "t") == to_json(*two[i].prediction, "t"));
  }
  // The trace has no DataLoader: that row carries the error, the others still ran.
  CHECK_FALSE(one[4].prediction);
  CHECK_THAT(one[4].error, Catch::Contains("no 'enumerate(DataLoader)' ranges"));
  // Bad specs fail before any work.
  CHECK_THROWS_AS(sweep(predictor, {parse_scenario_spec("faster_gpu:factor=0")}), Error);
  CHECK_THROWS_WITH(sweep(predictor, {parse_scenario_spec("fastest_gpu")}), Catch::Contains("valid: amp,"));
}

}  // namespace
}  // namespace daydream::test

// ---------------------------------------------------------------------------------------------
// write_chrome_trace tests (CLI/Perfetto work) go below this line.
// [chrome_trace] (issue 4, CLI helper): write_chrome_trace on a hand-built graph, compared with
// the exact expected file.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace daydream::test {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A GPU stream (unit 0), a CPU thread (unit 1) and an unused channel (unit 2):
///   t0 aten::mm     cpu,     20 us, forward, layer "conv1µ"  [0, 20] us
///   t1 launch       runtime, 1.5 us (cpu_sequential after t0) [20, 21.5] us
///   t2 gemm         kernel,  50 us; launch edge from t1 with 0.5 us delay: [22, 72] us
///   t3 (removed)    cpu: not written
///   t4 aten::add    cpu,     5 us (cpu_sequential after t1)  [21.5, 26.5] us
/// The critical path ends at the last task to end, t2: t2 <- t1 <- t0; t4 is off it. The kernel's
/// name needs escapes (quotes, backslash, newline) and has a byte that is not UTF-8 (0xff).
Graph chrome_trace_graph() {
  Graph g;
  g.add_unit({UnitKind::gpu_stream, "GPU 0 stream 7", 0, 7});
  g.add_unit({UnitKind::cpu_thread, "main \"thread\"", 1, 1});
  g.add_unit({UnitKind::comm_channel, "nccl", 0, 0});
  auto task = [&](TaskKind kind, UnitId unit, std::string_view name, TimeNs duration_ns) {
    Task t;
    t.kind = kind, t.unit = unit, t.name = g.intern(name), t.duration_ns = duration_ns;
    return g.add_task(t);
  };
  const TaskId mm = task(TaskKind::cpu, 1, "aten::mm", 20 * us);
  GraphAccess::record(g, mm).phase = Phase::forward;
  GraphAccess::record(g, mm).layer = g.intern("conv1\xc2\xb5");
  const TaskId launch = task(TaskKind::runtime, 1, "cudaLaunchKernel", 1500);
  const TaskId gemm = task(TaskKind::kernel, 0, "gemm \"x\"\\\n\xff", 50 * us);
  const TaskId removed = task(TaskKind::cpu, 1, "removed", 1 * us);
  const TaskId add = task(TaskKind::cpu, 1, "aten::add", 5 * us);
  g.add_edge(mm, launch, {EdgeType::cpu_sequential});
  g.add_edge(launch, gemm, {EdgeType::launch, Timing::finish_to_start, 500});
  g.add_edge(mm, removed, {EdgeType::cpu_sequential});
  g.add_edge(launch, add, {EdgeType::cpu_sequential});
  g.remove(removed);
  return g;
}

std::string temp_path(const char* name) { return (std::filesystem::temp_directory_path() / name).string(); }

TEST_CASE("write_chrome_trace: one process per timeline, one thread per used unit, exact events", "[chrome_trace]") {
  const Graph g = chrome_trace_graph();
  const SimulationResult r = simulate(g);
  REQUIRE(r.critical_path == std::vector<TaskId>{0, 1, 2});
  const std::string path = temp_path("daydream_test_chrome_trace.json");
  write_chrome_trace(path, {{"baseline", &g, &r}});
  // A critical-path track (tid 2; no iterations track: the graph has none), then the threads,
  // CPU first (tid = unit id + 3); the unused channel gets none. ts/dur in us with exact ns; the
  // invalid byte becomes U+FFFD (EF BF BD). The kernel has its stream; a flow joins the launch to it.
  const std::string mm_args = R"("args": {"id": 0, "kind": "cpu", "phase": "forward", "layer": "conv1)"
                              "\xc2\xb5"
                              R"(", "critical": true}})";
  const std::string gemm = "gemm \\\"x\\\"\\\\\\n\xef\xbf\xbd";
  const std::string expected =
      R"({"displayTimeUnit": "ns", "traceEvents": [
  {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "baseline"}},
  {"ph": "M", "name": "process_sort_index", "pid": 1, "tid": 0, "args": {"sort_index": 1}},
  {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "critical path"}},
  {"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": 2, "args": {"sort_index": 1}},
  {"ph": "X", "pid": 1, "tid": 2, "ts": 0.000, "dur": 20.000, "name": "aten::mm", "cat": "critical", "args": {"id": 0, "unit": "main \"thread\""}},
  {"ph": "X", "pid": 1, "tid": 2, "ts": 20.000, "dur": 1.500, "name": "cudaLaunchKernel", "cat": "critical", "args": {"id": 1, "unit": "main \"thread\""}},
  {"ph": "X", "pid": 1, "tid": 2, "ts": 22.000, "dur": 50.000, "name": ")" + gemm + R"(", "cat": "critical", "args": {"id": 2, "unit": "GPU 0 stream 7"}},
  {"ph": "M", "name": "thread_name", "pid": 1, "tid": 4, "args": {"name": "main \"thread\""}},
  {"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": 4, "args": {"sort_index": 2}},
  {"ph": "M", "name": "thread_name", "pid": 1, "tid": 3, "args": {"name": "GPU 0 stream 7"}},
  {"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": 3, "args": {"sort_index": 3}},
  {"ph": "X", "pid": 1, "tid": 4, "ts": 0.000, "dur": 20.000, "name": "aten::mm", "cat": "cpu", )" + mm_args + R"(,
  {"ph": "X", "pid": 1, "tid": 4, "ts": 20.000, "dur": 1.500, "name": "cudaLaunchKernel", "cat": "runtime", "args": {"id": 1, "kind": "runtime", "phase": "unknown", "critical": true}},
  {"ph": "X", "pid": 1, "tid": 3, "ts": 22.000, "dur": 50.000, "name": ")" + gemm + R"(", "cat": "kernel", "args": {"id": 2, "kind": "kernel", "phase": "unknown", "device": 0, "stream": 7, "critical": true}},
  {"ph": "X", "pid": 1, "tid": 4, "ts": 21.500, "dur": 5.000, "name": "aten::add", "cat": "cpu", "args": {"id": 4, "kind": "cpu", "phase": "unknown", "critical": false}},
  {"ph": "s", "id": 1, "pid": 1, "tid": 4, "ts": 20.000, "name": "launch", "cat": "launch"},
  {"ph": "f", "id": 1, "pid": 1, "tid": 3, "ts": 22.000, "bp": "e", "name": "launch", "cat": "launch"}
]}
)";
  CHECK(read_text(path) == expected);

  // Two timelines: the second is process 2 with its own label (escaped) and sort index; the
  // first is unchanged; writing again gives the same bytes.
  write_chrome_trace(path, {{"baseline", &g, &r}, {"predicted: x=\"1\"", &g, &r}});
  const std::string two = read_text(path);
  CHECK_THAT(two, Catch::StartsWith(expected.substr(0, expected.size() - 4)));
  CHECK_THAT(two, Catch::Contains(R"({"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "predicted: x=\"1\""}})"));
  CHECK_THAT(two, Catch::Contains(R"({"ph": "M", "name": "process_sort_index", "pid": 2, "tid": 0, "args": {"sort_index": 2}})"));
  CHECK_THAT(two, Catch::EndsWith(R"({"ph": "s", "id": 2, "pid": 2, "tid": 4, "ts": 20.000, "name": "launch", "cat": "launch"},
  {"ph": "f", "id": 2, "pid": 2, "tid": 3, "ts": 22.000, "bp": "e", "name": "launch", "cat": "launch"}
]}
)"));  // flow ids are unique in the file
  write_chrome_trace(path, {{"baseline", &g, &r}, {"predicted: x=\"1\"", &g, &r}});
  CHECK(read_text(path) == two);
  std::remove(path.c_str());

  // No timeline: an empty, valid trace.
  write_chrome_trace(path, {});
  CHECK(read_text(path) == "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n]}\n");
  std::remove(path.c_str());
}

TEST_CASE("write_chrome_trace: errors name the file or the timeline", "[chrome_trace]") {
  const Graph g = chrome_trace_graph();
  const SimulationResult r = simulate(g);
  const std::string bad_dir = temp_path("daydream_no_such_dir") + "/out.json";
  CHECK_THROWS_WITH(write_chrome_trace(bad_dir, {{"baseline", &g, &r}}),
                    Catch::Contains(bad_dir) && Catch::Contains("cannot write the Chrome trace"));
  SimulationResult short_result = r;  // one task short: not a simulation of g
  short_result.start_ns.pop_back();
  short_result.end_ns.pop_back();
  CHECK_THROWS_WITH(write_chrome_trace(temp_path("daydream_unused.json"), {{"mixed", &g, &short_result}}),
                    Catch::Contains("timeline 'mixed'") && Catch::Contains("not a simulation of this graph"));
  CHECK_THROWS_AS(write_chrome_trace(temp_path("daydream_unused.json"), {{"empty", nullptr, &r}}), Error);
}

}  // namespace
}  // namespace daydream::test
