// Scheduling-aware cross_thread inference (lib/graph/cross_thread.cpp): with a thread's off-CPU
// stretches (Trace::off_cpu), an idle gap is a wait only if the thread was switched out in it, and
// it resumed at its last switch-in; kept gaps are counted with their time. Background threads,
// ThreadSchedule's two queries, and ImportReport::count_time with the stats JSON it feeds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daydream/report/stats.hpp"
#include "graph/build_context.hpp"
#include "unit/graph_helpers.hpp"
#include "unit/trace_builder.hpp"

using namespace daydream;
using test::edge_between;
using test::task_named;
using test::us;

namespace {

std::uint32_t cpu_lane(const Trace& trace, std::int64_t tid) {
  for (std::uint32_t l = 0; l < trace.lanes.size(); ++l)
    if (trace.lanes[l].kind == LaneKind::cpu_thread && trace.lanes[l].thread == tid) return l;
  FAIL("no lane for thread " << tid);
  return 0;
}

using Stretches = std::vector<std::pair<double, double>>;  // (switched out, switched in), in µs

/// The trace with scheduling data for thread `tid`: its off-CPU stretches (none: it kept
/// running); nullopt for no scheduling data at all.
Trace scheduled(const std::string& json, std::int64_t tid, const std::optional<Stretches>& off_us) {
  Trace trace = parse_kineto_json(json, "test.json");
  if (!off_us) return trace;
  const std::uint32_t lane = cpu_lane(trace, tid);
  trace.scheduled_lanes.push_back(lane);
  for (const auto& [from, to] : *off_us)
    trace.off_cpu.push_back({lane, static_cast<TimeNs>(from * us), static_cast<TimeNs>(to * us)});
  return trace;
}

const ImportStat* stat_named(const Graph& g, std::string_view key) {
  for (const auto& s : g.report().stats())
    if (s.key == key) return &s;
  return nullptr;
}

std::int64_t cross_thread_into(const Graph& g, TaskId to) {
  std::int64_t n = 0;
  for (TaskId t = 0; t < g.num_tasks(); ++t)
    for (const auto& s : g.successors(t)) n += s.task == to && s.edge.type == EdgeType::cross_thread;
  return n;
}

// Main thread 1 runs `a`, is idle for 190 us, then runs `b`. Worker thread 2 runs `w` (ends at
// 150 us) and `w2` (ends at 180 us) in the meantime.
std::string main_and_worker() {
  return test::KinetoJson()
      .cpu_op("a", 0, 10, 1)
      .cpu_op("b", 200, 10, 1)
      .cpu_op("w", 50, 100, 2)
      .cpu_op("w2", 160, 20, 2)
      .str();
}

}  // namespace

TEST_CASE("ThreadSchedule: last switch-in at from < t <= to and off-CPU time within from..to", "[graph][scheduling]") {
  ThreadSchedule s;
  s.known = true;
  s.off = {{10, 20}, {30, 40}, {50, 60}};
  CHECK(s.last_switch_in(0, 100) == std::optional<TimeNs>(60));
  CHECK(s.last_switch_in(0, 60) == std::optional<TimeNs>(60));  // `to` included
  CHECK(s.last_switch_in(0, 59) == std::optional<TimeNs>(40));
  CHECK(s.last_switch_in(39, 45) == std::optional<TimeNs>(40));
  CHECK(s.last_switch_in(0, 20) == std::optional<TimeNs>(20));
  CHECK_FALSE(s.last_switch_in(40, 49));  // `from` excluded
  CHECK_FALSE(s.last_switch_in(0, 15));   // switched out at 10, still out at 15
  CHECK_FALSE(s.last_switch_in(60, 100));
  CHECK(s.off_cpu_within(0, 100) == 30);
  CHECK(s.off_cpu_within(15, 35) == 10);
  CHECK(s.off_cpu_within(12, 18) == 6);
  CHECK(s.off_cpu_within(25, 55) == 15);
  CHECK(s.off_cpu_within(20, 30) == 0);
  CHECK(s.off_cpu_within(0, 10) == 0);
  CHECK(s.off_cpu_within(60, 100) == 0);
  CHECK(s.off_cpu_within(40, 40) == 0);
  const ThreadSchedule none;
  CHECK_FALSE(none.last_switch_in(0, 100));
  CHECK(none.off_cpu_within(0, 100) == 0);
}

