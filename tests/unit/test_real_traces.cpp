// Tests on the real traces of ../shared/traces (DAYDREAM_SHARED_TRACES): replay fidelity,
// causality of the simulation, exact counts on a small trace, determinism, and clean import of
// every Kineto trace. When the folder is absent (CI without ../shared), every test is skipped
// with a warning.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/predict.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/simulate.hpp"
#include "shared_traces.hpp"

namespace {

namespace fs = std::filesystem;
using namespace daydream;

using test::kShared;
using test::traces_at;

// Every Kineto trace under the shared folder: JSON files that are not PyTorch execution traces
// (`et/` folders, `*_et.json.gz`).
std::vector<fs::path> all_kineto_traces() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(kShared)) {
    if (!entry.is_regular_file()) continue;
    const fs::path& p = entry.path();
    const std::string name = p.filename().string();
    const bool json = name.size() > 5 && (name.ends_with(".json") || name.ends_with(".json.gz"));
    const bool execution_trace = p.parent_path().filename() == "et" || name.find("_et.json") != std::string::npos;
    if (json && !execution_trace) files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  return files;
}

struct Replay {
  Graph graph;
  SimulationResult result;
  ReplayReport report;
};

Replay replay(const fs::path& path) {
  Replay r{build_graph(load_trace(path)), {}, {}};
  r.result = simulate(r.graph);
  r.report = make_replay_report(r.graph, r.result);
  return r;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

const fs::path kWorkers0 = "resnet50-v100-dataloader/workers0";

}  // namespace

// --- (a) replay fidelity ---------------------------------------------------------------------

TEST_CASE("real traces: every ProfilerStep replays within 2%, median within 1%", "[real][replay]") {
  SKIP_WITHOUT_SHARED_TRACES();
  struct Case {
    std::string where;
    std::size_t files;
    std::size_t steps_per_file;
  };
  // Step counts from ../shared/traces/README.md.
  const std::vector<Case> cases = {
      {"resnet50-v100-dataloader/workers0", 1, 6},
      {"resnet50-v100-dataloader/workers4", 1, 6},
      {"ddp-resnet-v100-rank0", 1, 5},
      {"ddp-convnet-a100-nccl", 1, 3},
      {"dlrm-v100-8ranks/kineto", 8, 1},
      {"cuda-sync-small/event_sync.json.gz", 1, 1},
  };
  std::vector<double> all_errors;
  for (const auto& c : cases) {
    const auto files = traces_at(c.where);
    INFO(c.where);
    REQUIRE(files.size() == c.files);
    for (const auto& file : files) {
      INFO(file.string());
      const Replay r = replay(file);
      REQUIRE(r.report.iterations.size() == c.steps_per_file);
      std::vector<double> errors;
      for (const auto& it : r.report.iterations) {
        INFO(it.name << ": measured " << it.measured_ns << " ns, simulated " << it.simulated_ns << " ns, error "
                     << 100 * it.error() << "%");
        REQUIRE(it.measured_ns > 0);
        CHECK(std::abs(it.error()) <= 0.02);
        errors.push_back(std::abs(it.error()));
      }
      CHECK(median(errors) <= 0.01);
      all_errors.insert(all_errors.end(), errors.begin(), errors.end());
    }
  }
  CHECK(all_errors.size() == 6 + 6 + 5 + 3 + 8 + 1);
  CHECK(median(all_errors) <= 0.01);
}

TEST_CASE("real traces: without step marks, iterations run between optimizer steps and replay within 0.1%",
          "[real][replay]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const std::pair<const char*, std::size_t> cases[] = {{"resnet-2080ti-sgd/resnet_kineto.json.gz", 29},
                                                       {"linear-2080ti-sgd/linear_kineto.json.gz", 39}};
  for (const auto& [where, iterations] : cases) {
    INFO(where);
    REQUIRE(fs::is_regular_file(kShared / where));
    const Replay r = replay(kShared / where);
    // Optimizer.step# markers only, no ProfilerStep: n optimizer steps give n - 1 iterations.
    CHECK(r.report.iteration_rule.measure == IterationMeasure::end_to_end);
    REQUIRE(r.report.iterations.size() == iterations);
    CHECK(r.report.iterations[0].name == "optimizer step 2");
    for (const auto& it : r.report.iterations) {
      INFO(it.name << ": measured " << it.measured_ns << " ns, simulated " << it.simulated_ns << " ns");
      CHECK(std::abs(it.error()) <= 0.001);
    }
    INFO("span: measured " << r.report.span.measured_ns << " ns, simulated " << r.report.span.simulated_ns << " ns");
    REQUIRE(r.report.span.measured_ns > 0);
    CHECK(std::abs(r.report.span.error()) <= 0.02);
  }
}

