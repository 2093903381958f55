// The discrete-event engine on hand-built graphs: exact start times, schedule policies,
// critical path, and refusals (cycles, negative durations).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "daydream/error.hpp"
#include "daydream/simulate.hpp"

using namespace daydream;

namespace {

struct Fixture {
  Graph g;
  UnitId cpu = g.add_unit({UnitKind::cpu_thread, "cpu", 1, 1, });
  UnitId gpu = g.add_unit({UnitKind::gpu_stream, "gpu", 0, 7});
  UnitId channel = g.add_unit({UnitKind::comm_channel, "net", 0, 0});

  TaskId add(UnitId unit, TimeNs duration, TimeNs recorded_start = 0, TaskKind kind = TaskKind::kernel) {
    Task t;
    t.unit = unit;
    t.kind = kind;
    t.duration_ns = duration;
    t.recorded_start_ns = recorded_start;
    t.name = g.intern(fmt::format("t{}", g.num_tasks()));  // not "t" + to_string: GCC 12 -Wrestrict false positive
    return g.add_task(t);
  }
  void fs(TaskId a, TaskId b, TimeNs delay = 0, EdgeType type = EdgeType::cpu_sequential) {
    g.add_edge(a, b, {type, Timing::finish_to_start, delay, false});
  }
  void ss(TaskId a, TaskId b, TimeNs delay) { g.add_edge(a, b, {EdgeType::launch, Timing::start_to_start, delay, false}); }
};

}  // namespace

TEST_CASE("finish-to-start and start-to-start delays give exact start times", "[simulate]") {
  Fixture f;
  const TaskId a = f.add(f.cpu, 10), b = f.add(f.cpu, 5), k = f.add(f.gpu, 20), s = f.add(f.cpu, 3);
  f.fs(a, b, 2);                         // b at 12
  f.ss(a, k, 4);                         // k at a.start + 4 = 4
  f.fs(k, s, 0, EdgeType::sync);         // s waits for k (ends 24) ...
  f.fs(b, s, 1);                         // ... and for b (ends 17) + 1
  f.g.set_release(a, 100);          // a root starts at its release
  const auto r = simulate(f.g);
  CHECK(r.start_ns[a] == 100);
  CHECK(r.start_ns[b] == 112);
  CHECK(r.start_ns[k] == 104);
  CHECK(r.start_ns[s] == 124);
  CHECK(r.makespan_ns == 127);
  CHECK(r.critical_path == std::vector<TaskId>{a, k, s});
  CHECK(r.cause[s] == StartCause::dependency);
  CHECK(r.binding[s] == k);
  CHECK(r.units[f.cpu].busy_ns == 18);
  CHECK(r.units[f.gpu].tasks == 1);
}

TEST_CASE("a unit runs one task at a time, the schedule policy picks which", "[simulate]") {
  Fixture f;
  // Two ready transfers compete for one channel; only the second one unblocks the consumer.
  const TaskId big = f.add(f.channel, 100, /*recorded_start=*/0, TaskKind::communication);
  const TaskId small = f.add(f.channel, 10, /*recorded_start=*/1, TaskKind::communication);
  const TaskId consumer = f.add(f.gpu, 5);
  f.fs(small, consumer, 0, EdgeType::communication);

  const auto fifo = simulate(f.g);  // trace order: big first
  CHECK(fifo.start_ns[big] == 0);
  CHECK(fifo.start_ns[small] == 100);
  CHECK(fifo.cause[small] == StartCause::unit_busy);
  CHECK(fifo.binding[small] == big);
  CHECK(fifo.end_ns[consumer] == 115);

  const PriorityPolicy shortest_first([](const Graph& g, TaskId t) { return double(g.task(t).duration_ns); }, "sjf");
  const auto sjf = simulate(f.g, shortest_first);
  CHECK(sjf.start_ns[small] == 0);
  CHECK(sjf.start_ns[big] == 10);
  CHECK(sjf.end_ns[consumer] == 15);
  CHECK(sjf.makespan_ns == 110);
}

