// What a sweep reuses from one scenario to the next, checked against doing without it: a graph
// assigned over refills the memory of its former structure, columns and edge table; a result
// simulated into refills its arrays; the recorded order of a base graph stands in for sorting
// each unit's tasks (tasks_by_unit, iteration spans). Each must give exactly what a fresh copy,
// a fresh result or a full sort gives, and leave the graphs it shares with unchanged.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

#include "daydream/analyze.hpp"
#include "daydream/ingest.hpp"
#include "daydream/predict.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/scenario.hpp"
#include "daydream/simulate.hpp"
#include "daydream/transform.hpp"
#include "graph/graph_access.hpp"
#include "predict/report_columns.hpp"
#include "graph/graph_storage.hpp"
#include "shared_traces.hpp"
#include "unit/edge_table_compare.hpp"
#include "unit/graph_helpers.hpp"

using namespace daydream;

namespace {

/// A random edit, the same for equal seeds: durations, removals (one by one and as a block) and
/// inserted tasks.
void random_edit(Graph& g, unsigned seed) {
  std::mt19937 rng(seed);
  auto pick = [&](std::size_t max) { return std::uniform_int_distribution<std::size_t>(0, max)(rng); };
  const auto n = static_cast<TaskId>(g.num_tasks());
  g.select(TaskFilter().kind(TaskKind::kernel)).scale(0.5 + 0.1 * static_cast<double>(pick(5)));
  std::vector<TaskId> block;
  for (TaskId t = 0; t < n; ++t)
    if (pick(9) == 0 && !g.removed(t)) block.push_back(t);
  if (pick(1) == 0) remove_block(g, block);
  else
    for (TaskId t : block) g.remove(t);
  for (int k = 0; k < 3; ++k) {
    const auto at = static_cast<TaskId>(pick(n - 1));
    if (g.removed(at)) continue;
    NewTask task = NewTask::of(fmt::format("new{}", k), TaskKind::kernel, static_cast<TimeNs>(pick(9)), -1, Phase::unknown);
    task.unit = g.task(at).unit;
    task.after = {at};
    g.insert(task);
  }
}

void check_same_result(const SimulationResult& a, const SimulationResult& b) {
  test::check_same_schedule(a, b);
  CHECK(a.static_order == b.static_order);
}

/// tasks_by_unit's contract, by brute force: live tasks per unit by recorded start, ties by id.
std::vector<std::vector<TaskId>> sorted_by_unit(const Graph& g) {
  std::vector<std::vector<TaskId>> by_unit(g.units().size());
  for (TaskId t = 0; t < g.num_tasks(); ++t)
    if (!g.removed(t)) by_unit[g.task(t).unit].push_back(t);
  for (auto& list : by_unit)
    std::stable_sort(list.begin(), list.end(),
                     [&](TaskId a, TaskId b) { return g.task(a).recorded_start_ns < g.task(b).recorded_start_ns; });
  return by_unit;
}

/// `tasks` CPU tasks of 10 ns, one after another on `unit` (added first, as unit 0, where absent).
void add_chain(Graph& g, TaskId tasks, UnitId unit = 0) {
  if (g.units().empty()) g.add_unit({UnitKind::cpu_thread, "cpu", 1, 1});
  for (TaskId t = 0; t < tasks; ++t) {
    Task task;
    task.unit = unit;
    task.duration_ns = 10;
    const TaskId id = g.add_task(task);
    if (t > 0) g.add_edge(id - 1, id, {EdgeType::cpu_sequential, Timing::finish_to_start, 0, false});
  }
}

}  // namespace

TEST_CASE("a graph assigned over reuses its old memory and equals a fresh copy", "[transform][reuse]") {
  std::mt19937 rng(11);
  for (int round = 0; round < 40; ++round) {
    INFO("round " << round);
    Graph base = test::random_chained_graph(rng, 4, 60);
    (void)simulate(base);  // builds the columns and the edge table that copies share
    const std::uint64_t base_print = base.fingerprint();
    const auto base_edges = base.edges().size();
    const SimulationResult base_result = simulate(base);
    Graph scratch;
    SimulationResult reused;
    for (unsigned edit = 0; edit < 6; ++edit) {
      INFO("edit " << edit);
      scratch = base;  // keeps the last edit's structure, columns and table aside
      Graph fresh = base;
      random_edit(scratch, 100 * static_cast<unsigned>(round) + edit);
      random_edit(fresh, 100 * static_cast<unsigned>(round) + edit);
      REQUIRE(scratch.fingerprint() == fresh.fingerprint());
      simulate_into(reused, scratch);
      check_same_result(reused, simulate(fresh));
    }
    CHECK(base.fingerprint() == base_print);  // nothing reached the graph the scratch copies shared
    CHECK(base.edges().size() == base_edges);
    check_same_result(simulate(base), base_result);
  }
}

