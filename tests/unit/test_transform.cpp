// The transformation primitives on small graphs: exact edges, durations and simulated times.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <random>

#include "daydream/analyze.hpp"
#include "daydream/error.hpp"
#include "daydream/layers.hpp"
#include "daydream/simulate.hpp"
#include "daydream/transform.hpp"
#include "unit/graph_helpers.hpp"
#include "unit/trace_builder.hpp"
#include "graph/graph_access.hpp"

using namespace daydream;
using test::edge_between;
using test::task_named;
using test::us;

namespace {

// cpu: a -> b -> c (gaps 1 us); a launches k1, b launches k2 (stream: k1 -> k2); c waits for k2.
struct Pipeline {
  Graph g;
  UnitId cpu = g.add_unit({UnitKind::cpu_thread, "cpu", 1, 1});
  UnitId gpu = g.add_unit({UnitKind::gpu_stream, "gpu", 0, 7});
  TaskId a = add("a", cpu, TaskKind::runtime, 10 * us, 0);
  TaskId b = add("b", cpu, TaskKind::runtime, 10 * us, 11 * us);
  TaskId c = add("c", cpu, TaskKind::runtime, 5 * us, 22 * us);
  TaskId k1 = add("sgemm_k1", gpu, TaskKind::kernel, 40 * us, 2 * us);
  TaskId k2 = add("relu_k2", gpu, TaskKind::kernel, 20 * us, 42 * us);

  Pipeline() {
    edge(a, b, EdgeType::cpu_sequential, 1 * us);
    edge(b, c, EdgeType::cpu_sequential, 1 * us);
    g.add_edge(a, k1, {EdgeType::launch, Timing::start_to_start, 2 * us, false});
    g.add_edge(b, k2, {EdgeType::launch, Timing::start_to_start, 2 * us, false});
    edge(k1, k2, EdgeType::gpu_sequential, 0);
    edge(k2, c, EdgeType::sync, 0);
  }
  TaskId add(const char* name, UnitId unit, TaskKind kind, TimeNs duration, TimeNs recorded_start) {
    Task t;
    t.name = g.intern(name);
    t.unit = unit;
    t.kind = kind;
    t.duration_ns = duration;
    t.recorded_start_ns = recorded_start;
    return g.add_task(t);
  }
  void edge(TaskId from, TaskId to, EdgeType type, TimeNs delay) {
    g.add_edge(from, to, {type, Timing::finish_to_start, delay, false});
  }
};

}  // namespace

TEST_CASE("baseline pipeline simulates as designed", "[transform]") {
  Pipeline p;
  const auto r = simulate(p.g);
  CHECK(r.start_ns[p.k1] == 2 * us);
  CHECK(r.start_ns[p.k2] == 42 * us);  // waits for k1 (ends 42), launched at 13
  CHECK(r.start_ns[p.c] == 62 * us);   // waits for k2
  CHECK(r.makespan_ns == 67 * us);
}

TEST_CASE("select composes kind, name, unit, phase, iteration and predicates", "[transform]") {
  Pipeline p;
  GraphAccess::record(p.g, p.k2).phase = Phase::backward;
  GraphAccess::record(p.g, p.k2).iteration = 3;
  CHECK(p.g.select().size() == 5);
  CHECK(p.g.select(TaskFilter().kind(TaskKind::kernel)).ids() == std::vector<TaskId>{p.k1, p.k2});
  Graph without_k1 = p.g;  // kinds alone: decided from the task columns, removed tasks left out
  without_k1.remove(p.k1);
  CHECK(without_k1.select(TaskFilter().kind(TaskKind::kernel)).ids() == std::vector<TaskId>{p.k2});
  CHECK(without_k1.select(TaskFilter().kind(TaskKind::kernel).kind(TaskKind::runtime)).ids() ==
        std::vector<TaskId>{p.a, p.b, p.c, p.k2});
  CHECK(p.g.select(TaskFilter().kind(TaskKind::kernel).name("gemm")).ids() == std::vector<TaskId>{p.k1});
  CHECK(p.g.select(TaskFilter().kind(TaskKind::kernel).name_not("gemm")).ids() == std::vector<TaskId>{p.k2});
  CHECK(p.g.select(TaskFilter().name("^a$").name("^c$")).ids() == std::vector<TaskId>{p.a, p.c});  // repeated = or
  CHECK(p.g.select(TaskFilter().unit(p.cpu)).size() == 3);
  CHECK(p.g.select(TaskFilter().unit_kind(UnitKind::gpu_stream)).size() == 2);
  CHECK(p.g.select(TaskFilter().phase(Phase::backward)).ids() == std::vector<TaskId>{p.k2});
  CHECK(p.g.select(TaskFilter().iteration(3)).ids() == std::vector<TaskId>{p.k2});
  CHECK(p.g.select(TaskFilter().layer(".")).empty());  // no task has a layer
  const auto long_tasks = p.g.select(TaskFilter().where([](const Graph& g, TaskId t) { return g.task(t).duration_ns > 15 * us; }));
  CHECK(long_tasks.ids() == std::vector<TaskId>{p.k1, p.k2});
  CHECK(long_tasks.filter(TaskFilter().name("relu")).ids() == std::vector<TaskId>{p.k2});
  CHECK(p.g.select(TaskFilter().name("(?i)SGEMM")).ids() == std::vector<TaskId>{p.k1});  // (?i): ignore case
  CHECK(p.g.select(TaskFilter().name("SGEMM")).empty());
  CHECK_THROWS_WITH(p.g.select(TaskFilter().name("(")), Catch::Contains("invalid name pattern '('"));
  CHECK_THROWS_WITH(check_pattern("(?i)(", "layer"), Catch::Contains("invalid layer pattern"));
}

