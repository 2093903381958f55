// The static-order pass against the event engine: the same result to the ns (times, bindings,
// causes, unit usage, critical path) on random graphs full of ties and on every shared trace,
// before and after what-ifs; where it cannot stand in (a unit that is not a chain, GPU occupancy,
// a cycle) the engine runs.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "daydream/error.hpp"
#include "daydream/ingest.hpp"
#include "daydream/job.hpp"
#include "daydream/scenario.hpp"
#include "daydream/simulate.hpp"
#include "graph/graph_access.hpp"
#include "shared_traces.hpp"
#include "unit/graph_helpers.hpp"

using namespace daydream;

namespace {

/// Simulates both ways; returns whether the automatic choice took the static-order pass.
bool same_both_ways(const Graph& graph, const SchedulePolicy& policy = TraceOrderPolicy{}) {
  const SimulationResult fast = simulate(graph, policy);
  const SimulationResult engine = simulate(graph, policy, SimulationMethod::event_engine);
  CHECK_FALSE(engine.static_order);
  test::check_same_schedule(fast, engine);
  return fast.static_order;
}

struct RandomGraph {
  int units, tasks;
  double chain_probability;  // 1: every unit a chain; below: some units are not
};

/// Random DAG whose times tie often: durations, delays and releases of 0-3 ns, start-to-start
/// edges with zero delay, parallel edges, task ids in a shuffled topological order.
Graph random_graph(std::mt19937& rng, const RandomGraph& shape) {
  Graph g;
  for (int u = 0; u < shape.units; ++u) g.add_unit({u % 2 ? UnitKind::gpu_stream : UnitKind::cpu_thread, fmt::format("u{}", u), 1, u});
  auto small = [&](int max) { return static_cast<TimeNs>(std::uniform_int_distribution<int>(0, max)(rng)); };
  std::vector<TaskId> topological(static_cast<std::size_t>(shape.tasks));
  for (int i = 0; i < shape.tasks; ++i) {
    Task t;
    t.unit = static_cast<UnitId>(small(shape.units - 1));
    t.duration_ns = small(3);
    t.release_ns = small(3);
    t.recorded_start_ns = small(20);
    t.name = g.intern(fmt::format("t{}", i));
    topological[static_cast<std::size_t>(i)] = g.add_task(t);
  }
  std::shuffle(topological.begin(), topological.end(), rng);
  std::vector<TaskId> unit_last(static_cast<std::size_t>(shape.units), kNoTask);
  auto edge = [&](TaskId from, TaskId to) {
    const Timing timing = small(2) == 0 ? Timing::start_to_start : Timing::finish_to_start;
    g.add_edge(from, to, {EdgeType::cross_thread, timing, small(2), false});
  };
  std::bernoulli_distribution chain(shape.chain_probability);
  for (std::size_t i = 0; i < topological.size(); ++i) {
    const TaskId t = topological[i];
    TaskId& ahead = unit_last[g.task(t).unit];
    if (ahead != kNoTask && chain(rng)) edge(ahead, t);
    ahead = t;
    if (i == 0) continue;
    for (TimeNs k = small(3); k > 0; --k) {
      const TaskId from = topological[std::uniform_int_distribution<std::size_t>(0, i - 1)(rng)];
      edge(from, t);
      if (small(5) == 0) edge(from, t);  // a parallel edge
    }
  }
  return g;
}

}  // namespace

TEST_CASE("static order equals the engine on random chained graphs full of ties", "[simulate][static_order]") {
  std::mt19937 rng(20261124);
  int static_runs = 0;
  for (int i = 0; i < 3000; ++i) {
    const RandomGraph shape{1 + i % 5, 1 + i % 60, 1.0};
    const Graph g = random_graph(rng, shape);
    INFO("graph " << i << ": " << shape.units << " units, " << shape.tasks << " tasks");
    static_runs += same_both_ways(g);
    // A chain leaves no policy a choice: FIFO by ready time gives the same result too.
    same_both_ways(g, FifoPolicy{});
  }
  CHECK(static_runs == 3000);
}