TEST_CASE("a result simulated into is the fresh result, whatever it held before", "[simulate][reuse]") {
  // Two threads; the second's call waited for the driver lock the first's held (engine only).
  Graph locked;
  const UnitId t1 = locked.add_unit({UnitKind::cpu_thread, "t1", 1, 1});
  const UnitId t2 = locked.add_unit({UnitKind::cpu_thread, "t2", 1, 2});
  Task holder;
  holder.kind = TaskKind::runtime;
  holder.unit = t1;
  holder.duration_ns = 100;
  const TaskId held_by = locked.add_task(holder);
  Task waiter = holder;
  waiter.unit = t2;
  waiter.duration_ns = 10;
  waiter.release_ns = 5;
  const TaskId waiting = locked.add_task(waiter);
  GraphAccess::set_holds(locked, waiting, {kNoTask, 0.0, held_by});
  Graph chain;
  const UnitId cpu = chain.add_unit({UnitKind::cpu_thread, "cpu", 1, 1});
  Task step = holder;
  step.unit = cpu;
  const TaskId first = chain.add_task(step);
  const TaskId second = chain.add_task(step);
  chain.add_edge(first, second, {EdgeType::cpu_sequential, Timing::finish_to_start, 3, false});

  const SimulationResult engine = simulate(locked);
  REQUIRE(engine.lock_waits == 1);
  REQUIRE_FALSE(engine.static_order);
  SimulationResult reused = engine;
  simulate_into(reused, chain);  // a static pass over what an engine run left
  check_same_result(reused, simulate(chain));
  CHECK(reused.lock_waits == 0);
  CHECK(reused.end_ns == std::vector<TimeNs>{100, 203});
  simulate_into(reused, locked);
  check_same_result(reused, engine);
  simulate_into(reused, chain, TraceOrderPolicy{}, SimulationMethod::event_engine);
  check_same_result(reused, simulate(chain, TraceOrderPolicy{}, SimulationMethod::event_engine));
}

TEST_CASE("tasks by unit (and of one unit) from the recorded order equal a full sort, with tasks added and removed since",
          "[transform][reuse]") {
  std::mt19937 rng(5);
  for (int round = 0; round < 40; ++round) {
    INFO("round " << round);
    Graph g = test::random_chained_graph(rng, 3, 50);
    const bool prepared = round % 2 == 0;  // half with the order built before the edits
    if (prepared) (void)GraphAccess::recorded_order(g);
    Graph copy = g;
    random_edit(copy, static_cast<unsigned>(round));
    Task late;  // a task added without edges, recorded before every other
    late.unit = 1;
    late.kind = TaskKind::kernel;
    late.recorded_start_ns = -5;
    copy.add_task(late);
    const auto expected = sorted_by_unit(copy);
    CHECK(tasks_by_unit(copy) == expected);
    for (UnitId u = 0; u < copy.units().size(); ++u) CHECK(tasks_of_unit(copy, u) == expected[u]);
    CHECK(tasks_of_unit(copy, static_cast<UnitId>(copy.units().size())).empty());
    CHECK(tasks_by_unit(g) == sorted_by_unit(g));  // the original, its order shared, unchanged
    // select reads kinds from the columns: removed kernels never, inserted ones always
    std::vector<TaskId> kernels;
    for (TaskId t = 0; t < copy.num_tasks(); ++t)
      if (!copy.removed(t) && copy.task(t).kind == TaskKind::kernel) kernels.push_back(t);
    CHECK(copy.select(TaskFilter().kind(TaskKind::kernel)).ids() == kernels);
  }
}