TEST_CASE("scale, shrink and set_duration change durations exactly, bad factors are refused", "[transform]") {
  Pipeline p;
  auto kernels = p.g.select(TaskFilter().kind(TaskKind::kernel));
  kernels.scale(1.0 / 3);
  CHECK(p.g.task(p.k1).duration_ns == 13333);  // 40000 / 3 rounded to the nearest ns
  CHECK(p.g.task(p.k2).duration_ns == 6667);
  kernels.shrink(7000);
  CHECK(p.g.task(p.k1).duration_ns == 6333);
  CHECK(p.g.task(p.k2).duration_ns == 0);  // never below zero
  kernels.set_duration(1 * us);
  CHECK(kernels.total_duration_ns() == 2 * us);
  CHECK_THROWS_WITH(kernels.scale(std::nan("")), Catch::Contains("finite number >= 0"));
  CHECK_THROWS_AS(kernels.scale(-1), Error);
  CHECK_THROWS_AS(kernels.scale(INFINITY), Error);
  CHECK_THROWS_WITH(kernels.set_duration(-5), Catch::Contains("negative duration"));
  CHECK_THROWS_AS(kernels.shrink(-1), Error);
  CHECK(p.g.task(p.k1).duration_ns == 1 * us);  // a refused change leaves durations as they were
  // A factor only the second kernel cannot take: refused whole, the first kernel unscaled too.
  p.g.set_duration(p.k2, 1000 * us);
  CHECK_THROWS_WITH(kernels.scale(1e8), Catch::Contains("longer than one day"));
  CHECK(p.g.task(p.k1).duration_ns == 1 * us);
  CHECK(p.g.task(p.k2).duration_ns == 1000 * us);
  kernels.set_duration(1 * us);
  const auto r = simulate(p.g);
  CHECK(r.start_ns[p.c] == 22 * us);  // the GPU no longer holds c back
}

TEST_CASE("insert on a new communication channel between a kernel and a CPU task", "[transform]") {
  Pipeline p;
  const UnitId net = p.g.add_unit({UnitKind::comm_channel, "net", 0, 0});
  NewTask allreduce;
  allreduce.name = "allreduce";
  allreduce.unit = net;
  allreduce.duration_ns = 30 * us;
  allreduce.after = {p.k1};
  allreduce.before = {p.c};
  const TaskId x = p.g.insert(allreduce);
  CHECK(p.g.name(x) == "allreduce");
  CHECK(p.g.task(x).kind == TaskKind::communication);
  CHECK(edge_between(p.g, p.k1, x)->type == EdgeType::communication);
  CHECK(edge_between(p.g, x, p.c)->type == EdgeType::communication);
  CHECK(p.g.find_unit("net") == net);
  const auto r = simulate(p.g);
  CHECK(r.start_ns[x] == 42 * us);
  CHECK(r.end_ns[x] == 72 * us);
  CHECK(r.start_ns[p.c] == 72 * us);  // now waits for the all-reduce, not k2 (ends 62)
  CHECK(r.makespan_ns == 77 * us);
}

TEST_CASE("insert into a chain on one unit splits the sequential edge", "[transform]") {
  Pipeline p;
  NewTask pause;
  pause.name = "python overhead";
  pause.kind = TaskKind::cpu;
  pause.unit = p.cpu;
  pause.duration_ns = 4 * us;
  pause.after = {p.a};
  pause.before = {p.b};
  const TaskId x = p.g.insert(pause);
  CHECK_FALSE(edge_between(p.g, p.a, p.b));
  CHECK(edge_between(p.g, p.a, x)->type == EdgeType::cpu_sequential);
  CHECK(edge_between(p.g, p.a, x)->delay_ns == 1 * us);  // a's gap goes first
  CHECK(edge_between(p.g, x, p.b)->delay_ns == 0);
  const auto r = simulate(p.g);
  CHECK(r.start_ns[x] == 11 * us);
  CHECK(r.start_ns[p.b] == 15 * us);
}

TEST_CASE("a run of inserts, each after the last, between two tasks keeps the topological ranks", "[transform]") {
  // A replaced block inserts its tasks this way (fused_adam:kernels=2000: 36,000 of them). Each
  // insert whose rank found no room made the next check sort the whole graph again.
  Pipeline p;
  GraphAccess::prepare_for_copies(p.g);
  REQUIRE(GraphAccess::ranks_valid(p.g));
  TaskId last = p.a;
  for (int i = 0; i < 5000; ++i) {
    NewTask step = NewTask::of("fused", TaskKind::cpu, 1 * us, -1, Phase::unknown);
    step.unit = p.cpu;
    step.after = {last};
    step.before = {p.b};
    last = p.g.insert(step);
    REQUIRE(GraphAccess::ranks_valid(p.g));
  }
  const auto r = simulate(p.g);
  CHECK(r.start_ns[p.b] == (10 + 1 + 5000) * us);  // a, its 1 us gap, the 5,000 inserted, in a row
  CHECK_THROWS_AS(p.g.connect(p.b, last, {EdgeType::cpu_sequential}), Error);  // still a cycle
}