TEST_CASE("real traces: the whole run follows the steps, not a polling thread", "[real][predict]") {
  // On ddp-resnet the NCCL watchdog polls cudaEventQuery until the trace ends: with the whole run
  // taken as the simulation's makespan, amp's total stayed at 1.000x while every step got faster.
  SKIP_WITHOUT_SHARED_TRACES();
  const auto files = traces_at("ddp-resnet-v100-rank0");
  REQUIRE(files.size() == 1);
  const Predictor predictor(build_graph(load_trace(files.front().string())));
  const Prediction p = predictor.predict(parse_scenario_spec("amp"));
  const double total_speedup = double(p.baseline_total_ns) / double(p.predicted_total_ns);
  INFO("median " << p.speedup() << "x, total " << total_speedup << "x");
  CHECK(p.speedup() > 1.5);
  CHECK(total_speedup > 0.9 * p.speedup());
  CHECK(p.baseline_total_ns < predictor.baseline().makespan_ns);
}

// --- (b) causality -----------------------------------------------------------------------------

namespace {

// How late a task could end without delaying any successor (in this simulation): the least
// margin over its outgoing edges. Every unit's tasks are chained by sequential edges, so these
// edges include the next task on the task's own unit.
TimeNs slack(const Graph& graph, const SimulationResult& result, TaskId task) {
  TimeNs least = std::numeric_limits<TimeNs>::max();
  for (const auto& next : graph.successors(task)) {
    const TimeNs from = next.edge.timing == Timing::finish_to_start ? result.end_ns[task] : result.start_ns[task];
    least = std::min(least, result.start_ns[next.task] - (from + next.edge.delay_ns));
  }
  return least;
}

std::vector<TimeNs> step_times(const ReplayReport& report) {
  std::vector<TimeNs> times;
  for (const auto& it : report.iterations) times.push_back(it.simulated_ns);
  return times;
}

}  // namespace

