// Traces of many threads and of deep nesting (issue 18, item 4): the graph builder answers each
// wake-up question and each task's context without scanning every thread or every open range,
// so these shapes build in linear time (benchmarks/scaling measures 10^3 to 10^6). The facts
// here are exact: the faster structures must give what the scans gave.
#include <catch2/catch.hpp>

#include <string>

#include "daydream/graph.hpp"
#include "unit/graph_helpers.hpp"
#include "unit/trace_builder.hpp"

namespace {

using daydream::test::KinetoJson;

std::size_t edges_of(const daydream::Graph& g, daydream::EdgeType type) {
  std::size_t n = 0;
  for (daydream::TaskId t = 0; t < g.num_tasks(); ++t)
    for (const auto& s : g.successors(t)) n += s.edge.type == type;
  return n;
}

}  // namespace

TEST_CASE("wide: each of 20,000 threads is woken by the thread that ran just before it", "[graph][scaling]") {
  using namespace daydream;
  // Thread i runs one operator at 10 i us for 5 us, after an idle start: its waker is thread
  // i - 1's operator (ended 5 us earlier, within the wake window), found among 20,000 threads.
  constexpr int kThreads = 20'000;
  KinetoJson json;
  json.annotation("ProfilerStep#1", 0, 10.0 * kThreads + 10, 1);
  for (int i = 0; i < kThreads; ++i) json.cpu_op("aten::op", 10.0 * i + 1, 5, 2 + i);
  GraphOptions options;
  options.thread_idle_ns = 1'000;
  const Graph g = test::graph_of(json.str(), options);
  REQUIRE(g.num_tasks() == kThreads + 1);
  CHECK(edges_of(g, EdgeType::cross_thread) == kThreads - 1);
  for (TaskId t = 0; t < g.num_tasks(); ++t)
    for (const auto& s : g.successors(t))
      if (s.edge.type == EdgeType::cross_thread) CHECK(g.task(s.task).recorded_start_ns - g.task(t).recorded_start_ns == 10'000);
}

TEST_CASE("deep: 50,000 nested operators give 100,000 tasks with their innermost context", "[graph][scaling]") {
  using namespace daydream;
  constexpr int kDepth = 50'000;
  KinetoJson json;
  json.annotation("ProfilerStep#1", 0, 2.0 * kDepth + 4, 1);
  json.annotation("Optimizer.step#SGD.step", 0.5, 2.0 * kDepth + 3, 1);  // every task: update phase
  for (int k = 1; k <= kDepth; ++k) json.cpu_op("op" + std::to_string(k), k, 2.0 * (kDepth - k) + 2, 1);
  const Graph g = test::graph_of(json.str());
  const TaskId deepest = test::task_named(g, "op" + std::to_string(kDepth));
  CHECK(g.task(deepest).phase == Phase::update);
  std::size_t update = 0;
  for (TaskId t = 0; t < g.num_tasks(); ++t) update += g.task(t).phase == Phase::update;
  // Each operator before and after its child (the deepest once, 2 us), and the step's own time
  // before the first operator and after it: 2 (kDepth - 1) + 1 + 2.
  CHECK(update == 2 * kDepth + 1);
}

TEST_CASE("deep: a layer path keeps its outermost 64 layers", "[graph][layers]") {
  using namespace daydream;
  KinetoJson json;
  json.annotation("ProfilerStep#1", 0, 300, 1);
  for (int k = 1; k <= 100; ++k) json.annotation("block" + std::to_string(k), k, 2.0 * (100 - k) + 2, 1);
  json.cpu_op("aten::mm", 100.2, 1, 1);
  const Graph g = test::graph_of(json.str());
  const TaskId mm = test::task_named(g, "aten::mm");
  std::string expected = "block1";
  for (int k = 2; k <= 64; ++k) expected += "/block" + std::to_string(k);
  CHECK(g.string(g.task(mm).layer) == expected);
}