TEST_CASE("an insert that would close a cycle is refused and leaves the graph unchanged", "[transform]") {
  Pipeline p;
  const auto tasks = p.g.num_tasks(), edges = p.g.num_edges();
  NewTask loop;
  loop.name = "loop";
  loop.unit = p.cpu;
  loop.after = {p.c};
  loop.before = {p.a};
  CHECK_THROWS_WITH(p.g.insert(loop), Catch::Contains("cycle") && Catch::Contains("task 0 'a'") &&
                                          Catch::Contains("task 2 'c'"));
  CHECK(p.g.num_tasks() == tasks);
  CHECK(p.g.num_edges() == edges);
  CHECK_THROWS_WITH(p.g.connect(p.k2, p.a, {EdgeType::sync}), Catch::Contains("would create a cycle"));
  p.g.connect(p.a, p.c, {EdgeType::cpu_sequential, Timing::finish_to_start, 50 * us, false});  // forward: fine
  CHECK(simulate(p.g).start_ns[p.c] == 62 * us);
}

namespace {

/// Whether `to` is reachable from `from` (a plain search over the graph as it is).
bool reaches(const Graph& g, TaskId from, TaskId to) {
  std::vector<TaskId> stack{from};
  std::vector<bool> seen(g.num_tasks());
  while (!stack.empty()) {
    const TaskId v = stack.back();
    stack.pop_back();
    if (v == to) return true;
    g.visit_successors(v, [&](TaskId w, const Edge&) {
      if (!seen[w]) seen[w] = true, stack.push_back(w);
      return true;
    });
  }
  return false;
}

}  // namespace

// connect() keeps the topological ranks it checks edges against by reordering only the tasks
// between an edge's ends (Pearce-Kelly), insert() ranks a task with no successors just above
// its predecessors: neither may ever accept an edge that closes a cycle or refuse one that does not.
TEST_CASE("connect and insert refuse exactly the edges that close a cycle, over random edits", "[transform]") {
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    Graph g;
    const UnitId unit = g.add_unit({UnitKind::comm_channel, "c", 0, 0});
    const auto pick = [&] { return static_cast<TaskId>(rng() % g.num_tasks()); };
    for (int i = 0; i < 30; ++i) {
      Task t;
      t.unit = unit;
      t.kind = TaskKind::communication;
      t.duration_ns = 1;
      g.add_task(t);
    }
    for (int i = 0; i < 40; ++i) {  // a random DAG: edges from lower to higher ids
      const TaskId a = pick(), b = pick();
      if (a < b) g.add_edge(a, b, {EdgeType::communication});
    }
    for (int step = 0; step < 150; ++step) {
      const TaskId a = pick(), b = pick();
      if (a == b || g.removed(a) || g.removed(b)) continue;
      const bool closes = reaches(g, b, a);
      INFO("seed " << seed << " step " << step << ": " << a << " -> " << b);
      if (rng() % 3 == 0) {  // a new task after a, before b (or after a only)
        NewTask task = NewTask::of("new", TaskKind::communication, 1);
        task.unit = unit;
        task.after = {a};
        if (rng() % 2 == 0) task.before = {b};
        const bool refused = !task.before.empty() && closes;
        if (refused) CHECK_THROWS_WITH(g.insert(task), Catch::Contains("cycle"));
        else CHECK_NOTHROW(g.insert(task));
      } else if (closes) {
        CHECK_THROWS_WITH(g.connect(a, b, {EdgeType::communication}), Catch::Contains("would create a cycle"));
      } else {
        CHECK_NOTHROW(g.connect(a, b, {EdgeType::communication}));
      }
    }
    CHECK(g.find_cycle().empty());
    CHECK(g.topological_order().size() == g.num_tasks());
  }
}