// A unit not chained by edges runs its tasks in the policy's order (priority, then id) where the
// engine would have: the pass checks afterwards that no task the unit stood idle for was queued
// after a later one; otherwise the engine runs. FIFO orders by ready time, so never statically.
TEST_CASE("units that are not chains run statically in priority order exactly where the engine would",
          "[simulate][static_order]") {
  std::mt19937 rng(7);
  int graphs = 0, static_trace = 0, static_precomputed = 0;
  for (int i = 0; i < 1500; ++i) {
    const RandomGraph shape{1 + i % 4, 2 + i % 40, (i % 3) * 0.45};  // chained with probability 0, 0.45, 0.9
    const Graph g = random_graph(rng, shape);
    INFO("graph " << i << ": " << shape.units << " units, " << shape.tasks << " tasks");
    ++graphs;
    static_trace += same_both_ways(g);
    std::vector<double> priorities(g.num_tasks());
    for (double& p : priorities) p = static_cast<double>(rng() % 8);  // ties: the id decides
    static_precomputed += same_both_ways(g, PrecomputedPolicy(priorities, "random"));
  }
  // both ways of each policy are exercised: many graphs pass the check, many fail it
  CHECK(static_trace > graphs / 10);
  CHECK(static_trace < graphs / 2);
  CHECK(static_precomputed > graphs / 10);
  CHECK(static_precomputed < graphs / 2);
  WARN("virtual chains held on " << static_trace << " (trace order) and " << static_precomputed
                                 << " (random priorities) of " << graphs << " graphs");
}

TEST_CASE("FIFO on a unit that is not a chain, occupancy or a cycle sends the graph to the engine",
          "[simulate][static_order]") {
  std::mt19937 rng(7);
  int static_runs = 0;
  for (int i = 0; i < 500; ++i) static_runs += same_both_ways(random_graph(rng, {3, 40, 0.5}), FifoPolicy{});
  CHECK(static_runs < 50);  // FIFO with an unchained pair of tasks on a unit is never run statically

  Graph g;
  const UnitId gpu = g.add_unit({UnitKind::gpu_stream, "s1", 0, 1});
  const UnitId other = g.add_unit({UnitKind::gpu_stream, "s2", 0, 2});
  Task big;
  big.kind = TaskKind::kernel;
  big.unit = gpu;
  big.duration_ns = 100;
  const TaskId holder = g.add_task(big);
  Task small = big;
  small.unit = other;
  small.duration_ns = 10;
  const TaskId held = g.add_task(small);
  GraphAccess::set_holds(g, held, {holder, 0.9, kNoTask});
  const SimulationResult occupancy = simulate(g);
  CHECK_FALSE(occupancy.static_order);
  CHECK(occupancy.start_ns[held] == 90);

  g.add_edge(holder, held, {EdgeType::cross_stream, Timing::finish_to_start, 0, false});
  Graph cycle = g;
  cycle.add_edge(held, holder, {EdgeType::cross_stream, Timing::finish_to_start, 0, false});
  CHECK_THROWS_WITH(simulate(cycle), Catch::Contains("simulation stalled"));
}

TEST_CASE("static order keeps the engine's errors", "[simulate][static_order]") {
  Graph g;
  const UnitId cpu = g.add_unit({UnitKind::cpu_thread, "cpu", 1, 1});
  Task t;
  t.unit = cpu;
  t.duration_ns = 10;
  const TaskId a = g.add_task(t), b = g.add_task(t);
  g.add_edge(a, b, {EdgeType::cpu_sequential, Timing::finish_to_start, 0, false});
  // A policy that cannot rank every task fails though no choice would ask it.
  CHECK_THROWS_WITH(simulate(g, PrecomputedPolicy({0.0}, "short")), Catch::Contains("no priority for task 1"));
  // The clock past its range: the engine's message, naming the event.
  g.set_release(a, kMaxTraceTimeNs - 5);
  CHECK_THROWS_WITH(simulate(g), Catch::Contains("the simulated clock at task"));
}

/// Whether GPU occupancy or the driver lock holds some task back (the event engine's cases).
bool has_holds(const Graph& graph) {
  return !graph.held_tasks().empty();
}