TEST_CASE("equal priorities and equal times are broken deterministically", "[simulate]") {
  Fixture f;
  std::vector<TaskId> tasks;
  for (int i = 0; i < 50; ++i) tasks.push_back(f.add(f.channel, 3 + i % 4, /*recorded_start=*/0));
  const auto first = simulate(f.g), second = simulate(f.g);
  CHECK(first.start_ns == second.start_ns);
  for (std::size_t i = 1; i < tasks.size(); ++i) CHECK(first.start_ns[tasks[i]] > first.start_ns[tasks[i - 1]]);
}

TEST_CASE("a cycle is refused with the tasks named", "[simulate]") {
  Fixture f;
  const TaskId a = f.add(f.cpu, 1), b = f.add(f.cpu, 1), c = f.add(f.gpu, 1);
  f.fs(a, b);
  f.fs(b, c);
  f.fs(c, b);
  CHECK(f.g.find_cycle().size() == 2);
  CHECK_THROWS_WITH(simulate(f.g), Catch::Contains("cycle") && Catch::Contains("'t1'"));
  CHECK_THROWS_AS(f.g.topological_order(), Error);
  CHECK_THROWS_WITH(f.g.add_edge(a, a, {}), Catch::Contains("itself"));
}

TEST_CASE("negative durations and delays are refused", "[simulate]") {
  Fixture f;
  const TaskId a = f.add(f.cpu, 5), b = f.add(f.cpu, 5);
  f.fs(a, b, -1);
  CHECK_THROWS_WITH(simulate(f.g), Catch::Contains("negative delay"));
  Fixture h;
  h.add(h.cpu, -5);
  CHECK_THROWS_WITH(simulate(h.g), Catch::Contains("negative duration"));
}

TEST_CASE("topological order is Kahn's with the lowest ready id first, at every size", "[simulate]") {
  // Random DAGs whose edges also run from high ids to low ones (tasks a what-if appends), so that
  // many tasks become ready below the point the id scan has passed.
  std::mt19937 rng(3);
  for (const int n : {1, 2, 63, 64, 65, 700, 20000}) {
    INFO(n << " tasks");
    Fixture f;
    for (int i = 0; i < n; ++i) f.add(f.cpu, 1);
    const auto rank = [&] {  // a random topological rank per task: edges go from lower to higher
      std::vector<TaskId> r(static_cast<std::size_t>(n));
      std::iota(r.begin(), r.end(), TaskId{0});
      std::shuffle(r.begin(), r.end(), rng);
      return r;
    }();
    std::vector<TaskId> by_rank(rank.size());
    for (std::size_t t = 0; t < rank.size(); ++t) by_rank[rank[t]] = static_cast<TaskId>(t);
    std::uniform_int_distribution<int> span(1, 40);
    for (int k = 0; k + 1 < n; ++k)
      for (int e = 0; e < 2; ++e) {
        const int to = std::min(n - 1, k + span(rng));
        f.g.add_edge(by_rank[static_cast<std::size_t>(k)], by_rank[static_cast<std::size_t>(to)],
                     {EdgeType::cross_thread, Timing::finish_to_start, 0, true});
      }
    // The contract, plainly: repeatedly take the lowest id whose predecessors are all taken.
    std::vector<std::size_t> waiting(static_cast<std::size_t>(n), 0);
    for (const auto& e : f.g.edges()) ++waiting[e.to];
    std::set<TaskId> ready;
    for (TaskId t = 0; t < static_cast<TaskId>(n); ++t)
      if (waiting[t] == 0) ready.insert(t);
    std::vector<TaskId> expected;
    while (!ready.empty()) {
      const TaskId t = *ready.begin();
      ready.erase(ready.begin());
      expected.push_back(t);
      for (const auto& next : f.g.successors(t))
        if (--waiting[next.task] == 0) ready.insert(next.task);
    }
    CHECK(f.g.topological_order() == expected);
  }
}

TEST_CASE("topological order respects every edge", "[simulate]") {
  Fixture f;
  const TaskId a = f.add(f.cpu, 1), b = f.add(f.gpu, 1), c = f.add(f.cpu, 1), d = f.add(f.gpu, 1);
  f.fs(c, a);
  f.fs(a, b);
  f.fs(d, b);
  const auto order = f.g.topological_order();
  auto pos = [&](TaskId t) { return std::find(order.begin(), order.end(), t) - order.begin(); };
  CHECK(pos(c) < pos(a));
  CHECK(pos(a) < pos(b));
  CHECK(pos(d) < pos(b));
}