TEST_CASE("remove bridges every predecessor to every successor with the delays kept", "[transform]") {
  // p1, p2 -> x -> s1, s2 on one unit-free layout (four units), then x removed.
  Graph g;
  std::vector<TaskId> t;
  for (const char* name : {"p1", "p2", "x", "s1", "s2"}) {
    const UnitId u = g.add_unit({UnitKind::cpu_thread, name, 1, static_cast<std::int64_t>(t.size())});
    Task task;
    task.name = g.intern(name);
    task.unit = u;
    task.duration_ns = 10 * us;
    t.push_back(g.add_task(task));
  }
  const TaskId p1 = t[0], p2 = t[1], x = t[2], s1 = t[3], s2 = t[4];
  g.set_duration(p2, 30 * us);
  g.add_edge(p1, x, {EdgeType::cross_thread, Timing::finish_to_start, 1 * us, false});
  g.add_edge(p2, x, {EdgeType::cross_thread, Timing::start_to_start, 2 * us, false});
  g.add_edge(x, s1, {EdgeType::cross_thread, Timing::finish_to_start, 3 * us, false});
  g.add_edge(x, s2, {EdgeType::cross_thread, Timing::finish_to_start, 4 * us, true});
  g.remove(x);
  CHECK(g.removed(x));
  CHECK(g.num_live_tasks() == 4);
  CHECK(g.in_degree(x) == 0);
  CHECK(g.out_degree(x) == 0);
  CHECK(g.num_edges() == 4);
  CHECK(edge_between(g, p1, s1)->delay_ns == 4 * us);
  CHECK(edge_between(g, p1, s2)->delay_ns == 5 * us);
  CHECK(edge_between(g, p1, s2)->inferred);
  CHECK(edge_between(g, p2, s1)->timing == Timing::start_to_start);
  CHECK(edge_between(g, p2, s1)->delay_ns == 5 * us);
  const auto r = simulate(g);
  CHECK(r.start_ns[x] == -1);
  CHECK(r.start_ns[s1] == 14 * us);  // p1 ends 10 + 1 + 3; p2's start + 2 + 3 = 5 is earlier
  CHECK(r.start_ns[s2] == 15 * us);
  CHECK(g.task_counts()[static_cast<std::size_t>(TaskKind::cpu)] == 4);
  CHECK(g.select().size() == 4);
  CHECK_THROWS_WITH(g.remove(x), Catch::Contains("task 2 'x' was removed"));
  CHECK_THROWS_WITH(g.connect(p1, x, {}), Catch::Contains("was removed"));
  CHECK_THROWS_AS(g.remove(99), Error);
}

TEST_CASE("remove_all removes in the order given, or refuses changing nothing", "[transform][remove]") {
  Pipeline one_by_one, at_once;
  for (TaskId t : {one_by_one.b, one_by_one.k1, one_by_one.a}) one_by_one.g.remove(t);
  at_once.g.remove_all({at_once.b, at_once.k1, at_once.a});
  CHECK(at_once.g.fingerprint() == one_by_one.g.fingerprint());
  CHECK(at_once.g.num_live_tasks() == 2);
  CHECK(at_once.g.predecessors(at_once.k2).size() == one_by_one.g.predecessors(one_by_one.k2).size());

  Pipeline p;
  const std::uint64_t before = p.g.fingerprint();
  CHECK_THROWS_WITH(p.g.remove_all({p.a, p.b, p.a}), Catch::Contains("named twice"));
  CHECK_THROWS_WITH(p.g.remove_all({p.a, 99}), Catch::Contains("no task 99"));
  TaskSet calls = p.g.select(TaskFilter().kind(TaskKind::runtime));  // a, b and c
  p.g.remove(p.c);
  const std::uint64_t without_c = p.g.fingerprint();
  CHECK_THROWS_WITH(p.g.remove_all({p.a, p.c}), Catch::Contains("'c' was removed"));
  CHECK_THROWS_WITH(calls.remove(), Catch::Contains("'c' was removed"));  // a and b stay too
  CHECK(p.g.fingerprint() == without_c);
  CHECK(p.g.fingerprint() != before);
  CHECK(p.g.num_live_tasks() == 4);
}

TEST_CASE("remove inside CPU and GPU chains keeps their gaps", "[transform]") {
  Pipeline p;
  p.g.remove(p.b);  // the CPU call launching k2
  CHECK(edge_between(p.g, p.a, p.c)->type == EdgeType::cpu_sequential);
  CHECK(edge_between(p.g, p.a, p.c)->delay_ns == 2 * us);
  // b started 1 us after a ended and launched k2 2 us after its start: k2 >= a's end + 3 us.
  CHECK(edge_between(p.g, p.a, p.k2)->timing == Timing::finish_to_start);
  CHECK(edge_between(p.g, p.a, p.k2)->delay_ns == 3 * us);
  p.g.remove(p.k1);  // bridges a -(launch, start + 2 us)-> k2
  const auto r = simulate(p.g);
  CHECK(r.start_ns[p.k2] == 13 * us);  // no longer behind k1 (ended 42), only behind its launch point
  CHECK(r.start_ns[p.c] == 33 * us);   // waits for k2
}