TEST_CASE("iteration spans from the recorded order, or from a base's report columns, equal those of a full scan, "
          "after what-ifs",
          "[report][reuse][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const auto traces = test::traces_at("resnet50-v100-dataloader/workers0");
  REQUIRE_FALSE(traces.empty());
  const Graph built = build_graph(load_trace(traces.front()));
  REQUIRE(built.iterations().size() >= 2);
  for (const std::string spec : {"amp", "cuda_graphs", "dataloader_workers:workers=4", "fused_adam"}) {
    INFO(spec);
    Graph scanned = built, ordered = built, listed = built;
    (void)GraphAccess::recorded_order(ordered);  // only this copy has the order
    (void)report_columns(listed);  // and this one the columns, with its iterations' tasks listed
    REQUIRE(GraphAccess::recorded_order_if_built(scanned) == nullptr);
    apply_scenario(scanned, parse_scenario_spec(spec));
    apply_scenario(ordered, parse_scenario_spec(spec));
    apply_scenario(listed, parse_scenario_spec(spec));
    // dataloader_workers renames CPU tasks of the data loading, which leaves the columns (cuda_graphs
    // renames runtime calls, which drops them)
    if (spec.starts_with("dataloader")) CHECK(report_columns_if_built(listed) != nullptr);
    (void)GraphAccess::record(scanned, 0);  // drops what a what-if built on the way (RangeTasks sorts)
    REQUIRE(GraphAccess::recorded_order_if_built(scanned) == nullptr);
    REQUIRE(ordered.num_tasks() == scanned.num_tasks());
    const SimulationResult result = simulate(scanned);
    const auto by_scan = simulated_iteration_spans(scanned, result);
    for (const Graph* other : {&ordered, &listed}) {
      const auto spans = simulated_iteration_spans(*other, result);
      REQUIRE(by_scan.size() == spans.size());
      for (std::size_t i = 0; i < by_scan.size(); ++i) {
        CHECK(by_scan[i].index == spans[i].index);
        CHECK(by_scan[i].start_ns == spans[i].start_ns);
        CHECK(by_scan[i].end_ns == spans[i].end_ns);
      }
    }
  }
}

TEST_CASE("a base's copies reuse the edge table of a structure built twice, and only of the same edges",
          "[simulate][reuse]") {
  Graph plain;
  const UnitId cpu = plain.add_unit({UnitKind::cpu_thread, "cpu", 1, 1});
  const UnitId other = plain.add_unit({UnitKind::cpu_thread, "other", 1, 2});
  add_chain(plain, 200, cpu);
  Graph base = plain;
  GraphAccess::share_edge_tables(base);
  (void)simulate(base);
  const auto table = [](const Graph& g) { return GraphAccess::edge_table(g); };
  const auto scaled = [](Graph g, double scale) {
    g.select().scale(scale);  // the numbers a scenario's parameter changes
    return g;
  };
  // A new structure (one more edge): built the first time it is seen and again, kept from then on.
  const auto with_delay = [&](const Graph& from, TimeNs delay, double scale) {
    Graph g = from;
    g.add_edge(0, 2, {EdgeType::cpu_sequential, Timing::finish_to_start, delay, false});
    return scaled(std::move(g), scale);
  };
  const Graph c1 = with_delay(base, 5, 1.0), c2 = with_delay(base, 5, 2.0), c3 = with_delay(base, 5, 3.0);
  const SimulationResult s1 = simulate(c1), s2 = simulate(c2), s3 = simulate(c3);
  CHECK(table(c1) != table(c2));
  CHECK(table(c3) == table(c2));
  check_same_result(s3, simulate(with_delay(plain, 5, 3.0)));
  // Another delay on that edge: other edges, not reused.
  const Graph d = with_delay(base, 95, 3.0);
  const SimulationResult sd = simulate(d);
  CHECK(table(d) != table(c2));
  check_same_result(sd, simulate(with_delay(plain, 95, 3.0)));
  CHECK(sd.start_ns[2] == 30 + 95);  // task 0 ends at 30, then the 95 ns delay (task 1 ends at 60)
  // The same edges with a task on another unit: the unit chains differ, so the table is not reused
  // (compared task by task), and the new task on the chain's own unit queues behind it.
  const auto with_task_on = [&](const Graph& from, UnitId unit) {
    Graph g = from;
    NewTask task = NewTask::of("side", TaskKind::cpu, 10, -1, Phase::unknown);
    task.unit = unit;
    task.after = {0};
    g.insert(task);
    return g;
  };
  const Graph e1 = with_task_on(base, cpu), e2 = with_task_on(base, cpu), e3 = with_task_on(base, cpu);
  (void)simulate(e1), (void)simulate(e2);
  const SimulationResult r3 = simulate(e3);
  REQUIRE(table(e3) == table(e2));
  const Graph f = with_task_on(base, other);
  const SimulationResult rf = simulate(f);
  CHECK(table(f) != table(e2));
  check_same_result(rf, simulate(with_task_on(plain, other)));
  check_same_result(r3, simulate(with_task_on(plain, cpu)));
  // A what-if that keeps the base's structure shares the base's table, as before.
  CHECK(table(scaled(base, 2.0)) == table(base));
  // The same edges but one of another type: a launch makes its thread part of the run, which the
  // table records (launching_units), so the table is not reused.
  const auto with_edge = [&](const Graph& from, EdgeType type) {
    Graph g = from;
    g.add_edge(0, 7, {type, Timing::finish_to_start, 0, false});
    return g;
  };
  const Graph l1 = with_edge(base, EdgeType::cpu_sequential), l2 = with_edge(base, EdgeType::cpu_sequential);
  (void)simulate(l1), (void)simulate(l2);
  REQUIRE(table(l2)->launching_units.empty());
  const Graph launching = with_edge(base, EdgeType::launch);
  CHECK(table(launching) != table(l2));
  CHECK(table(launching)->launching_units == std::vector<std::uint8_t>{1});
}

