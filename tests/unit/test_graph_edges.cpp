// Exact graphs built from small hand-written traces: every task, edge type, timing and delay.
#include <catch2/catch.hpp>

#include <algorithm>

#include "daydream/simulate.hpp"
#include "unit/graph_helpers.hpp"
#include "unit/trace_builder.hpp"

using namespace daydream;
using test::edge_between;
using test::task_named;
using test::us;

namespace {

// One thread, one stream: an operator launching a kernel, a second launch that queues behind it
// (stream-bound), and a device synchronize that waits for the second kernel.
std::string one_thread_trace(bool legacy) {
  return test::KinetoJson(legacy)
      .annotation("ProfilerStep#1", 0, 110)
      .cpu_op("aten::add", 10, 30)
      .runtime("cudaLaunchKernel", 20, 10, 1)
      .kernel("k1", 35, 45, 1)
      .runtime("cudaLaunchKernel", 42, 4, 2)
      .kernel("k2", 81, 10, 2)
      .runtime("cudaDeviceSynchronize", 60, 40, 3)
      .str();
}

}  // namespace

TEST_CASE("one thread: segments, launch, gpu_sequential and sync edges (both dialects)", "[graph]") {
  const bool legacy = GENERATE(false, true);
  CAPTURE(legacy);
  const Graph g = test::graph_of(one_thread_trace(legacy));

  // CPU time is cut at every boundary: ProfilerStep and aten::add own the time between calls.
  REQUIRE(g.num_tasks() == 11);
  const std::vector<std::pair<std::string, TimeNs>> cpu = {
      {"ProfilerStep#1", 10 * us}, {"aten::add", 10 * us},       {"cudaLaunchKernel", 10 * us},
      {"aten::add", 10 * us},      {"ProfilerStep#1", 2 * us},   {"cudaLaunchKernel", 4 * us},
      {"ProfilerStep#1", 14 * us}, {"cudaDeviceSynchronize", 9 * us}, {"ProfilerStep#1", 10 * us}};
  for (TaskId t = 0; t < cpu.size(); ++t) {
    CAPTURE(t);
    CHECK(g.name(t) == cpu[t].first);
    CHECK(g.task(t).duration_ns == cpu[t].second);
    CHECK(g.units()[g.task(t).unit].kind == UnitKind::cpu_thread);
  }
  const TaskId k1 = task_named(g, "k1"), k2 = task_named(g, "k2");
  CHECK(g.task(k1).kind == TaskKind::kernel);
  CHECK(g.task(k1).op_name == g.task(task_named(g, "aten::add")).name);  // kernel -> its CPU operator
  CHECK(g.units()[g.task(k2).unit].name == "GPU 0 stream 7");

  // Calibration: the idle-stream launch took 15 us; the queued kernel started 1 us after k1.
  CHECK(g.calibration().launch_latency_ns[static_cast<std::size_t>(TaskKind::kernel)] == 15 * us);
  CHECK(g.calibration().gpu_gap_ns == 1 * us);

  CHECK(g.num_edges() == 12);
  CHECK(test::count_of(g, EdgeType::cpu_sequential) == 8);
  for (TaskId t = 0; t + 1 < 9; ++t) CHECK(edge_between(g, t, t + 1)->delay_ns == 0);
  const auto launch1 = edge_between(g, 2, k1);
  REQUIRE(launch1);
  CHECK(launch1->type == EdgeType::launch);
  CHECK(launch1->timing == Timing::start_to_start);
  CHECK(launch1->delay_ns == 15 * us);
  CHECK(edge_between(g, 5, k2)->type == EdgeType::launch);
  const auto stream = edge_between(g, k1, k2);
  REQUIRE(stream);
  CHECK(stream->type == EdgeType::gpu_sequential);
  CHECK(stream->delay_ns == 1 * us);  // stream-bound: the recorded gap is kept
  const auto sync = edge_between(g, k2, 7);
  REQUIRE(sync);
  CHECK(sync->type == EdgeType::sync);
  CHECK_FALSE(sync->inferred);
  CHECK(g.task(7).blocking);

  // Replay reproduces every recorded start and the step exactly.
  const auto r = simulate(g);
  CHECK(r.start_ns[k1] == 35 * us);
  CHECK(r.start_ns[k2] == 81 * us);
  CHECK(r.start_ns[7] == 91 * us);  // the sync returns 9 us after k2 ends
  CHECK(r.end_ns[8] == 110 * us);
  REQUIRE(g.iterations().size() == 1);
  CHECK(g.iterations()[0].name == "ProfilerStep#1");
  CHECK(g.iterations()[0].measured_ns == 110 * us);
  for (TaskId t = 0; t < g.num_tasks(); ++t) CHECK(g.task(t).iteration == 0);
}