/// Every profile of ../shared: traces (Kineto, Nsight) and the measured pairs.
std::vector<std::string> shared_profiles() {
  std::vector<std::string> paths;
  for (const auto& root : {test::kShared, test::kShared.parent_path() / "pairs"}) {
    if (!std::filesystem::is_directory(root)) continue;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      const std::string path = entry.path().string();
      const bool profile = path.find(".json") != std::string::npos || path.find(".sqlite") != std::string::npos;
      if (entry.is_regular_file() && profile && path.find("patterns") == std::string::npos) paths.push_back(path);
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

TEST_CASE("static order equals the engine on every shared trace, before and after what-ifs", "[simulate][static_order][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  // ddp and p3 put collectives on a channel without edges between them (virtual chains)
  const std::vector<std::string> specs = {"faster_gpu:factor=2", "amp", "dataloader_workers:workers=4", "fused_adam",
                                          "cuda_graphs", "ddp:gpus=8,params=25.6e6",
                                          "p3:machines=2,gpus=4,params=25.6e6"};
  int traces = 0, static_traces = 0;
  for (const auto& path : shared_profiles()) {
    INFO(path);
    Trace trace;
    try {
      trace = load_trace(path);
    } catch (const Error&) {
      continue;  // not a profiler trace (an execution trace, a layer file)
    }
    const Graph graph = build_graph(trace);
    const bool static_order = same_both_ways(graph);
    CHECK(static_order != has_holds(graph));
    ++traces;
    static_traces += static_order;
    for (const auto& spec : specs) {
      INFO(spec);
      Graph changed = graph;
      try {
        apply_scenario(changed, parse_scenario_spec(spec));
      } catch (const Error&) {
        continue;  // a what-if that does not apply to this trace
      }
      const bool changed_static = same_both_ways(changed);
      if (static_order && !changed_static) WARN(spec << " made " << path << " need the engine");
    }
  }
  CHECK(traces >= 10);
  WARN(static_traces << " of " << traces << " shared profiles ran in static order");
}

TEST_CASE("a job's collective channel runs statically, as the engine does", "[simulate][static_order][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const auto ranks = test::traces_at("dlrm-v100-8ranks/kineto");
  REQUIRE(ranks.size() == 8);
  const Graph job = load_job(ranks);
  CHECK(same_both_ways(job));  // its channel is not chained by edges: the chains hold
}

TEST_CASE("a graph's copies share its simulation columns until one changes a task", "[simulate][static_order]") {
  Graph original;
  const UnitId cpu = original.add_unit({UnitKind::cpu_thread, "cpu", 1, 1});
  auto add = [&](TimeNs duration) {
    Task t;
    t.unit = cpu;
    t.duration_ns = duration;
    return original.add_task(t);
  };
  const TaskId a = add(10), b = add(5), c = add(3);
  original.add_edge(a, b, {EdgeType::cpu_sequential, Timing::finish_to_start, 0, false});
  original.add_edge(b, c, {EdgeType::cpu_sequential, Timing::finish_to_start, 0, false});
  REQUIRE(simulate(original).end_ns == std::vector<TimeNs>{10, 15, 18});  // builds the columns

  Graph changed = original;
  changed.set_duration(b, 7);
  CHECK(simulate(changed).end_ns == std::vector<TimeNs>{10, 17, 20});
  changed.set_release(a, 4);
  CHECK(simulate(changed).end_ns == std::vector<TimeNs>{14, 21, 24});
  changed.remove(b);  // a -> c bridged
  const SimulationResult removed = simulate(changed);
  CHECK(removed.start_ns == std::vector<TimeNs>{4, -1, 14});
  CHECK(removed.static_order);
  Task d;
  d.unit = cpu;
  d.duration_ns = 2;
  const TaskId added = changed.add_task(d);  // not chained to c: the engine decides
  const SimulationResult grown = simulate(changed);
  CHECK_FALSE(grown.static_order);
  CHECK(grown.end_ns[added] == 2);
  CHECK(simulate(original).end_ns == std::vector<TimeNs>{10, 15, 18});  // the original kept its own
}
