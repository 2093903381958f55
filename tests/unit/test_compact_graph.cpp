// How a graph keeps its memory small (docs/benchmarks.md, issue 19's bytes per task), each
// checked against the plain layout it replaced:
// - At rest it keeps its edges in the simulator's table (FrozenEdges, graph/graph_storage.hpp)
//   instead of the editable store, and thaws them at the first change of its structure. Frozen
//   or thawed, it must read and edit exactly as a twin that never froze: every row in order (the
//   order decides simulation ties), every edge's kind, timing, delay and flag, and what edits and
//   simulations make of it.
// - A task names its trace event by a 32-bit index.
// - The rare holds (GPU occupancy, the driver lock) live beside the task records (TaskHolds).
// - A task's fields live once: the simulator's in TaskColumns, the others in a 48-byte record
//   (detail::TaskRecord), its size in bytes aside for the few tasks that have one; Graph::task
//   joins them into the Task a caller reads.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <random>
#include <tuple>
#include <vector>

#include "daydream/ingest.hpp"
#include "daydream/simulate.hpp"
#include "daydream/transform.hpp"
#include "graph/graph_access.hpp"
#include "graph/graph_storage.hpp"
#include "unit/edge_table_compare.hpp"
#include "unit/graph_helpers.hpp"

using namespace daydream;

namespace {

using Row = std::vector<std::tuple<TaskId, EdgeType, Timing, TimeNs, bool>>;

Row row_of(const Graph& g, TaskId v, bool out) {
  Row row;
  const auto take = [&](TaskId neighbor, const Edge& e) {
    row.emplace_back(neighbor, e.type, e.timing, e.delay_ns, e.inferred);
    return true;
  };
  out ? g.visit_successors(v, take) : g.visit_predecessors(v, take);
  return row;
}

/// Both graphs hold the same edges in the same orders, read every way.
void require_same_edges(const Graph& a, const Graph& b) {
  REQUIRE(a.num_tasks() == b.num_tasks());
  REQUIRE(a.num_edges() == b.num_edges());
  for (TaskId v = 0; v < a.num_tasks(); ++v) {
    INFO("task " << v);
    REQUIRE(row_of(a, v, true) == row_of(b, v, true));
    REQUIRE(row_of(a, v, false) == row_of(b, v, false));
    REQUIRE(a.in_degree(v) == b.in_degree(v));
    REQUIRE(a.out_degree(v) == b.out_degree(v));
    REQUIRE(a.predecessors(v).size() == a.in_degree(v));
    REQUIRE(a.successors(v).size() == a.out_degree(v));
  }
  REQUIRE(a.edge_counts() == b.edge_counts());
  REQUIRE(a.fingerprint() == b.fingerprint());
}

/// A random DAG (chains per unit, launches across) with edges of every kind added in no
/// particular order, parallel edges and removed tasks (bridged): the same graph for equal seeds.
Graph random_graph(unsigned seed) {
  std::mt19937 rng(seed);
  Graph g = test::random_chained_graph(rng, 4, 80);
  const auto n = static_cast<int>(g.num_tasks());
  auto pick = [&](int max) { return std::uniform_int_distribution<int>(0, max)(rng); };
  for (int e = 0; e < 60; ++e) {
    int a = pick(n - 1), b = pick(n - 1);
    if (a == b) continue;
    if (a > b) std::swap(a, b);  // lower id first: no cycle
    const Edge edge(static_cast<EdgeType>(pick(static_cast<int>(kEdgeTypeCount) - 1)),
                    pick(1) ? Timing::start_to_start : Timing::finish_to_start, pick(50), pick(1) == 1);
    g.add_edge(static_cast<TaskId>(a), static_cast<TaskId>(b), edge);
    if (pick(4) == 0) g.add_edge(static_cast<TaskId>(a), static_cast<TaskId>(b), edge);  // parallel
  }
  for (int k = 0; k < 5; ++k)
    if (const auto t = static_cast<TaskId>(pick(n - 1)); !g.removed(t)) g.remove(t);
  return g;
}

/// The same random edit for equal seeds: durations, removals, new edges, a cut edge and new tasks.
void random_edit(Graph& g, unsigned seed) {
  std::mt19937 rng(seed);
  const auto n = static_cast<int>(g.num_tasks());
  auto pick = [&](int max) { return std::uniform_int_distribution<int>(0, max)(rng); };
  g.select(TaskFilter().kind(TaskKind::kernel)).scale(0.5);
  for (int k = 0; k < 3; ++k)
    if (const auto t = static_cast<TaskId>(pick(n - 1)); !g.removed(t)) g.remove(t);
  for (int k = 0; k < 3; ++k) {
    const auto a = static_cast<TaskId>(pick(n - 1)), b = static_cast<TaskId>(pick(n - 1));
    if (a < b && !g.removed(a) && !g.removed(b)) g.connect(a, b, {EdgeType::sync, Timing::finish_to_start, 7, true});
  }
  for (TaskId v = 0; v < g.num_tasks(); ++v)
    if (const auto out = g.successors(v); !out.empty() && pick(5) == 0) {
      g.disconnect(v, out.front().task);
      break;
    }
  const auto at = static_cast<TaskId>(pick(n - 1));
  if (!g.removed(at)) {
    NewTask task = NewTask::of("new", TaskKind::kernel, 5);
    task.unit = g.task(at).unit;
    task.after = {at};
    g.insert(task);
  }
}

}  // namespace