TEST_CASE("cross_stream edge from a recorded Stream Wait Event, and inferred without it", "[graph]") {
  const bool recorded = GENERATE(true, false);
  CAPTURE(recorded);
  test::KinetoJson json;
  json.runtime("cudaLaunchKernel", 0, 5, 1)
      .kernel("producer", 10, 40, 1, 20)
      .runtime("cudaEventRecord", 6, 1, 2)
      .runtime("cudaStreamWaitEvent", 8, 1, 3)
      .runtime("cudaLaunchKernel", 10, 2, 4)
      .kernel("consumer", 51, 9, 4, 24);
  if (recorded) json.cuda_sync("Stream Wait Event", 8, 1, 3, 24, 20, 2);
  const Graph g = test::graph_of(json.str());
  const auto edge = edge_between(g, task_named(g, "producer"), task_named(g, "consumer"));
  REQUIRE(edge);
  CHECK(edge->type == EdgeType::cross_stream);
  CHECK(edge->inferred == !recorded);
  CHECK(test::count_of(g, EdgeType::cross_stream) == 1);
  const auto r = simulate(g);
  CHECK(r.start_ns[task_named(g, "consumer")] == 50 * us);  // held back by the producer, not its launch
}

TEST_CASE("a contradicted inferred stream wait is dropped and counted", "[graph]") {
  const Graph g = test::graph_of(test::KinetoJson()
                                     .runtime("cudaLaunchKernel", 0, 5, 1)
                                     .kernel("producer", 10, 40, 1, 20)
                                     .runtime("cudaStreamWaitEvent", 8, 1, 3)
                                     .runtime("cudaLaunchKernel", 10, 2, 4)
                                     .kernel("consumer", 20, 9, 4, 24)  // ran while the producer ran
                                     .str());
  CHECK(test::count_of(g, EdgeType::cross_stream) == 0);
  CHECK(g.report().get("cross_stream_contradicted") == 1);
}

TEST_CASE("blocking copy is split into issue and wait, stream sync inferred from launches", "[graph]") {
  const Graph g = test::graph_of(test::KinetoJson()
                                     .runtime("cudaLaunchKernel", 0, 5, 1)
                                     .kernel("k1", 10, 30, 1)
                                     .runtime("cudaMemcpyAsync", 41, 19, 2)
                                     .memcpy("Memcpy DtoH (Device -> Pageable)", 45, 5, 2)
                                     .runtime("cudaStreamSynchronize", 62, 8, 3)
                                     .str());
  const TaskId issue = task_named(g, "cudaMemcpyAsync"), wait = task_named(g, "cudaMemcpyAsync (wait)");
  const TaskId copy = task_named(g, "Memcpy DtoH (Device -> Pageable)"), sync = task_named(g, "cudaStreamSynchronize");
  CHECK(g.task(copy).kind == TaskKind::memcpy);
  CHECK(g.task(issue).duration_ns == 4 * us);  // one memcpy launch latency
  CHECK(g.task(wait).duration_ns == 10 * us);  // return after the copy ended at 50
  CHECK(g.task(sync).duration_ns == 8 * us);   // nothing left to wait for
  CHECK(edge_between(g, issue, copy)->type == EdgeType::launch);
  CHECK_FALSE(edge_between(g, copy, wait)->inferred);
  CHECK(edge_between(g, copy, wait)->type == EdgeType::sync);
  CHECK(edge_between(g, copy, sync)->inferred);  // stream from the thread's last launch
  CHECK(edge_between(g, task_named(g, "cudaLaunchKernel"), issue)->delay_ns == 36 * us);  // CPU gap kept
  CHECK(test::count_of(g, EdgeType::sync) == 2);
  CHECK(g.report().get("sync_stream_inferred") == 1);
  const auto r = simulate(g);
  CHECK(r.start_ns[copy] == 45 * us);
  CHECK(r.end_ns[wait] == 60 * us);
  CHECK(r.end_ns[sync] == 70 * us);
}