TEST_CASE("FIFO and trace-order schedules order competing tasks differently", "[transform]") {
  Graph g;
  const UnitId cpu = g.add_unit({UnitKind::cpu_thread, "cpu", 1, 1});
  const UnitId net = g.add_unit({UnitKind::comm_channel, "net", 0, 0});
  auto add = [&](const char* name, UnitId unit, TimeNs duration, TimeNs recorded_start, TimeNs release) {
    Task t;
    t.name = g.intern(name);
    t.unit = unit;
    t.duration_ns = duration;
    t.recorded_start_ns = recorded_start;
    t.release_ns = release;
    return g.add_task(t);
  };
  const TaskId blocker = add("blocker", net, 3 * us, 0, 0);
  const TaskId early_ready = add("late in trace, ready at 1", net, 10 * us, 50 * us, 1 * us);
  const TaskId late_ready = add("early in trace, ready at 2", net, 10 * us, 5 * us, 2 * us);
  const TaskId consumer = add("consumer", cpu, 1 * us, 0, 0);
  g.add_edge(early_ready, consumer, {EdgeType::communication});

  const auto trace_order = simulate(g);
  CHECK(trace_order.start_ns[late_ready] == 3 * us);
  CHECK(trace_order.start_ns[early_ready] == 13 * us);
  CHECK(trace_order.end_ns[consumer] == 24 * us);
  const auto fifo = simulate(g, FifoPolicy{});
  CHECK(fifo.start_ns[early_ready] == 3 * us);
  CHECK(fifo.start_ns[late_ready] == 13 * us);
  CHECK(fifo.end_ns[consumer] == 14 * us);
  CHECK(fifo.start_ns[blocker] == 0);
  const PrecomputedPolicy reversed({0, 2, 1, 0});
  CHECK(simulate(g, reversed).start_ns[late_ready] == 3 * us);
  CHECK_THROWS_WITH(simulate(g, PrecomputedPolicy({1.0})), Catch::Contains("no priority for task 1"));
}

TEST_CASE("copies are independent", "[transform]") {
  Pipeline p;
  Graph copy = p.g;
  copy.select(TaskFilter().kind(TaskKind::kernel)).scale(0.5);
  copy.remove(p.a);
  CHECK(p.g.task(p.k1).duration_ns == 40 * us);
  CHECK_FALSE(p.g.removed(p.a));
  CHECK(simulate(p.g).makespan_ns == 67 * us);
  CHECK(simulate(copy).makespan_ns < 67 * us);
  // The structure is shared until changed, in either direction.
  Graph second = p.g;
  p.g.remove(p.c);
  CHECK_FALSE(second.removed(p.c));
  CHECK(second.num_edges() == 6);
  CHECK(simulate(second).makespan_ns == 67 * us);
}

TEST_CASE("phases and layers come from the ranges around a task", "[transform][layers]") {
  Graph g = test::graph_of(test::KinetoJson()
                               .annotation("ProfilerStep#1", 0, 300, 1)
                               .annotation("block1", 5, 50, 1)
                               .cpu_op("aten::conv2d", 10, 20, 1)
                               .runtime("cudaLaunchKernel", 12, 5, 1, 1)
                               .kernel("implicit_gemm", 20, 30, 1)
                               .annotation("Optimizer.step#SGD.step", 200, 50, 1)
                               .runtime("cudaLaunchKernel", 210, 5, 2, 1)
                               .kernel("sgd_kernel", 220, 5, 2)
                               .cpu_op("ConvolutionBackward0", 100, 50, 2)
                               .str());
  const TaskId gemm = task_named(g, "implicit_gemm"), sgd = task_named(g, "sgd_kernel");
  CHECK(g.task(gemm).phase == Phase::forward);
  CHECK(g.string(g.task(gemm).layer) == "block1");
  CHECK(g.task(sgd).phase == Phase::update);
  CHECK(g.task(sgd).layer == 0);
  CHECK(g.task(task_named(g, "ConvolutionBackward0")).phase == Phase::backward);
  // block1's two own pieces, conv2d's two, the launch call and its kernel.
  CHECK(g.select(TaskFilter().layer("block")).size() == 6);

  // A layer file overrides: conv2d becomes "features.0", phase forward; the GPU task follows its launch.
  const auto path = std::filesystem::temp_directory_path() / "daydream_test_layers.json";
  std::ofstream(path) << R"({"layers": [{"name": "features.0", "phase": "forward", "start_us": 10, "end_us": 30, "thread": 1},
                                       {"name": "optimizer", "phase": "update", "start_us": 200, "end_us": 250, "thread": 1}]})";
  CHECK(apply_layer_file(g, path) > 0);
  CHECK(g.string(g.task(gemm).layer) == "features.0");
  CHECK(g.string(g.task(sgd).layer) == "optimizer");
  std::ofstream(path) << R"({"layers": [{"name": "x", "phase": "sideways", "start_us": 1, "end_us": 2, "thread": 1}]})";
  CHECK_THROWS_WITH(apply_layer_file(g, path), Catch::Contains("field \"phase\"") && Catch::Contains("event #0"));
  std::ofstream(path) << R"({"layers": [{"name": "x", "start_us": 5, "end_us": 2, "thread": 1}]})";
  CHECK_THROWS_WITH(apply_layer_file(g, path), Catch::Contains("ends before it starts"));
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(apply_layer_file(g, path), Catch::Contains("no such file"));
}

// --- the primitives scenarios are made of (walking by edge type, blocks) ---