namespace {

/// A few random edits of `g`: tasks inserted and removed, edges added, removed and given other
/// delays, parallel edges among them.
void edit_at_random(std::mt19937& rng, Graph& g, int edits) {
  auto pick = [&](std::size_t max) { return static_cast<TaskId>(std::uniform_int_distribution<std::size_t>(0, max)(rng)); };
  for (int i = 0; i < edits; ++i) {
    const TaskId a = pick(g.num_tasks() - 1), b = pick(g.num_tasks() - 1);
    if (g.removed(a) || g.removed(b) || a == b) continue;
    const TaskId from = std::min(a, b), to = std::max(a, b);  // id order is a topological order here
    switch (pick(4)) {
      case 0: g.remove(a); break;
      case 1: g.connect(from, to, {EdgeType::cross_thread, Timing::finish_to_start, pick(50), false}); break;
      case 2:
        if (!g.successors(from).empty()) g.edge(from, g.successors(from).front().task).delay_ns = pick(70);
        break;
      case 3: {
        NewTask task = NewTask::of("new", TaskKind::cpu, pick(20), -1, Phase::unknown);
        task.unit = g.task(from).unit;
        task.after = {from};
        g.insert(task);
        break;
      }
      default:
        if (!g.successors(from).empty()) g.disconnect(from, g.successors(from).front().task);
    }
  }
}

}  // namespace

TEST_CASE("a copy's edge table patched from its source's equals the table built from every row", "[simulate][reuse]") {
  std::mt19937 rng(11);
  const std::uint64_t patches = GraphAccess::edge_table_patches();
  for (int round = 0; round < 20; ++round) {
    INFO("round " << round);
    Graph base = test::random_chained_graph(rng, 5, 600);
    (void)GraphAccess::edge_table(base);
    Graph copy = base;
    edit_at_random(rng, copy, 1 + round % 6);
    test::check_same_table(*GraphAccess::edge_table(copy), *GraphAccess::edge_table_from_rows(copy));
    Graph copy_of_copy = copy;  // patched again from the first copy's table
    edit_at_random(rng, copy_of_copy, 3);
    test::check_same_table(*GraphAccess::edge_table(copy_of_copy), *GraphAccess::edge_table_from_rows(copy_of_copy));
    edit_at_random(rng, copy_of_copy, 2);  // changed again after its table was built
    test::check_same_table(*GraphAccess::edge_table(copy_of_copy), *GraphAccess::edge_table_from_rows(copy_of_copy));
  }
  CHECK(GraphAccess::edge_table_patches() > patches + 40);
}