TEST_CASE("pageable host-to-device copies do not block the CPU", "[graph]") {
  const Graph g = test::graph_of(test::KinetoJson()
                                     .runtime("cudaMemcpyAsync", 0, 30, 1)
                                     .memcpy("Memcpy HtoD (Pageable -> Device)", 25, 10, 1)
                                     .str());
  CHECK(g.num_tasks() == 2);
  const auto launch = edge_between(g, task_named(g, "cudaMemcpyAsync"), task_named(g, "Memcpy HtoD (Pageable -> Device)"));
  REQUIRE(launch);
  CHECK(launch->delay_ns == 25 * us);  // the copy waits for the CPU to stage the data inside the call
}

TEST_CASE("cross_thread: autograd hand-off and the main thread's wait inside ProfilerStep", "[graph]") {
  const Graph g = test::graph_of(test::KinetoJson()
                                     .annotation("ProfilerStep#1", 0, 400, 1)
                                     .cpu_op("aten::mm", 10, 40, 1)
                                     .runtime("cudaLaunchKernel", 20, 10, 1, 1)
                                     .kernel("k1", 35, 20, 1)
                                     .cpu_op("Optimizer.step", 300, 50, 1)
                                     .cpu_op("MmBackward", 100, 150, 2)
                                     .runtime("cudaLaunchKernel", 110, 10, 2, 2)
                                     .kernel("k2", 125, 75, 2)
                                     .str());
  REQUIRE(g.num_tasks() == 12);
  const TaskId mm_tail = task_named(g, "aten::mm", 1), step_wait = task_named(g, "ProfilerStep#1", 1);
  const TaskId backward_head = task_named(g, "MmBackward", 0), backward_tail = task_named(g, "MmBackward", 1);
  CHECK(test::count_of(g, EdgeType::cross_thread) == 2);
  const auto spawn = edge_between(g, mm_tail, backward_head);  // main hands backward to the autograd thread
  REQUIRE(spawn);
  CHECK(spawn->type == EdgeType::cross_thread);
  CHECK(spawn->delay_ns == 50 * us);
  const auto join = edge_between(g, backward_tail, step_wait);  // and waits for it inside the step
  REQUIRE(join);
  CHECK(join->type == EdgeType::cross_thread);
  CHECK(g.task(step_wait).duration_ns == 50 * us);  // 250 us owned by the step, 200 us of it waiting
  CHECK(test::count_of(g, EdgeType::cpu_sequential) == 8);
  CHECK(test::count_of(g, EdgeType::gpu_sequential) == 1);
  CHECK(test::count_of(g, EdgeType::launch) == 2);

  auto r = simulate(g);
  CHECK(r.end_ns[task_named(g, "ProfilerStep#1", 2)] == 400 * us);
  // What-if: backward 100 us shorter -> the step is 100 us shorter.
  Graph faster = g;
  faster.set_duration(backward_tail, faster.task(backward_tail).duration_ns - 100 * us);
  r = simulate(faster);
  CHECK(r.end_ns[task_named(g, "ProfilerStep#1", 2)] == 300 * us);
}

TEST_CASE("cross_thread: a range that ended before its candidate waker did not wait for it", "[graph]") {
  // Two overlapping ranges on two threads, ending 0.8 us apart (within the contradiction
  // tolerance): only the one ending later can have waited for the other.
  const Graph g = test::graph_of(test::KinetoJson()
                                     .cpu_op("main_head", 0, 10, 1)
                                     .cpu_op("forward", 10, 290, 1)
                                     .cpu_op("loader_head", 0, 10, 2)
                                     .cpu_op("loader", 20, 280.8, 2)
                                     .str());
  const TaskId forward = task_named(g, "forward"), loader = task_named(g, "loader");
  CHECK(test::count_of(g, EdgeType::cross_thread) == 1);
  REQUIRE(edge_between(g, forward, loader));
  CHECK_FALSE(edge_between(g, loader, forward));
  CHECK(g.report().get("cross_thread_contradicted") == 1);
  CHECK(g.report().get("cycle_edges_dropped") == 0);
  CHECK(g.task(forward).duration_ns == 290 * us);  // no wait: it keeps its recorded time
}