TEST_CASE("neighbours by edge type, chains and launches", "[transform][primitives]") {
  Pipeline p;
  CHECK(successor(p.g, p.a, EdgeType::launch) == p.k1);
  CHECK(successor(p.g, p.a, EdgeType::cpu_sequential) == p.b);
  CHECK(successor(p.g, p.a, EdgeType::sync) == kNoTask);
  CHECK(predecessor(p.g, p.k2, EdgeType::launch) == p.b);
  CHECK(predecessor(p.g, p.k2, EdgeType::gpu_sequential) == p.k1);
  CHECK(predecessor(p.g, p.c, EdgeType::sync) == p.k2);
  CHECK(chain_next(p.g, p.b) == p.c);
  CHECK(chain_prev(p.g, p.b) == p.a);
  CHECK(chain_next(p.g, p.k2) == kNoTask);
  CHECK(launched_by(p.g, p.b) == std::vector<TaskId>{p.k2});
  CHECK(launched_by(p.g, std::vector<TaskId>{p.b, p.a, p.c}) == std::vector<TaskId>{p.k2, p.k1});
  CHECK(launching_call(p.g, p.k1) == p.a);
  const auto by_unit = tasks_by_unit(p.g);
  CHECK(by_unit[p.cpu] == std::vector<TaskId>{p.a, p.b, p.c});
  CHECK(by_unit[p.gpu] == std::vector<TaskId>{p.k1, p.k2});
}

TEST_CASE("the visitors stop when asked and see every edge in order", "[transform][primitives]") {
  Pipeline p;
  std::vector<std::pair<TaskId, EdgeType>> seen;
  const bool finished = p.g.visit_successors(p.a, [&](TaskId t, const Edge& e) {
    seen.emplace_back(t, e.type);
    return true;
  });
  CHECK(finished);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0] == std::pair(p.b, EdgeType::cpu_sequential));
  CHECK(seen[1] == std::pair(p.k1, EdgeType::launch));
  int calls = 0;
  CHECK_FALSE(p.g.visit_predecessors(p.c, [&](TaskId, const Edge&) { return ++calls, false; }));
  CHECK(calls == 1);
}

TEST_CASE("replace_block puts new tasks where the block was, keeping only the gaps around it", "[transform][primitives]") {
  Pipeline p;
  // b and its kernel k2 become one CPU task and one kernel of 5 us that takes over k2's wait by c.
  NewTask call;
  call.name = "fused call";
  call.kind = TaskKind::runtime;
  call.duration_ns = 3 * us;
  NewTask kernel;
  kernel.name = "fused kernel";
  kernel.kind = TaskKind::kernel;
  kernel.duration_ns = 5 * us;
  const auto inserted = replace_block(p.g, {p.b, p.k2}, {{p.cpu, {call}, 0, false}, {p.gpu, {kernel}, 0, true}});
  REQUIRE(inserted.size() == 2);
  const TaskId f = inserted[0].at(0), k = inserted[1].at(0);
  CHECK(p.g.removed(p.b));
  CHECK(p.g.removed(p.k2));
  CHECK(edge_between(p.g, p.a, f)->delay_ns == 1 * us);  // the gap before b
  CHECK(edge_between(p.g, f, p.c)->delay_ns == 1 * us);  // the gap after b
  CHECK(edge_between(p.g, p.k1, k)->type == EdgeType::gpu_sequential);
  CHECK(edge_between(p.g, k, p.c)->type == EdgeType::sync);  // taken over from k2
  p.g.connect(f, k, {EdgeType::launch, Timing::start_to_start, 2 * us, false});
  const auto r = simulate(p.g);
  CHECK(r.start_ns[f] == 11 * us);
  CHECK(r.start_ns[k] == 42 * us);   // after k1
  CHECK(r.start_ns[p.c] == 47 * us);  // waits for the fused kernel
  CHECK_THROWS_WITH(replace_block(p.g, {p.a}, {{p.gpu, {kernel}, 0, false}}),
                    Catch::Contains("the block has no task on unit 1"));
}

TEST_CASE("clear_block, then fill_block on copies, gives what replace_block gives", "[transform][primitives]") {
  Pipeline p;
  const auto work = [&](int kernels) {
    std::vector<Replacement> replacements{{p.cpu, {}, 0, false}, {p.gpu, {}, 1 * us, true}};
    for (int i = 0; i < kernels; ++i) {
      replacements[0].tasks.push_back(NewTask::of("fused call", TaskKind::runtime, 3 * us, -1, Phase::unknown));
      replacements[1].tasks.push_back(NewTask::of("fused kernel", TaskKind::kernel, 5 * us, -1, Phase::unknown));
    }
    return replacements;
  };
  Graph cleared_graph = p.g;
  const ClearedBlock cleared = clear_block(cleared_graph, {p.b, p.k2}, {p.cpu, p.gpu}, true);
  CHECK(cleared_graph.removed(p.b));
  CHECK(cleared_graph.removed(p.k2));
  CHECK(cleared.spots.at(0).prev == p.a);
  CHECK(cleared.spots.at(0).next == p.c);
  for (int kernels : {1, 2, 3}) {
    INFO(kernels << " kernels");
    Graph replaced = p.g, filled = cleared_graph;
    const auto expected = replace_block(replaced, {p.b, p.k2}, work(kernels));
    CHECK(fill_block(filled, cleared, work(kernels)) == expected);
    CHECK(filled.fingerprint() == replaced.fingerprint());
  }
  Graph filled = cleared_graph;
  CHECK_THROWS_WITH(fill_block(filled, cleared, {{p.gpu, {}, 0, false}}),
                    "fill_block: replacement 0 is on unit 1, the block's place 0 on unit 0");
  Graph without_crossing = p.g;
  const ClearedBlock bare = clear_block(without_crossing, {p.b, p.k2}, {p.cpu, p.gpu}, false);
  CHECK_THROWS_WITH(fill_block(without_crossing, bare, work(1)),
                    "fill_block: replacement 1 takes over edges the cleared block did not keep");
  Graph untouched = p.g;
  CHECK_THROWS_WITH(clear_block(untouched, {p.a}, {p.gpu}, false), Catch::Contains("the block has no task on unit 1"));
  CHECK(untouched.fingerprint() == p.g.fingerprint());
}