TEST_CASE("frozen edges read, edit and simulate as the editable store's", "[graph][frozen]") {
  for (unsigned round = 0; round < 60; ++round) {
    INFO("round " << round);
    Graph frozen = random_graph(round);
    const Graph twin = random_graph(round);
    GraphAccess::freeze_edges(frozen);
    REQUIRE(GraphAccess::edges_frozen(frozen));
    REQUIRE_FALSE(GraphAccess::edges_frozen(twin));
    require_same_edges(frozen, twin);
    test::check_same_schedule(simulate(frozen), simulate(twin));

    // Copies share the frozen edges; an edit thaws the copy's alone.
    for (unsigned edit = 0; edit < 3; ++edit) {
      INFO("edit " << edit);
      Graph a = frozen, b = twin;
      random_edit(a, 1000 * round + edit);
      random_edit(b, 1000 * round + edit);
      REQUIRE_FALSE(GraphAccess::edges_frozen(a));
      require_same_edges(a, b);
      // The edited copy's table is patched from the frozen one, and is the table of its rows.
      test::check_same_table(*GraphAccess::edge_table(a), *GraphAccess::edge_table_from_rows(a));
      test::check_same_schedule(simulate(a), simulate(b));
    }
    REQUIRE(GraphAccess::edges_frozen(frozen));
    require_same_edges(frozen, twin);
    test::check_same_table(*GraphAccess::edge_table(frozen), *GraphAccess::edge_table_from_rows(frozen));

    // The frozen graph itself thaws at its own first change (here a new task), and freezes again;
    // its table is not kept to patch from (it would hold two), where a copy's is.
    Task task;
    task.duration_ns = 3;
    Graph own = random_graph(round), own_twin = random_graph(round);
    GraphAccess::freeze_edges(own);
    const std::uint64_t patches = GraphAccess::edge_table_patches();
    for (Graph* g : {&own, &own_twin}) {
      TaskId live = 0;
      while (g->removed(live)) ++live;
      const TaskId id = g->add_task(task);
      g->add_edge(live, id, {EdgeType::cpu_sequential, Timing::finish_to_start, 1, false});
    }
    REQUIRE_FALSE(GraphAccess::edges_frozen(own));
    require_same_edges(own, own_twin);
    test::check_same_table(*GraphAccess::edge_table(own), *GraphAccess::edge_table(own_twin));
    CHECK(GraphAccess::edge_table_patches() == patches);
    GraphAccess::freeze_edges(own);
    REQUIRE(GraphAccess::edges_frozen(own));
    require_same_edges(own, own_twin);
  }
}

TEST_CASE("freezing a graph whose structure copies share changes nothing", "[graph][frozen]") {
  std::mt19937 rng(3);
  Graph g = test::random_chained_graph(rng, 2, 20);
  const Graph copy = g;
  GraphAccess::freeze_edges(g);
  CHECK_FALSE(GraphAccess::edges_frozen(g));
  CHECK_FALSE(GraphAccess::edges_frozen(copy));
  require_same_edges(g, copy);
}