namespace {

/// A thread that resumes at 200 us after being idle, a producer thread whose one task ends at
/// `produced_at` (then idle: a hand-off), and a busy thread with an 8 us task every 10 us (the
/// last ending at or before the resumption ends at 193 us).
Graph handoff_trace(double produced_at) {
  test::KinetoJson trace;
  trace.cpu_op("woken_head", 0, 10, 1).cpu_op("woken", 200, 10, 1).cpu_op("produce", 100, produced_at - 100, 2);
  for (int k = 0; k < 30; ++k) trace.cpu_op("busy" + std::to_string(k), 5 + 10 * k, 8, 3);
  return test::graph_of(trace.str());
}

}  // namespace

TEST_CASE("cross_thread: a hand-off shortly before a busy thread's latest task is the waker", "[graph]") {
  // The busy thread always has a task that ended just before any resumption; a producer that
  // went idle 13 us before it (less than thread_idle_ns) is what handed the work over.
  const Graph g = handoff_trace(180);
  const TaskId woken = task_named(g, "woken");
  REQUIRE(edge_between(g, task_named(g, "produce"), woken));
  CHECK(edge_between(g, task_named(g, "produce"), woken)->type == EdgeType::cross_thread);
  CHECK(edge_between(g, task_named(g, "produce"), woken)->delay_ns == 20 * us);
  CHECK_FALSE(edge_between(g, task_named(g, "busy18"), woken));
  CHECK(test::count_of(g, EdgeType::cross_thread) == 2);  // and the producer's start, after busy9
  CHECK(g.report().get("wakers_by_handoff") == 1);

  // A producer done 73 us before the busy thread's latest task is too early: the latest wins.
  const Graph late = handoff_trace(120);
  const TaskId late_woken = task_named(late, "woken");
  CHECK_FALSE(edge_between(late, task_named(late, "produce"), late_woken));
  REQUIRE(edge_between(late, task_named(late, "busy18"), late_woken));
  CHECK(edge_between(late, task_named(late, "busy18"), late_woken)->delay_ns == 7 * us);
  CHECK(late.report().get("wakers_by_handoff") == 0);
}

TEST_CASE("safety net: a cycle the rules close loses its most contradicted inferred edge", "[graph]") {
  // Two threads resume after an idle gap within the tolerance of each other's end: each is taken
  // as woken by the other (a after b: 1.5 us back in time; b after a: 0.5 us).
  const Graph g = test::graph_of(test::KinetoJson()
                                     .cpu_op("a_head", 0, 5, 1)
                                     .cpu_op("a", 100, 1, 1)
                                     .cpu_op("b_head", 0, 5, 2)
                                     .cpu_op("b", 100.5, 1, 2)
                                     .str());
  const TaskId a = task_named(g, "a"), b = task_named(g, "b");
  CHECK(g.find_cycle().empty());
  CHECK(g.report().get("cycle_edges_dropped") == 1);
  CHECK_FALSE(edge_between(g, b, a));  // the more contradicted one
  REQUIRE(edge_between(g, a, b));
  CHECK(edge_between(g, a, b)->type == EdgeType::cross_thread);
  const auto& stats = g.report().stats();
  const auto dropped = std::find_if(stats.begin(), stats.end(), [](const auto& s) { return s.key == "cycle_edges_dropped"; });
  REQUIRE(dropped != stats.end());
  CHECK(dropped->severity == Severity::error);
  CHECK(dropped->description.find("inferred cross_thread edge 'b' -> 'a'") != std::string::npos);
  const auto r = simulate(g);  // the graph stays usable
  CHECK(r.start_ns[b] >= r.end_ns[a]);
}

TEST_CASE("collectives are communication tasks with communication edges", "[graph]") {
  const Graph g = test::graph_of(test::KinetoJson()
                                     .runtime("cudaLaunchKernel", 0, 5, 1)
                                     .kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 10, 90, 1, 40)
                                     .runtime("cudaStreamSynchronize", 10, 95, 2)
                                     .cuda_sync("Stream Sync", 10, 95, 2, 40)
                                     .str());
  const TaskId nccl = task_named(g, "ncclKernel_AllReduce_RING_LL_Sum_float");
  CHECK(g.task(nccl).kind == TaskKind::communication);
  CHECK(edge_between(g, task_named(g, "cudaLaunchKernel"), nccl)->type == EdgeType::communication);
  const auto wait = edge_between(g, nccl, task_named(g, "cudaStreamSynchronize"));
  REQUIRE(wait);
  CHECK(wait->type == EdgeType::communication);
  CHECK_FALSE(wait->inferred);  // the cuda_sync record names stream 40
  CHECK(test::count_of(g, EdgeType::communication) == 2);
}