TEST_CASE("what-ifs on a Predictor's base patch its edge table into the table built from every row",
          "[simulate][reuse][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const auto files = test::traces_at("resnet50-v100-dataloader/workers0");
  REQUIRE(files.size() == 1);
  const Predictor predictor(build_graph(load_trace(files[0].string())));
  const std::uint64_t patches = GraphAccess::edge_table_patches();
  for (const char* spec : {"fused_adam", "fused_adam:kernels=3", "dataloader_workers:workers=2", "cuda_graphs", "amp",
                           "restructure_bn", "ddp:machines=2,gpus=4,params=25.6e6", "p3:machines=2,gpus=4,params=25.6e6",
                           "channels_last"}) {
    INFO(spec);
    Graph changed;
    SimulationResult result;
    (void)predictor.predict(parse_scenario_spec(spec), changed, result);
    test::check_same_table(*GraphAccess::edge_table(changed), *GraphAccess::edge_table_from_rows(changed));
  }
  CHECK(GraphAccess::edge_table_patches() > patches + 3);
}

TEST_CASE("a copy shares the task records until it changes one: times are columns, which no record copies",
          "[transform][reuse]") {
  Graph base;
  add_chain(base, 100);
  const std::uint64_t base_print = base.fingerprint();

  Graph copy = base;
  copy.select().scale(3.0);  // TaskSet::scale reads the times it scales from the columns
  copy.set_release(0, 7);
  CHECK(GraphAccess::shares_records(copy));  // nothing copied them
  CHECK(copy.duration_ns(5) == 30);
  CHECK(copy.release_ns(0) == 7);
  CHECK(simulate(copy).end_ns[99] == 7 + 100 * 30);  // the simulator reads the columns

  const Graph copy_of_copy = copy;  // shares those records and the columns
  CHECK(copy.task(5).duration_ns == 30);  // a task joins its record and its columns
  CHECK(copy.task(0).release_ns == 7);
  CHECK(copy_of_copy.task(99).duration_ns == 30);
  CHECK(GraphAccess::shares_records(copy));  // reading copied nothing either
  CHECK(GraphAccess::shares_records(copy_of_copy));

  Graph unshared = base;  // the same what-if on records copied first: the same graph
  unshared.rename(0, "");
  CHECK_FALSE(GraphAccess::shares_records(unshared));
  unshared.select().scale(3.0);
  unshared.set_release(0, 7);
  CHECK(unshared.fingerprint() == copy.fingerprint());
  CHECK(unshared.fingerprint() == copy_of_copy.fingerprint());

  Graph renamed = base;  // a change of another field after a time: both kept
  renamed.set_duration(3, 77);
  renamed.rename(3, "renamed");
  CHECK(renamed.task(3).duration_ns == 77);
  CHECK(renamed.name(3) == "renamed");
  CHECK(base.task(3).duration_ns == 10);
  CHECK(base.fingerprint() == base_print);  // nothing reached the records the copies shared

  Graph shared_by_readers = base;  // readers on several threads, reading and copying
  shared_by_readers.select().scale(2.0);
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r)
    readers.emplace_back([&] {
      for (TaskId t = 0; t < 100; ++t) wrong += shared_by_readers.task(t).duration_ns != 20;
      const Graph copied = shared_by_readers;
      wrong += copied.task(50).duration_ns != 20;
    });
  for (auto& reader : readers) reader.join();
  CHECK(wrong == 0);
  CHECK(GraphAccess::shares_records(shared_by_readers));
}