TEST_CASE("a built graph keeps its edges frozen", "[graph][frozen]") {
  const Graph g = test::graph_of(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 4, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 8, "dur": 20, "args": {"correlation": 1, "stream": 7, "device": 0}},
    {"ph": "X", "cat": "cpu_op", "name": "op2", "pid": 1, "tid": 1, "ts": 12, "dur": 5}
  ]})");
  CHECK(GraphAccess::edges_frozen(g));
  CHECK(g.num_edges() >= 3);
  // settled: the columns keep no room a builder reserved
  const auto columns = GraphAccess::task_columns(g);
  CHECK(columns->duration_ns.capacity() == g.num_tasks());
  CHECK(columns->kind.capacity() == g.num_tasks());
  const TaskId kernel = test::task_named(g, "k");
  const auto in = g.predecessors(kernel);
  REQUIRE(in.size() == 1);
  CHECK(in[0].edge.type == EdgeType::launch);
  CHECK(in[0].edge.timing == Timing::start_to_start);
  CHECK(g.name(in[0].task) == "cudaLaunchKernel");
}

TEST_CASE("a task names its trace event by a 32-bit index: a larger one is refused", "[graph][frozen]") {
  Trace trace = parse_kineto_json(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 0, "dur": 10}
  ]})", "big.json");
  REQUIRE(build_graph(trace).task(0).source_event == 0);
  trace.events[0].source_index = static_cast<std::uint32_t>(kMaxTraceEvents);
  CHECK(build_graph(trace).task(0).source_event == kMaxTraceEvents);
  trace.events[0].source_index = static_cast<std::uint32_t>(kMaxTraceEvents) + 1;
  CHECK_THROWS_WITH(build_graph(trace), Catch::Contains("big.json") && Catch::Contains("source_index") &&
                                            Catch::Contains("2147483647"));
}

TEST_CASE("holds live beside the records: set, read, shared by copies until one changes", "[graph][holds]") {
  std::mt19937 rng(5);
  Graph g = test::random_chained_graph(rng, 2, 10);
  CHECK(g.held_tasks().empty());
  CHECK_FALSE(g.holds(3).any());
  CHECK_THROWS_WITH(g.holds(10), Catch::Contains("no task 10"));
  GraphAccess::set_holds(g, 7, {2, 0.25, kNoTask});
  GraphAccess::set_holds(g, 3, {kNoTask, 0.0, 1});
  const Graph copy = g;
  GraphAccess::set_holds(g, 3, {});  // none: the entry goes
  GraphAccess::set_holds(g, 5, {kNoTask, 0.0, 4});
  REQUIRE(g.held_tasks().size() == 2);
  CHECK(g.held_tasks().begin()->first == 5);  // by id
  CHECK(g.holds(7) == TaskHolds{2, 0.25, kNoTask});
  CHECK_FALSE(g.holds(3).any());
  // The copy kept what it shared.
  REQUIRE(copy.held_tasks().size() == 2);
  CHECK(copy.holds(3).lock_held_by == 1);
  CHECK_FALSE(copy.holds(5).any());
  CHECK(copy.fingerprint() != g.fingerprint());
  GraphAccess::set_holds(g, 5, {}), GraphAccess::set_holds(g, 7, {});
  CHECK(g.held_tasks().empty());
}