TEST_CASE("GPU tasks launched before the trace started are roots at their recorded time", "[graph]") {
  const Graph g = test::graph_of(test::KinetoJson().cpu_op("aten::relu", 0, 10).kernel("early", 3, 4, 99).str());
  const TaskId early = task_named(g, "early");
  CHECK(g.in_degree(early) == 0);
  CHECK(g.task(early).release_ns == 3 * us);
  CHECK(g.report().get("gpu_task_without_launch") == 1);
  CHECK(simulate(g).start_ns[early] == 3 * us);
}

TEST_CASE("a launch blocked by a full launch queue waits for the GPU task that freed a slot", "[graph]") {
  Graph g = test::graph_of(test::KinetoJson()
                               .runtime("cudaLaunchKernel", 0, 5, 1)
                               .kernel("k1", 10, 190, 1)
                               .runtime("cudaLaunchKernel", 6, 5, 2)
                               .kernel("k2", 200, 200, 2)
                               .runtime("cudaLaunchKernel", 20, 185, 3)  // returns 5 us after k1 ends
                               .kernel("k3", 400, 50, 3)
                               .str());
  const TaskId k1 = task_named(g, "k1"), blocked = task_named(g, "cudaLaunchKernel", 2);
  const auto edge = edge_between(g, k1, blocked);
  REQUIRE(edge);
  CHECK(edge->type == EdgeType::sync);
  CHECK(edge->inferred);
  CHECK(g.task(blocked).blocking);
  CHECK(g.task(blocked).duration_ns == 5 * us);
  CHECK(g.report().get("launch_queue_waits") == 1);
  CHECK(simulate(g).end_ns[blocked] == 205 * us);
  g.set_duration(k1, 90 * us);  // a faster GPU frees the slot earlier
  CHECK(simulate(g).end_ns[blocked] == 105 * us);
}

TEST_CASE("a stream wait whose event record is unknown is resolved by timing", "[graph]") {
  // Thread 2 fills stream 20 with copies and records an event (no CUDA_EVENT record names it);
  // thread 1 makes stream 24 wait. The consumer, launched at 11, starts 2 us after the last copy
  // ends: held by it, not by its launch or its (empty) stream.
  Graph g = test::graph_of(test::KinetoJson()
                               .runtime("cudaMemcpyAsync", 0, 4, 1, 2)
                               .memcpy("Memcpy HtoD (Pinned -> Device)", 5, 45, 1, 20)
                               .runtime("cudaEventRecord", 5, 1, 2, 2)
                               .runtime("cudaStreamWaitEvent", 8, 1, 3)
                               .runtime("cudaLaunchKernel", 10, 1, 4)
                               .kernel("consumer", 52, 9, 4, 24)
                               .str());
  const TaskId copy = task_named(g, "Memcpy HtoD (Pinned -> Device)"), consumer = task_named(g, "consumer");
  const auto edge = edge_between(g, copy, consumer);
  REQUIRE(edge);
  CHECK(edge->type == EdgeType::cross_stream);
  CHECK(edge->inferred);
  CHECK(g.report().get("stream_waits_from_timing") == 1);
  CHECK(simulate(g).start_ns[consumer] == 50 * us);
  g.set_duration(copy, 20 * us);  // a faster copy releases the consumer earlier
  CHECK(simulate(g).start_ns[consumer] == 25 * us);
}

TEST_CASE("a stream wait is not resolved by timing when the waiting task was not held", "[graph]") {
  const Graph g = test::graph_of(test::KinetoJson()
                                     .runtime("cudaMemcpyAsync", 0, 4, 1, 2)
                                     .memcpy("Memcpy HtoD (Pinned -> Device)", 5, 10, 1, 20)
                                     .runtime("cudaStreamWaitEvent", 8, 1, 3)
                                     .runtime("cudaLaunchKernel", 13, 1, 4)
                                     .kernel("consumer", 16, 9, 4, 24)  // right after its launch
                                     .str());
  CHECK(test::count_of(g, EdgeType::cross_stream) == 0);
  CHECK(g.report().get("stream_waits_from_timing") == 0);
}