TEST_CASE("scheduling: a switched-out thread is woken by the task that ended before its switch-in",
          "[graph][scheduling]") {
  SECTION("switched out at 15 us, back in at 152 us: woken by w (ended at 150 us), not by w2") {
    const Graph g = build_graph(scheduled(main_and_worker(), 1, Stretches{{15, 152}}));
    const TaskId b = task_named(g, "b");
    const auto wake = edge_between(g, task_named(g, "w"), b);
    REQUIRE(wake);
    CHECK(wake->type == EdgeType::cross_thread);
    CHECK(wake->timing == Timing::finish_to_start);
    CHECK(wake->inferred);
    CHECK(wake->delay_ns == 50 * us);  // recorded wake-up latency: b's start - w's end
    CHECK_FALSE(edge_between(g, task_named(g, "w2"), b));
    CHECK(cross_thread_into(g, b) == 1);
    CHECK(edge_between(g, task_named(g, "a"), b)->delay_ns == 0);  // the idle time was waiting
    CHECK(g.report().get("unexplained_waits") == 0);
    CHECK(g.report().get("unexplained_gaps") == 0);
  }
  SECTION("without scheduling data the resumption is b's start: the latest end before it, w2") {
    const Graph g = build_graph(scheduled(main_and_worker(), 1, std::nullopt));
    const auto wake = edge_between(g, task_named(g, "w2"), task_named(g, "b"));
    REQUIRE(wake);
    CHECK(wake->type == EdgeType::cross_thread);
    CHECK(wake->delay_ns == 20 * us);
    CHECK_FALSE(edge_between(g, task_named(g, "w"), task_named(g, "b")));
  }
  SECTION("a switch-in stamped just after b's start (two clocks) still counts as the resumption") {
    // Back in at 200.5 us, b recorded at 200 us: without the tolerance the last switch-in before
    // b would be none, and an earlier wake-up would be dated to an earlier switch-in.
    const Graph g = build_graph(scheduled(main_and_worker(), 1, Stretches{{15, 100}, {120, 200.5}}));
    const auto wake = edge_between(g, task_named(g, "w2"), task_named(g, "b"));
    REQUIRE(wake);
    CHECK(wake->delay_ns == 20 * us);
    CHECK_FALSE(edge_between(g, task_named(g, "w"), task_named(g, "b")));
  }
  SECTION("never switched out: the gap was CPU work, kept as the cpu_sequential delay") {
    const Graph g = build_graph(scheduled(main_and_worker(), 1, Stretches{}));
    const TaskId b = task_named(g, "b");
    CHECK(cross_thread_into(g, b) == 0);
    const auto seq = edge_between(g, task_named(g, "a"), b);
    REQUIRE(seq);
    CHECK(seq->type == EdgeType::cpu_sequential);
    CHECK(seq->delay_ns == 190 * us);
    CHECK(g.report().get("unexplained_waits") == 0);  // no off-CPU time in it
    CHECK(g.report().get("unexplained_gaps") == 0);   // the thread's scheduling is known
  }
  SECTION("a switch-in long before the next event still dates the wake-up") {
    // b runs 2.85 ms after w ended (beyond wake_window_ns) but the thread was back at 152 us.
    const std::string json =
        test::KinetoJson().cpu_op("a", 0, 10, 1).cpu_op("b", 3000, 10, 1).cpu_op("w", 50, 100, 2).str();
    const Graph with = build_graph(scheduled(json, 1, Stretches{{15, 152}}));
    const auto wake = edge_between(with, task_named(with, "w"), task_named(with, "b"));
    REQUIRE(wake);
    CHECK(wake->type == EdgeType::cross_thread);
    CHECK(wake->delay_ns == 2850 * us);
    const Graph without = build_graph(scheduled(json, 1, std::nullopt));
    CHECK(cross_thread_into(without, task_named(without, "b")) == 0);
    CHECK(edge_between(without, task_named(without, "a"), task_named(without, "b"))->delay_ns == 2990 * us);
    CHECK(without.report().get("unexplained_gaps") == 1);
    CHECK(without.report().total_ns("unexplained_gaps") == 2990 * us);
  }
}