TEST_CASE("a task is joined from its record and its columns, with its bytes kept aside", "[graph][records]") {
  Graph g;
  const UnitId cpu = g.add_unit({UnitKind::cpu_thread, "cpu", 1, 1});
  const UnitId gpu = g.add_unit({UnitKind::gpu_stream, "s7", 0, 7});
  const auto add = [&](TaskKind kind, UnitId unit, std::int64_t bytes, std::int64_t correlation) {
    Task task;
    task.kind = kind, task.unit = unit, task.phase = Phase::backward, task.blocking = kind == TaskKind::runtime;
    task.name = g.intern(fmt::format("t{}", g.num_tasks()));
    task.iteration = 2, task.duration_ns = 10 + static_cast<TimeNs>(g.num_tasks()), task.release_ns = 5;
    task.recorded_start_ns = 100, task.correlation = correlation, task.source_event = 9, task.op_event = 8;
    task.op_name = task.name, task.layer = task.name, task.bytes = bytes, task.launch = 3;
    return std::pair(g.add_task(task), task);
  };
  const std::int64_t wide = (std::int64_t{1} << 40) + 3;  // past 32 bits
  const auto [call, call_task] = add(TaskKind::runtime, cpu, kNone, wide);
  const auto [copy, copy_task] = add(TaskKind::memcpy, gpu, wide, 17);
  const auto [kernel, kernel_task] = add(TaskKind::kernel, gpu, kNone, -5);
  const auto [memset, memset_task] = add(TaskKind::memset, gpu, 0, kNone);
  const auto same = [](const Task& a, const Task& b) {
    return std::tie(a.kind, a.phase, a.blocking, a.removed, a.unit, a.name, a.iteration, a.duration_ns, a.release_ns,
                    a.recorded_start_ns, a.correlation, a.source_event, a.op_event, a.op_name, a.layer, a.bytes,
                    a.launch) == std::tie(b.kind, b.phase, b.blocking, b.removed, b.unit, b.name, b.iteration,
                                          b.duration_ns, b.release_ns, b.recorded_start_ns, b.correlation,
                                          b.source_event, b.op_event, b.op_name, b.layer, b.bytes, b.launch);
  };
  CHECK(same(g.task(call), call_task));
  CHECK(same(g.task(copy), copy_task));
  CHECK(same(g.task(kernel), kernel_task));
  CHECK(same(g.task(memset), memset_task));  // 0 bytes is a size, not none
  const std::uint64_t print = g.fingerprint();

  Graph changed = g;  // bytes set on a copy stay the copy's
  GraphAccess::set_bytes(changed, kernel, 64);
  GraphAccess::set_bytes(changed, copy, kNone);
  GraphAccess::set_bytes(changed, memset, 128);
  CHECK(changed.task(kernel).bytes == 64);
  CHECK(changed.task(copy).bytes == kNone);
  CHECK(changed.task(memset).bytes == 128);
  CHECK(changed.task(call).bytes == kNone);
  CHECK(g.task(kernel).bytes == kNone);
  CHECK(g.task(copy).bytes == wide);
  CHECK(g.fingerprint() == print);
  CHECK(changed.fingerprint() != print);
  GraphAccess::set_bytes(changed, kernel, kNone);  // back as it was
  GraphAccess::set_bytes(changed, copy, wide);
  GraphAccess::set_bytes(changed, memset, 0);
  CHECK(changed.fingerprint() == print);

  changed.set_duration(call, 99);  // the columns' fields change without the records'
  changed.remove(kernel);
  CHECK(changed.task(call).duration_ns == 99);
  CHECK(changed.task(kernel).removed);
  CHECK(changed.task(call).correlation == wide);
  CHECK(g.task(call).duration_ns == 10);
  CHECK_FALSE(g.task(kernel).removed);
  CHECK(sizeof(detail::TaskRecord) == 48);
}

TEST_CASE("a complete shape table keeps each distinct list of inputs once", "[graph][shapes]") {
  ShapeTable table;
  const auto add = [&](std::int64_t key, std::vector<std::vector<std::int64_t>> dims, std::string_view type,
                       bool list = false) {
    table.begin_operator(key);
    for (const auto& d : dims) table.add_operand(d, type, list);
  };
  for (int step = 0; step < 50; ++step) {  // a training loop: every step records the same shapes
    add(10 * step + 0, {{32, 3, 224, 224}, {64, 3, 7, 7}}, "float");
    add(10 * step + 1, {{32, 1000}}, "float");
    add(10 * step + 2, {{32, 3, 224, 224}, {64, 3, 7, 7}}, "c10::Half");  // another type
    add(10 * step + 3, {{32, 1000}}, "float", true);                     // a tensor list
    add(10 * step + 4, {{32, 1000}, {}}, "float");                       // one more input
    add(10 * step + 5, {{32, 1001}}, "float");                           // another size
    table.begin_operator(10 * step + 6);                                  // no inputs
  }
  const auto read = [](const ShapeTable& t) {
    std::vector<std::tuple<std::int64_t, std::vector<std::int64_t>, std::string, bool>> out;
    for (std::size_t op = 0; op < t.size(); ++op)
      for (std::size_t i = 0; i < t.operand_count(op); ++i) {
        const OperandShape o = t.operand(op, i);
        out.emplace_back(t.key(op), std::vector<std::int64_t>(o.dims.begin(), o.dims.end()), std::string(o.type),
                         o.tensor_list);
      }
    return out;
  };
  const auto before = read(table);
  const std::size_t bytes = table.memory_bytes();
  table.shrink_to_fit();
  CHECK(read(table) == before);  // every operator reads its own inputs
  CHECK(table.size() == 350);
  CHECK(table.operand_count(6) == 0);
  // 350 operators of 16 bytes; 9 operands (8 bytes) and 24 dimensions (8 bytes) kept once, not 50
  // times; the types' strings.
  CHECK(table.memory_bytes() <= 350 * 16 + 9 * 8 + 24 * 8 + 3 * (sizeof(std::string) + 16));
  CHECK(table.memory_bytes() < bytes / 2);
  table.shrink_to_fit();  // again: nothing changes
  CHECK(read(table) == before);
}