// Thread 2 queues a copy on stream 20 (5-150 us) and records an event after it; thread 1, which
// records nothing, launches kernel k and then synchronizes on that event.
static std::string event_handover_trace(double k_duration, double sync_start, double sync_duration) {
  return test::KinetoJson()
      .runtime("cudaMemcpyAsync", 0, 4, 1, 2)
      .memcpy("Memcpy HtoD (Pinned -> Device)", 5, 145, 1, 20)
      .runtime("cudaEventRecord", 5, 1, 2, 2)
      .runtime("cudaLaunchKernel", 10, 2, 3)
      .kernel("k", 13, k_duration, 3)
      .runtime("cudaEventSynchronize", sync_start, sync_duration, 4)
      .str();
}

TEST_CASE("an event sync whose event another thread recorded is resolved by timing", "[graph]") {
  // The sync returns 5 us after the copy ends. Kernel k ends later (152 us), but no record marks
  // it, so it is not what the call awaited.
  Graph g = test::graph_of(event_handover_trace(/*k_duration=*/139, /*sync_start=*/20, /*sync_duration=*/135));
  const TaskId copy = task_named(g, "Memcpy HtoD (Pinned -> Device)"), sync = task_named(g, "cudaEventSynchronize");
  const auto edge = edge_between(g, copy, sync);
  REQUIRE(edge);
  CHECK(edge->type == EdgeType::sync);
  CHECK(edge->inferred);
  CHECK_FALSE(edge_between(g, task_named(g, "k"), sync));
  CHECK(g.task(sync).duration_ns == 5 * us);  // the return latency; the wait is the edge
  CHECK(g.report().get("event_syncs_from_timing") == 1);
  CHECK(g.report().get("event_sync_unresolved") == 0);
  const auto before = simulate(g);
  CHECK(before.end_ns[sync] == before.end_ns[copy] + 5 * us);
  g.set_duration(copy, 45 * us);  // a faster copy completes the event 100 us earlier
  CHECK(simulate(g).end_ns[sync] == before.end_ns[sync] - 100 * us);
}

TEST_CASE("a short event sync is not resolved by timing", "[graph]") {
  // The call returned 3 us after it began: the event was already complete, nothing was awaited.
  const Graph g = test::graph_of(event_handover_trace(/*k_duration=*/20, /*sync_start=*/150, /*sync_duration=*/3));
  CHECK(g.report().get("event_syncs_from_timing") == 0);
  CHECK(test::count_of(g, EdgeType::sync) == 0);
}

TEST_CASE("an async device-to-device copy call blocked by another thread's staging call waits for it", "[graph]") {
  // Thread 2 prepares (0-10 us), then stages a pageable copy until 200 us, holding the driver;
  // thread 1's device-to-device copy call blocks meanwhile and returns 5 us after it
  // (driver_lock_waits). The short launches set the median launch call (2 us) that makes both
  // calls long.
  Graph g = test::graph_of(test::KinetoJson()
                               .cpu_op("prepare", 0, 10, 2)
                               .runtime("cudaMemcpyAsync", 10, 190, 1, 2)
                               .memcpy("Memcpy HtoD (Pageable -> Device)", 199, 2, 1, 20)
                               .runtime("cudaLaunchKernel", 2, 2, 4)
                               .kernel("k0", 5, 1, 4)
                               .runtime("cudaLaunchKernel", 6, 2, 5)
                               .kernel("k1", 9, 1, 5)
                               .runtime("cudaLaunchKernel", 10, 2, 2)
                               .kernel("k", 14, 20, 2)
                               .runtime("cudaMemcpyAsync", 20, 185, 3)
                               .memcpy("Memcpy DtoD (Device -> Device)", 206, 30, 3)
                               .str());
  const TaskId holder = task_named(g, "cudaMemcpyAsync"), blocked = task_named(g, "cudaMemcpyAsync", 1);
  CHECK(g.holds(blocked).lock_held_by == holder);
  CHECK_FALSE(edge_between(g, holder, blocked));  // a lock, not an order
  CHECK(g.task(blocked).duration_ns == 5 * us);
  CHECK(g.report().get("driver_lock_waits") == 1);
  const TaskId copy = task_named(g, "Memcpy DtoD (Device -> Device)");
  auto r = simulate(g);
  CHECK(r.end_ns[blocked] == 205 * us);
  CHECK(r.binding[blocked] == holder);
  CHECK(r.lock_waits == 1);
  CHECK(r.lock_wait_ns == 180 * us);
  CHECK(r.start_ns[copy] >= 200 * us);  // the copy is queued only once the call got the driver

  SECTION("a holder that comes later under a what-if does not hold the call back") {
    g.set_duration(task_named(g, "prepare"), 30 * us);  // thread 2 reaches its call at 30 us
    r = simulate(g);
    CHECK(r.end_ns[blocked] == 25 * us);
    CHECK(r.lock_waits == 0);
  }
  SECTION("a shorter hold releases the call earlier") {
    g.set_duration(holder, 90 * us);
    CHECK(simulate(g).end_ns[blocked] == 105 * us);
  }
}