TEST_CASE("scheduling: a wait with no waker is kept and counted with its off-CPU time", "[graph][scheduling]") {
  // Thread 2's only task ends before thread 1 goes idle: nothing in the trace woke thread 1.
  const std::string json = test::KinetoJson().cpu_op("a", 0, 10, 1).cpu_op("b", 200, 10, 1).cpu_op("w", 0, 5, 2).str();
  SECTION("switched out twice in the gap: unexplained_waits, total = the off-CPU time") {
    const Graph g = build_graph(scheduled(json, 1, Stretches{{12, 60}, {100, 195}}));
    const TaskId b = task_named(g, "b");
    CHECK(cross_thread_into(g, b) == 0);
    CHECK(edge_between(g, task_named(g, "a"), b)->delay_ns == 190 * us);
    const ImportStat* waits = stat_named(g, "unexplained_waits");
    REQUIRE(waits);
    CHECK(waits->count == 1);
    CHECK(waits->total_ns == 143 * us);  // 48 + 95 us, not the 190 us gap
    CHECK(waits->severity == Severity::info);
    CHECK(waits->first_event == static_cast<std::int64_t>(g.task(b).source_event));
    CHECK(g.report().get("unexplained_gaps") == 0);
  }
  SECTION("switched out for no more than thread_idle_ns: not a wait worth counting") {
    const Graph g = build_graph(scheduled(json, 1, Stretches{{100, 150}}));
    CHECK(g.report().get("unexplained_waits") == 0);
    CHECK(g.report().get("unexplained_gaps") == 0);
  }
  SECTION("no scheduling data: unexplained_gaps, total = the gap") {
    const Graph g = build_graph(scheduled(json, 1, std::nullopt));
    CHECK(g.report().get("unexplained_gaps") == 1);
    CHECK(g.report().total_ns("unexplained_gaps") == 190 * us);
    CHECK(g.report().get("unexplained_waits") == 0);
  }
}

TEST_CASE("background threads: a thread that launches GPU work is not one, a polling thread is",
          "[graph][scheduling]") {
  // Thread 3 has no operators but launches a kernel; thread 4 only polls an event, ending last.
  const Graph g = test::graph_of(test::KinetoJson()
                                     .cpu_op("a", 0, 10, 1)
                                     .cpu_op("b", 200, 10, 1)
                                     .runtime("cudaLaunchKernel", 150, 5, 1, 3)
                                     .kernel("k", 160, 10, 1)
                                     .runtime("cudaEventQuery", 170, 5, 2, 4)
                                     .str());
  const TaskId b = task_named(g, "b"), launch = task_named(g, "cudaLaunchKernel");
  const TaskId query = task_named(g, "cudaEventQuery");
  CHECK_FALSE(g.units()[g.task(launch).unit].background);
  CHECK(g.units()[g.task(query).unit].background);
  CHECK_FALSE(g.units()[g.task(b).unit].background);
  CHECK(g.report().get("background_threads") == 1);
  // b is woken by the launching thread's call, not by the later poll.
  const auto wake = edge_between(g, launch, b);
  REQUIRE(wake);
  CHECK(wake->type == EdgeType::cross_thread);
  CHECK(wake->delay_ns == 45 * us);
  CHECK_FALSE(edge_between(g, query, b));
  CHECK(cross_thread_into(g, query) == 0);
  for (const auto& s : g.successors(query)) CHECK(s.edge.type != EdgeType::cross_thread);
}

TEST_CASE("ImportReport::count_time adds up time, and stats JSON shows it as total_ms", "[ingest][report]") {
  ImportReport r;
  r.count_time(stats::unexplained_waits, 100'000, 7);
  r.count_time(stats::unexplained_waits, 50'000, 9);
  r.count(stats::unexplained_waits);
  r.count(stats::launches_without_gpu_record, 3);
  CHECK(r.get("unexplained_waits") == 3);
  CHECK(r.total_ns("unexplained_waits") == 150'000);
  CHECK(r.total_ns("launches_without_gpu_record") == 0);
  CHECK(r.total_ns("absent") == 0);
  REQUIRE(r.stats().size() == 2);
  CHECK(r.stats()[0].severity == Severity::info);
  CHECK(r.stats()[0].description == stats::stat(stats::unexplained_waits).description);
  CHECK(r.stats()[0].first_event == 7);

  GraphStats graph_stats;
  graph_stats.report = r.stats();
  const std::string json = to_json(graph_stats);
  CHECK(json.find(R"({"key": "unexplained_waits", "severity": "info", "count": 3, "first_event": 7, "total_ms": 0.15, )"
                  R"("description": "stretches in which)") != std::string::npos);
  CHECK(json.find(R"({"key": "launches_without_gpu_record", "severity": "data_loss", "count": 1, "first_event": 3, )"
                  R"("description": "launch and copy calls)") != std::string::npos);
}