TEST_CASE("runs on a chain, tasks per unit and the tasks of a range's windows", "[transform][primitives]") {
  Pipeline p;
  const std::map<UnitId, std::vector<TaskId>> by_unit{{p.cpu, {p.a, p.c}}, {p.gpu, {p.k1, p.k2}}};
  CHECK(group_by_unit(p.g, {p.k2, p.c, p.k1, p.a}) == by_unit);
  CHECK(task_mask(p.g, {p.b, p.k1}) == std::vector<char>{0, 1, 0, 1, 0});
  const auto all = [](TaskId) { return true; };
  CHECK(run_after(p.g, p.a, 5, all) == std::vector<TaskId>{p.b, p.c});
  CHECK(run_after(p.g, p.a, 1, all) == std::vector<TaskId>{p.b});
  CHECK(run_after(p.g, p.a, 5, [&](TaskId t) { return t != p.c; }) == std::vector<TaskId>{p.b});
  CHECK(run_before(p.g, p.c, 5, all) == std::vector<TaskId>{p.a, p.b});  // chain order
  CHECK(run_before(p.g, p.a, 5, all).empty());
  // A step over a and b (0 to 21 us); an operator inside it around b.
  p.g.set_ranges({{p.g.intern("ProfilerStep#1"), p.cpu, 0, 21 * us}, {p.g.intern("aten::relu_"), p.cpu, 11 * us, 21 * us}});
  const RangeTasks steps(p.g, "ProfilerStep#");
  REQUIRE(steps.windows().size() == 1);
  const RangeWindow& step = steps.windows()[0];
  CHECK(steps.tasks(step) == std::vector<TaskId>{p.a, p.b});
  CHECK(steps.tasks(step, p.gpu) == std::vector<TaskId>{p.k1});  // k2 starts at 42 us
  CHECK(steps.around(p.b) == &step);
  CHECK(steps.around(p.c) == nullptr);
  CHECK(RangeTasks(p.g, "relu").around(p.a) == nullptr);
  p.g.remove(p.a);
  CHECK(steps.tasks(step) == std::vector<TaskId>{p.b});  // removed since: skipped
  CHECK_THROWS_WITH(RangeTasks(p.g, "("), Catch::Contains("invalid range pattern"));
}

TEST_CASE("a spot before a kept task, the gaps inside a block, a run fused into its neighbour", "[transform][primitives]") {
  Pipeline p;
  const ChainSpot before_b = chain_spot(p.g, p.b, task_mask(p.g, {p.c}));  // b stays: right before it
  CHECK(before_b.prev == p.a);
  CHECK(before_b.delay_in_ns == 1 * us);
  CHECK(before_b.next == p.b);
  CHECK(before_b.delay_out_ns == 0);
  const ChainSpot of_b = chain_spot(p.g, p.b, task_mask(p.g, {p.b}));
  CHECK(of_b.next == p.c);
  CHECK(of_b.delay_out_ns == 1 * us);
  Pipeline q;
  zero_inner_delays(q.g, {q.a, q.b, q.k2});
  CHECK(edge_between(q.g, q.a, q.b)->delay_ns == 0);
  CHECK(edge_between(q.g, q.b, q.c)->delay_ns == 1 * us);  // c is not one of them
  remove_run(p.g, {p.b});
  CHECK(edge_between(p.g, p.a, p.c)->delay_ns == 1 * us);  // b's gap after it, not both (remove_block: 2 us)
}

TEST_CASE("launches: one call, a CUDA graph, a GPU task inserted with its call", "[transform][primitives]") {
  Pipeline p;
  p.g.calibration().launch_latency_ns[static_cast<std::size_t>(TaskKind::kernel)] = 3 * us;
  p.g.calibration().gpu_gap_ns = 500;
  const TaskId x = insert_between(p.g, NewTask::of("cudaGraphLaunch", TaskKind::runtime, 1 * us), kNoTask, p.a, 0, 0);
  CHECK(launch_graph(p.g, x, group_by_unit(p.g, {p.k1, p.k2})) == std::vector<TaskId>{p.k2});
  CHECK(edge_between(p.g, x, p.k1)->type == EdgeType::launch);
  CHECK(edge_between(p.g, x, p.k1)->timing == Timing::start_to_start);
  CHECK(edge_between(p.g, x, p.k1)->delay_ns == 3 * us);
  CHECK(edge_between(p.g, p.k1, p.k2)->delay_ns == 500);  // back to back inside the graph
  const std::size_t tasks = p.g.num_tasks();
  auto call = NewTask::of("cast call", TaskKind::runtime, 1 * us, -1, Phase::forward);
  auto cast = NewTask::of("cast", TaskKind::kernel, 4 * us, -1, Phase::forward);
  CHECK_FALSE(insert_launched(p.g, call, cast, x, p.k1));  // x starts its thread
  CHECK(p.g.num_tasks() == tasks);
  const auto inserted = insert_launched(p.g, call, cast, p.b, p.k2);
  REQUIRE(inserted);
  const auto [c, k] = *inserted;
  CHECK(chain_prev(p.g, c) == p.a);
  CHECK(chain_next(p.g, c) == p.b);
  CHECK(chain_prev(p.g, k) == p.k1);
  CHECK(edge_between(p.g, k, p.k2)->delay_ns == 500);
  CHECK(launched_by(p.g, c) == std::vector<TaskId>{k});
  CHECK(p.g.task(k).phase == Phase::forward);
}