TEST_CASE("a pageable copy call that returned right after an earlier pageable copy waited for it", "[graph]") {
  // The driver stages pageable copies through its own pinned buffers: call 2 blocks until copy 1
  // (held on the GPU until 200 us) is done, returns 2 us later, and its own copy follows.
  Graph g = test::graph_of(test::KinetoJson()
                               .runtime("cudaLaunchKernel", 0, 3, 1)
                               .kernel("k", 4, 195, 1, 20)
                               .runtime("cudaMemcpyAsync", 4, 4, 2)
                               .memcpy("Memcpy HtoD (Pageable -> Device)", 200, 10, 2, 20)
                               .runtime("cudaMemcpyAsync", 10, 202, 3)
                               .memcpy("Memcpy HtoD (Pageable -> Device)", 215, 2, 3, 20)
                               .str());
  const TaskId first = task_named(g, "Memcpy HtoD (Pageable -> Device)");
  const TaskId second = task_named(g, "Memcpy HtoD (Pageable -> Device)", 1);
  const TaskId call = task_named(g, "cudaMemcpyAsync", 1);
  const auto edge = edge_between(g, first, call);
  REQUIRE(edge);
  CHECK(edge->type == EdgeType::sync);
  CHECK(edge->inferred);
  CHECK(g.task(call).duration_ns == 2 * us);  // the staging after the wait
  CHECK(edge_between(g, call, second)->timing == Timing::finish_to_start);
  CHECK(g.report().get("pageable_copy_staging_waits") == 1);
  auto r = simulate(g);
  CHECK(r.end_ns[call] == 212 * us);
  CHECK(r.start_ns[second] == 215 * us);
  g.set_duration(task_named(g, "k"), 95 * us);  // the GPU frees the first copy 100 us earlier
  r = simulate(g);
  CHECK(r.end_ns[call] == 112 * us);
  CHECK(r.start_ns[second] == 115 * us);
}

TEST_CASE("a staged pageable copy queued behind a kernel of its stream waits for that kernel, not a fixed delay",
          "[graph]") {
  // As above, but copy 2 goes to stream 30, where kernel k2 runs until 400 us: it starts 2 us
  // after k2, long after its call returned (212 us). That wait is k2's, through the stream; the
  // launch edge from the call's return keeps only what neither explains (nothing here).
  Graph g = test::graph_of(test::KinetoJson()
                               .runtime("cudaLaunchKernel", 0, 3, 1)
                               .kernel("k", 4, 195, 1, 20)
                               .runtime("cudaLaunchKernel", 3, 1, 4)
                               .kernel("k2", 150, 250, 4, 30)
                               .runtime("cudaMemcpyAsync", 4, 4, 2)
                               .memcpy("Memcpy HtoD (Pageable -> Device)", 200, 10, 2, 20)
                               .runtime("cudaMemcpyAsync", 10, 202, 3)
                               .memcpy("Memcpy HtoD (Pageable -> Device)", 402, 2, 3, 30)
                               .str());
  const TaskId call = task_named(g, "cudaMemcpyAsync", 1);
  const TaskId second = task_named(g, "Memcpy HtoD (Pageable -> Device)", 1);
  REQUIRE(g.report().get("pageable_copy_staging_waits") == 1);
  CHECK(edge_between(g, call, second)->timing == Timing::finish_to_start);
  CHECK(edge_between(g, call, second)->delay_ns == 0);
  CHECK(simulate(g).start_ns[second] == 402 * us);
  g.set_duration(task_named(g, "k2"), 150 * us);  // k2 ends at 300 us
  CHECK(simulate(g).start_ns[second] == 302 * us);
}