TEST_CASE("the median launch call is kept with a graph and its copies, and follows every change of a task",
          "[transform][reuse]") {
  Graph g;
  const UnitId cpu = g.add_unit({UnitKind::cpu_thread, "cpu", 1, 1});
  const auto call = [&](std::string_view name, TimeNs ns) {
    Task task;
    task.unit = cpu;
    task.kind = TaskKind::runtime;
    task.name = g.intern(name);
    task.duration_ns = ns;
    return g.add_task(task);
  };
  const TaskId a = call("cudaLaunchKernel", 10), b = call("cudaLaunchKernel", 30);
  call("cudaMemcpyAsync", 1000);  // not a launch
  CHECK(median_launch_call_ns(g) == 30);  // of {10, 30}: the upper middle
  Graph copy = g;                          // shares the value
  CHECK(median_launch_call_ns(copy) == 30);
  copy.set_duration(b, 5);  // {10, 5}
  CHECK(median_launch_call_ns(copy) == 10);
  CHECK(median_launch_call_ns(g) == 30);  // the original keeps its own
  copy.rename(a, "cudaStreamSynchronize");  // {5}
  CHECK(median_launch_call_ns(copy) == 5);
  copy.remove(b);  // none left: the fallback
  CHECK(median_launch_call_ns(copy, 7) == 7);
  NewTask added = NewTask::of("cudaLaunchKernel", TaskKind::runtime, 40, -1, Phase::unknown);
  added.unit = cpu;
  copy.insert(added);  // {40}
  CHECK(median_launch_call_ns(copy) == 40);
  GraphAccess::set_duration(copy, static_cast<TaskId>(copy.num_tasks() - 1), 50);  // a builder's write
  CHECK(median_launch_call_ns(copy) == 50);
  copy = g;  // assigned over: the original's value again
  CHECK(median_launch_call_ns(copy) == 30);
}

TEST_CASE("a copy copies only the pages of task records it changes, and none for times",
          "[transform][reuse]") {
  constexpr TaskId kPage = static_cast<TaskId>(detail::TaskRecords::kPageRecords);
  Graph base;
  add_chain(base, 2 * kPage + 100);  // three pages, the last partly filled
  const std::uint64_t base_print = base.fingerprint();
  REQUIRE(GraphAccess::record_pages(base) == 3);

  Graph copy = base;
  CHECK(GraphAccess::own_record_pages(copy) == 0);
  CHECK(GraphAccess::own_record_pages(base) == 0);  // copied: the base shares its pages now too
  copy.rename(kPage + 5, "renamed");                 // the middle page, copied
  CHECK(GraphAccess::own_record_pages(copy) == 1);
  copy.set_duration(2 * kPage + 7, 55);  // times are columns: no page is copied
  copy.set_duration(kPage + 9, 44);
  copy.remove(3);  // nor for a removal
  CHECK(GraphAccess::own_record_pages(copy) == 1);
  CHECK(copy.duration_ns(2 * kPage + 7) == 55);
  CHECK(copy.task(2 * kPage + 7).duration_ns == 55);
  CHECK(copy.task(3).removed);
  CHECK(GraphAccess::own_record_pages(copy) == 1);  // reading copied nothing
  CHECK(copy.task(kPage + 9).duration_ns == 44);
  CHECK(copy.name(kPage + 5) == "renamed");
  CHECK(base.task(2 * kPage + 7).duration_ns == 10);
  CHECK(base.name(kPage + 5).empty());
  CHECK(base.fingerprint() == base_print);

  Graph whole = base;  // the same what-if, every page copied first: the same graph
  for (TaskId t = 0; t < whole.num_tasks(); t += kPage) whole.set_blocking(t, false);
  CHECK(GraphAccess::own_record_pages(whole) == 3);
  whole.rename(kPage + 5, "renamed");
  whole.set_duration(2 * kPage + 7, 55);
  whole.set_duration(kPage + 9, 44);
  whole.remove(3);
  CHECK(whole.fingerprint() == copy.fingerprint());

  // An insert on the shared partly filled last page copies it; one past a full page starts a new one.
  Graph grown = base;
  add_chain(grown, 1);
  CHECK(GraphAccess::own_record_pages(grown) == 1);
  CHECK(GraphAccess::record_pages(grown) == 3);
  CHECK(base.num_tasks() == 2 * kPage + 100);
  // Assigned over, a graph reuses the pages it let go; each what-if still equals a fresh copy.
  Graph reused;
  for (int round = 0; round < 3; ++round) {
    reused = base;
    reused.rename(static_cast<TaskId>(round) * kPage, "r");
    reused.set_duration(2 * kPage + 1, 30 + round);
    Graph fresh = base;
    fresh.rename(static_cast<TaskId>(round) * kPage, "r");
    fresh.set_duration(2 * kPage + 1, 30 + round);
    CHECK(reused.fingerprint() == fresh.fingerprint());
    CHECK(reused.task(2 * kPage + 1).duration_ns == 30 + round);
  }
  CHECK(base.fingerprint() == base_print);
}