TEST_CASE("what a CPU task does with the GPU, and typical durations", "[transform][primitives]") {
  Pipeline p;
  CHECK(gpu_use(p.g, p.a) == GpuUse::kernels);
  CHECK(gpu_use(p.g, p.c) == GpuUse::none);
  CHECK(waits_for_gpu(p.g, p.c));
  CHECK_FALSE(waits_for_gpu(p.g, p.a));
  p.g.set_blocking(p.c, true);
  CHECK(gpu_use(p.g, p.c) == GpuUse::wait);
  const TaskId to_host = p.add("Memcpy DtoH (Device -> Pageable)", p.gpu, TaskKind::memcpy, 1 * us, 70 * us);
  const TaskId peer = p.add("Memcpy PtoP (Device -> Device)", p.gpu, TaskKind::memcpy, 1 * us, 72 * us);
  p.g.add_edge(p.b, peer, {EdgeType::launch, Timing::start_to_start, 0, false});
  CHECK(gpu_use(p.g, p.b) == GpuUse::device_work);
  p.g.add_edge(p.b, to_host, {EdgeType::launch, Timing::start_to_start, 0, false});
  CHECK(gpu_use(p.g, p.b) == GpuUse::host_copy);
  CHECK(is_host_copy(p.g, to_host));
  CHECK_FALSE(is_host_copy(p.g, peer));
  CHECK(to_string(GpuUse::device_work) == "device_work");
  CHECK(p.g.select(TaskFilter().kind(TaskKind::kernel)).median_duration_ns() == 40 * us);  // the upper of 20, 40
  CHECK(p.g.select(TaskFilter().name("none")).median_duration_ns() == 0);
}

TEST_CASE("TaskFilter::rank selects the tasks of one rank's units", "[transform][primitives]") {
  Pipeline p;
  p.g.unit(p.gpu).rank = 3;
  CHECK(p.g.select(TaskFilter().rank(3)).ids() == std::vector<TaskId>{p.k1, p.k2});
  CHECK(p.g.select(TaskFilter().rank(0)).empty());
  CHECK(p.g.select(TaskFilter().rank(3).rank(kNone)).size() == 5);
}

TEST_CASE("remove_block removes CPU tasks earliest first, then GPU tasks latest first, whatever order it is given",
          "[transform][remove]") {
  // The order decides which bridges a removal leaves, so remove_block must match removing the
  // block one task at a time in that order (its inner delays zeroed first), for a block handed
  // over unit by unit (a few sorted runs, as scenarios gather blocks), in id order, or shuffled.
  std::mt19937 rng(19);
  for (int round = 0; round < 60; ++round) {
    const Graph base = test::random_chained_graph(rng, 4, 80);
    std::vector<TaskId> by_id;
    for (TaskId t = 0; t < base.num_tasks(); ++t)
      if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) by_id.push_back(t);
    const auto key = [&](TaskId t) {
      const bool gpu = base.units()[base.task(t).unit].kind != UnitKind::cpu_thread;
      const TimeNs start = base.task(t).recorded_start_ns;
      return std::make_tuple(gpu, gpu ? -start : start, gpu ? -static_cast<std::int64_t>(t) : std::int64_t{t});
    };
    std::vector<TaskId> documented = by_id;
    std::sort(documented.begin(), documented.end(), [&](TaskId a, TaskId b) { return key(a) < key(b); });

    Graph expected = base;
    std::vector<char> in_block(base.num_tasks(), 0);
    for (TaskId t : by_id) in_block[t] = 1;
    for (TaskId t : by_id)
      expected.update_successors(t, [&](TaskId s, Edge& e) {
        if (in_block[s]) e.delay_ns = 0;
        return true;
      });
    for (TaskId t : documented) expected.remove(t);

    std::vector<TaskId> unit_by_unit = by_id;
    std::stable_sort(unit_by_unit.begin(), unit_by_unit.end(), [&](TaskId a, TaskId b) {
      return std::make_tuple(base.task(a).unit, base.task(a).recorded_start_ns, a) <
             std::make_tuple(base.task(b).unit, base.task(b).recorded_start_ns, b);
    });
    std::vector<TaskId> shuffled = by_id;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    for (const auto* block : {&unit_by_unit, &by_id, &shuffled}) {
      Graph removed = base;
      remove_block(removed, *block);
      INFO("round " << round << ", block of " << block->size() << " tasks");
      CHECK(removed.fingerprint() == expected.fingerprint());
    }
  }
}