TEST_CASE("real traces: shrinking tasks on and off the critical path (workers0)", "[real][causality]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const auto files = traces_at(kWorkers0.string());
  REQUIRE(files.size() == 1);
  const Replay base = replay(files.front());
  const Graph& graph = base.graph;
  const SimulationResult& result = base.result;
  REQUIRE(base.report.iterations.size() == 6);
  REQUIRE_FALSE(result.critical_path.empty());
  CHECK(result.end_ns[result.critical_path.back()] == result.makespan_ns);

  std::vector<char> on_path(graph.num_tasks(), 0);
  for (TaskId t : result.critical_path) on_path[t] = 1;
  const auto longest_on_path = [&](TaskKind kind) {
    TaskId best = kNoTask;
    for (TaskId t : result.critical_path) {
      const Task& task = graph.task(t);
      if (task.kind != kind || task.iteration < 0) continue;
      if (best == kNoTask || task.duration_ns > graph.task(best).duration_ns) best = t;
    }
    return best;
  };
  const auto before = step_times(base.report);

  SECTION("a long kernel on the critical path: the prediction gets shorter") {
    const TaskId kernel = longest_on_path(TaskKind::kernel);
    REQUIRE(kernel != kNoTask);
    const TimeNs duration = graph.task(kernel).duration_ns;
    const TimeNs removed = duration - duration / 2;
    INFO("kernel " << kernel << " " << graph.name(kernel) << ", " << duration << " ns, step "
                   << graph.task(kernel).iteration);
    REQUIRE(duration >= 100'000);

    Graph faster = graph;
    faster.set_duration(kernel, duration / 2);
    const SimulationResult after = simulate(faster);
    const auto after_steps = step_times(make_replay_report(faster, after));
    INFO("makespan " << result.makespan_ns << " -> " << after.makespan_ns);
    CHECK(after.makespan_ns < result.makespan_ns);
    CHECK(result.makespan_ns - after.makespan_ns <= removed);
    for (std::size_t i = 0; i < before.size(); ++i) CHECK(after_steps[i] <= before[i]);
  }

  SECTION("a kernel off the critical path with slack: the prediction does not change at all") {
    // workers0 is CPU-bound (the main thread is ~98% busy): most kernels end long before
    // anything needs them. Take the one of >= 50 us with the most slack.
    TaskId kernel = kNoTask;
    TimeNs kernel_slack = 0;
    for (TaskId t = 0; t < graph.num_tasks(); ++t) {
      const Task& task = graph.task(t);
      if (on_path[t] || task.kind != TaskKind::kernel || task.iteration < 0 || task.duration_ns < 50'000) continue;
      const TimeNs s = slack(graph, result, t);
      if (s > kernel_slack) kernel = t, kernel_slack = s;
    }
    REQUIRE(kernel != kNoTask);
    INFO("kernel " << kernel << " " << graph.name(kernel) << ", " << graph.task(kernel).duration_ns
                   << " ns, slack " << kernel_slack << " ns");
    REQUIRE(kernel_slack >= 100'000);

    Graph faster = graph;
    faster.set_duration(kernel, faster.task(kernel).duration_ns / 2);
    const SimulationResult after = simulate(faster);
    CHECK(after.makespan_ns == result.makespan_ns);
    CHECK(step_times(make_replay_report(faster, after)) == before);
    // Nothing else moves: every start, and every end but the kernel's own.
    std::size_t moved = 0;
    for (TaskId t = 0; t < graph.num_tasks(); ++t)
      if (after.start_ns[t] != result.start_ns[t] || (t != kernel && after.end_ns[t] != result.end_ns[t])) ++moved;
    CHECK(moved == 0);
    CHECK(after.end_ns[kernel] == result.end_ns[kernel] - (graph.task(kernel).duration_ns - faster.task(kernel).duration_ns));
  }

  SECTION("a CPU task on the critical path: its step and the makespan shrink by exactly as much") {
    // The main thread is the bottleneck from the first step to the GPU tail of the last one:
    // everything after the task on the path is bound, through the thread and launches, to its
    // end, so d ns less CPU time is d ns less step time and makespan; other steps only move.
    const TaskId cpu = longest_on_path(TaskKind::cpu);
    REQUIRE(cpu != kNoTask);
    const TimeNs removed = graph.task(cpu).duration_ns / 2;
    const auto step = static_cast<std::size_t>(graph.task(cpu).iteration);
    INFO("cpu task " << cpu << " " << graph.name(cpu) << ", " << graph.task(cpu).duration_ns << " ns, step " << step);
    REQUIRE(removed >= 100'000);

    Graph faster = graph;
    faster.set_duration(cpu, faster.task(cpu).duration_ns - removed);
    const SimulationResult after = simulate(faster);
    const auto after_steps = step_times(make_replay_report(faster, after));
    CHECK(after.makespan_ns < result.makespan_ns);
    CHECK(result.makespan_ns - after.makespan_ns == removed);
    for (std::size_t i = 0; i < before.size(); ++i) {
      INFO("step " << i << ": " << before[i] << " -> " << after_steps[i]);
      CHECK(after_steps[i] == (i == step ? before[i] - removed : before[i]));
    }
  }
}

// --- (c) exact counts on a small trace ---------------------------------------------------------

TEST_CASE("real traces: event_sync_multi_stream, task and edge counts", "[real][graph]") {
  SKIP_WITHOUT_SHARED_TRACES();
  // Read off the file (149 events): 3 kernels and 3 memsets (cudaMemsetAsync then
  // cudaLaunchKernel) on streams 20, 28 and 24; 39 cuda_runtime calls; 5 cuda_sync records:
  // 3 "Event Sync" (on cudaEventQuery calls), 1 "Stream Wait Event" (stream 24 waits for the
  // event recorded by correlation 1385 on stream 20) and 1 "Context Sync" (cudaDeviceSynchronize,
  // correlation 1424); 2 instant events.
  const fs::path file = kShared / "cuda-sync-small/event_sync_multi_stream.json.gz";
  REQUIRE(fs::is_regular_file(file));
  const Trace trace = load_trace(file);
  std::array<std::int64_t, 10> kinds{};
  for (const auto& e : trace.events) ++kinds[static_cast<std::size_t>(e.kind)];
  CHECK(kinds[static_cast<std::size_t>(EventKind::kernel)] == 3);
  CHECK(kinds[static_cast<std::size_t>(EventKind::memset)] == 3);
  CHECK(kinds[static_cast<std::size_t>(EventKind::memcpy)] == 0);
  CHECK(kinds[static_cast<std::size_t>(EventKind::runtime)] == 39);
  CHECK(kinds[static_cast<std::size_t>(EventKind::cuda_sync)] == 5);
  CHECK(kinds[static_cast<std::size_t>(EventKind::cpu_op)] == 6);
  CHECK(trace.report.get("instant_events") == 2);

  const Graph graph = build_graph(trace);
  const auto tasks = graph.task_counts();
  CHECK(tasks[static_cast<std::size_t>(TaskKind::kernel)] == 3);
  CHECK(tasks[static_cast<std::size_t>(TaskKind::memset)] == 3);
  CHECK(tasks[static_cast<std::size_t>(TaskKind::memcpy)] == 0);
  CHECK(tasks[static_cast<std::size_t>(TaskKind::communication)] == 0);
  CHECK(tasks[static_cast<std::size_t>(TaskKind::runtime)] == 39);

  // Three streams, a memset then a kernel on each.
  std::vector<std::int64_t> streams;
  for (const auto& unit : graph.units())
    if (unit.kind == UnitKind::gpu_stream) streams.push_back(unit.thread);
  std::sort(streams.begin(), streams.end());
  CHECK(streams == std::vector<std::int64_t>{20, 24, 28});

  const auto edges = graph.edge_counts();
  CHECK(edges[static_cast<std::size_t>(EdgeType::launch)] == 6);
  CHECK(edges[static_cast<std::size_t>(EdgeType::gpu_sequential)] == 3);
  CHECK(edges[static_cast<std::size_t>(EdgeType::cross_stream)] >= 1);
  CHECK(edges[static_cast<std::size_t>(EdgeType::sync)] >= 1);

  const auto find_task = [&](TaskKind kind, std::int64_t correlation) {
    for (TaskId t = 0; t < graph.num_tasks(); ++t)
      if (graph.task(t).kind == kind && graph.task(t).correlation == correlation) return t;
    return kNoTask;
  };
  const auto has_edge = [&](TaskId from, TaskId to, EdgeType type) {
    for (const auto& next : graph.successors(from))
      if (next.task == to && next.edge.type == type && !next.edge.inferred) return true;
    return false;
  };
  // Stream Wait Event: the kernel of stream 20 (correlation 27, launched before the event record
  // 1385) holds back the first task launched on stream 24 after the wait (memset 1411).
  const TaskId kernel20 = find_task(TaskKind::kernel, 27);
  const TaskId memset24 = find_task(TaskKind::memset, 1411);
  REQUIRE(kernel20 != kNoTask);
  REQUIRE(memset24 != kNoTask);
  CHECK(has_edge(kernel20, memset24, EdgeType::cross_stream));
  // Context Sync: cudaDeviceSynchronize waits for the last task of every stream.
  const TaskId device_sync = find_task(TaskKind::runtime, 1424);
  REQUIRE(device_sync != kNoTask);
  CHECK(graph.name(device_sync) == "cudaDeviceSynchronize");
  CHECK(graph.task(device_sync).blocking);
  for (std::int64_t correlation : {27, 57, 1413}) {
    INFO("kernel correlation " << correlation);
    const TaskId kernel = find_task(TaskKind::kernel, correlation);
    REQUIRE(kernel != kNoTask);
    CHECK(has_edge(kernel, device_sync, EdgeType::sync));
  }

  // The simulation honours them.
  const SimulationResult result = simulate(graph);
  CHECK(result.start_ns[memset24] >= result.end_ns[kernel20]);
  for (std::int64_t correlation : {27, 57, 1413})
    CHECK(result.end_ns[device_sync] >= result.end_ns[find_task(TaskKind::kernel, correlation)]);
}

// --- (d) determinism -------------------------------------------------------------------------

TEST_CASE("real traces: the replay report is byte-identical across independent runs", "[real][determinism]") {
  SKIP_WITHOUT_SHARED_TRACES();
  // Two threads, two streams, NCCL kernels and inferred cross-thread edges: much to get wrong.
  const auto files = traces_at("ddp-convnet-a100-nccl");
  REQUIRE(files.size() == 1);
  const std::string first = to_json(replay(files.front()).report);
  const std::string second = to_json(replay(files.front()).report);
  CHECK(first.size() > 100);
  CHECK(first == second);
}

// --- (e) every Kineto trace imports cleanly -----------------------------------------------------

TEST_CASE("real traces: every shared Kineto trace loads without unsupported phases", "[real][ingest]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const auto files = all_kineto_traces();
  // 2 resnet50 + 1 ddp-resnet + 1 ddp-convnet + 8 dlrm + 3 cuda-sync-small + resnet + linear
  // + patterns/sidestream-hold.
  CHECK(files.size() == 18);
  for (const auto& file : files) {
    INFO(file.string());
    Trace trace;
    REQUIRE_NOTHROW(trace = load_trace(file));
    CHECK_FALSE(trace.events.empty());
    const bool legacy = file.string().find("resnet50-v100-dataloader") != std::string::npos;
    CHECK(trace.metadata.format == (legacy ? "kineto-json-legacy" : "kineto-json"));
    for (const auto& stat : trace.report.stats()) {
      INFO(stat.key << " x" << stat.count);
      CHECK(stat.key.rfind("unsupported_phase:", 0) != 0);
    }
  }
}
