// Split scenarios (ScenarioSplit) and the restructured graphs a Predictor keeps for them: a spec
// that differs from earlier ones only in retimed values copies a kept graph and retimes it, and
// must predict exactly what restructuring a copy of the base graph again predicts.
#include <catch2/catch.hpp>

#include <memory>
#include <random>

#include "daydream/analyze.hpp"
#include "daydream/error.hpp"
#include "daydream/ingest.hpp"
#include "daydream/predict.hpp"
#include "daydream/scenario.hpp"
#include "daydream/transform.hpp"
#include "graph/graph_access.hpp"
#include "shared_traces.hpp"
#include "unit/graph_helpers.hpp"

using namespace daydream;

namespace {

/// Counts the restructures of the probe (one counter per registry made by probe_registry).
struct Calls {
  int restructures = 0;
};

/// `count` more tasks on task 0's unit, one after another after the last of `inserted` (after
/// task 0 when it is empty).
void insert_after(Graph& graph, std::vector<TaskId>& inserted, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    NewTask task = NewTask::of("inserted", TaskKind::cpu, 0, -1, Phase::unknown);
    task.unit = graph.task(0).unit;
    task.after = {inserted.empty() ? TaskId{0} : inserted.back()};
    inserted.push_back(graph.insert(task));
  }
}

/// The probes' retime: every task of the plan lasts `factor` x 1000 ns.
ScenarioOutcome time_inserted(Graph& graph, const ScenarioParams& params, const std::any& plan) {
  const auto ns = static_cast<TimeNs>(1000 * params.number("factor"));
  for (TaskId t : std::any_cast<const std::vector<TaskId>&>(plan)) graph.set_duration(t, ns);
  return ScenarioOutcome{nullptr, {fmt::format("{} ns each", ns)}};
}

/// test_split: `count` tasks inserted after task 0 on its unit (restructure), each `factor` x
/// 1000 ns long (retime). `label` only goes into the key.
ScenarioRegistry probe_registry(const std::shared_ptr<Calls>& calls) {
  ScenarioSplit split;
  split.retimed = {"factor"};
  split.restructure = [calls](Graph& graph, const ScenarioParams& params) {
    ++calls->restructures;
    if (params.integer("count") == 0) throw Error("count 0: nothing to insert");
    std::vector<TaskId> inserted;
    insert_after(graph, inserted, params.integer("count"));
    return std::any(inserted);
  };
  split.retime = time_inserted;
  ScenarioRegistry registry;
  registry.add(split_scenario("test_split", "inserts and times tasks",
                              {{"factor", ParamKind::number, 1, "x", 0, 100},
                               {"count", ParamKind::integer, 2, "n", 0, 64},
                               ScenarioParam::text("label", "", "key only")},
                              std::move(split)));
  return registry;
}

/// test_prepared: prepare inserts `count` tasks after task 0 on its unit, complete `extra` more
/// after them (a completed parameter), retime times them all `factor` x 1000 ns.
ScenarioRegistry prepared_registry(const std::shared_ptr<Calls>& calls) {
  ScenarioSplit split;
  split.retimed = {"factor"};
  split.completed = {"extra"};
  split.prepare = [calls](Graph& graph, const ScenarioParams& params) {
    ++calls->restructures;
    std::vector<TaskId> inserted;
    insert_after(graph, inserted, params.integer("count"));
    return std::any(inserted);
  };
  split.complete = [](Graph& graph, const ScenarioParams& params, const std::any& prepared) {
    auto inserted = std::any_cast<const std::vector<TaskId>&>(prepared);
    insert_after(graph, inserted, params.integer("extra"));
    return std::any(inserted);
  };
  split.retime = time_inserted;
  ScenarioRegistry registry;
  registry.add(split_scenario("test_prepared", "inserts tasks in two parts and times them",
                              {{"factor", ParamKind::number, 1, "x", 0, 100},
                               {"count", ParamKind::integer, 2, "n", 1, 64},
                               {"extra", ParamKind::integer, 1, "n", 0, 64}},
                              std::move(split)));
  return registry;
}

/// A prediction from `predictor` equals one from a Predictor that has seen no other spec (which
/// restructures a copy of the base): the report and every task's schedule.
void check_same_as_fresh(const Predictor& predictor, const Graph& base, const ScenarioRegistry& registry,
                         const std::string& spec_text) {
  INFO(spec_text);
  const ScenarioSpec spec = parse_scenario_spec(spec_text);
  Graph changed, fresh_changed;
  SimulationResult result, fresh_result;
  const Prediction p = predictor.predict(spec, changed, result);
  const Prediction fresh = Predictor(base, registry).predict(spec, fresh_changed, fresh_result);
  CHECK(to_json(p, "t") == to_json(fresh, "t"));
  CHECK(changed.fingerprint() == fresh_changed.fingerprint());
  test::check_same_schedule(result, fresh_result);
}

}  // namespace

TEST_CASE("a split scenario's key: every value but the retimed ones', and what was given", "[scenario][split]") {
  const ScenarioRegistry registry = probe_registry(std::make_shared<Calls>());
  const Scenario& s = registry.find("test_split");
  const auto key = [&](const std::string& spec) { return restructure_key(s, resolve_params(s, parse_scenario_spec(spec))); };
  CHECK(key("test_split:factor=1") == key("test_split:factor=2.5"));
  CHECK(key("test_split:factor=1") != key("test_split"));  // given or not: a scenario may choose by it
  CHECK(key("test_split:count=2") != key("test_split:count=3"));
  CHECK(key("test_split:count=2") != key("test_split"));
  CHECK(key("test_split:label=a") != key("test_split:label=b"));
  CHECK(key("test_split:label=a,count=2") != key("test_split:label=a\n,count=2"));
}

TEST_CASE("split_scenario and ScenarioRegistry::add refuse a retimed name the scenario lacks and a missing part",
          "[scenario][split]") {
  ScenarioSplit split{{"speed"}, [](Graph&, const ScenarioParams&) { return std::any(); },
                      [](Graph&, const ScenarioParams&, const std::any&) { return ScenarioOutcome{}; }};
  CHECK_THROWS_WITH(split_scenario("s", "", {{"factor", ParamKind::number, 1, "x"}}, split),
                    "scenario 's': retimed parameter 'speed' is not one of its parameters");
  Scenario by_hand = split_scenario("s", "", {{"factor", ParamKind::number, 1, "x"}, {"speed", ParamKind::number, 1, "x"}},
                                    split);
  by_hand.params.pop_back();  // its split names a parameter it no longer has
  ScenarioRegistry registry;
  CHECK_THROWS_WITH(registry.add(by_hand), "scenario 's': retimed parameter 'speed' is not one of its parameters");
  split.retimed = {"factor"};
  split.retime = nullptr;
  CHECK_THROWS_WITH(split_scenario("s", "", {{"factor", ParamKind::number, 1, "x"}}, split),
                    "scenario 's': a split needs both restructure and retime");
}

TEST_CASE("a Predictor restructures a key twice, then copies the kept graph and retimes it", "[predict][split]") {
  std::mt19937 rng(5);
  const Graph base = test::random_chained_graph(rng, 4, 80);
  auto calls = std::make_shared<Calls>();
  const ScenarioRegistry registry = probe_registry(calls);
  const Predictor predictor(base, registry);
  for (const char* spec : {"test_split:factor=1", "test_split:factor=2", "test_split:factor=3", "test_split:factor=4"})
    (void)predictor.predict(parse_scenario_spec(spec));
  CHECK(calls->restructures == 2);  // once met, once kept: the third and fourth copy the kept graph
  (void)predictor.predict(parse_scenario_spec("test_split:factor=5,count=3"));  // another structure
  CHECK(calls->restructures == 3);
  (void)predictor.predict(parse_scenario_spec("test_split:factor=6"));
  CHECK(calls->restructures == 3);

  // Every spec, kept graph or not, many keys (more than are kept), equals a fresh restructure.
  for (int round = 0; round < 3; ++round)
    for (const char* spec : {"test_split:factor=0.5", "test_split:factor=7,count=1", "test_split:factor=2,count=1",
                             "test_split:count=5,factor=3", "test_split:label=x,factor=9", "test_split:count=7",
                             "test_split:count=6,factor=0", "test_split:factor=8"})
      check_same_as_fresh(predictor, base, registry, spec);
}

TEST_CASE("a Predictor prepares a key twice, then completes copies of the prepared graph", "[predict][split]") {
  std::mt19937 rng(10);
  const Graph base = test::random_chained_graph(rng, 4, 80);
  auto calls = std::make_shared<Calls>();
  const ScenarioRegistry registry = prepared_registry(calls);
  const Scenario& s = registry.find("test_prepared");
  const auto key = [&](const std::string& spec) { return prepare_key(s, resolve_params(s, parse_scenario_spec(spec))); };
  CHECK(key("test_prepared:extra=1,factor=2") == key("test_prepared:extra=5,factor=3"));
  CHECK(key("test_prepared:extra=1") != key("test_prepared:extra=1,count=3"));
  CHECK(restructure_key(s, resolve_params(s, parse_scenario_spec("test_prepared:extra=1"))) !=
        restructure_key(s, resolve_params(s, parse_scenario_spec("test_prepared:extra=2"))));

  const Predictor predictor(base, registry);
  for (const char* spec : {"test_prepared:extra=1", "test_prepared:extra=2", "test_prepared:extra=3",
                           "test_prepared:extra=4"})
    (void)predictor.predict(parse_scenario_spec(spec));
  CHECK(calls->restructures == 2);  // once met, once kept: the others complete copies of it
  (void)predictor.predict(parse_scenario_spec("test_prepared:extra=0,count=5"));  // another prepared key
  CHECK(calls->restructures == 3);

  for (int round = 0; round < 2; ++round)
    for (const char* spec : {"test_prepared:extra=0", "test_prepared:extra=7,factor=0.5", "test_prepared:extra=2,count=4",
                             "test_prepared:extra=3,count=4,factor=9", "test_prepared:extra=1,factor=3"})
      check_same_as_fresh(predictor, base, registry, spec);
  Graph direct = base;
  (void)registry.apply(direct, parse_scenario_spec("test_prepared:extra=3,count=2"));  // restructure: prepare, complete
  CHECK(direct.num_tasks() == base.num_tasks() + 5);
}

TEST_CASE("a split refuses prepare without complete, and a completed name the scenario lacks", "[scenario][split]") {
  ScenarioSplit split;
  split.retime = [](Graph&, const ScenarioParams&, const std::any&) { return ScenarioOutcome{}; };
  split.prepare = [](Graph&, const ScenarioParams&) { return std::any(); };
  CHECK_THROWS_WITH(split_scenario("s", "", {{"factor", ParamKind::number, 1, "x"}}, split),
                    "scenario 's': a split needs both restructure and retime");
  split.restructure = [](Graph&, const ScenarioParams&) { return std::any(); };
  CHECK_THROWS_WITH(split_scenario("s", "", {{"factor", ParamKind::number, 1, "x"}}, split),
                    "scenario 's': a split restructures in two parts with both prepare and complete");
  split.restructure = nullptr;
  split.complete = [](Graph&, const ScenarioParams&, const std::any&) { return std::any(); };
  split.completed = {"count"};
  CHECK_THROWS_WITH(split_scenario("s", "", {{"factor", ParamKind::number, 1, "x"}}, split),
                    "scenario 's': completed parameter 'count' is not one of its parameters");
}

TEST_CASE("a Predictor's what-ifs that only set times copy no task record", "[predict][split][reuse]") {
  std::mt19937 rng(8);
  const Graph base = test::random_chained_graph(rng, 4, 80);
  const ScenarioRegistry registry = probe_registry(std::make_shared<Calls>());
  const Predictor probe(base, registry), builtin(base);
  Graph changed;
  SimulationResult result;
  const auto shares_after = [&](const Predictor& predictor, const char* spec) {
    INFO(spec);
    (void)predictor.predict(parse_scenario_spec(spec), changed, result);
    return GraphAccess::shares_records(changed);
  };
  CHECK(shares_after(builtin, "faster_gpu:factor=2"));  // scaled on a copy of the base
  CHECK(shares_after(builtin, "faster_gpu:factor=3"));
  CHECK_FALSE(shares_after(probe, "test_split:factor=1"));  // a copy of the base restructured: tasks inserted
  CHECK(shares_after(probe, "test_split:factor=2"));  // restructured and kept: a copy of it retimed
  CHECK(shares_after(probe, "test_split:factor=3"));
  CHECK(GraphAccess::shares_records(changed));  // nor did their reports copy the records
  check_same_as_fresh(probe, base, registry, "test_split:factor=4");
}

TEST_CASE("a Predictor's base keeps the median launch call for the copies that ask it", "[predict][reuse]") {
  std::mt19937 rng(9);
  const Graph base = test::random_chained_graph(rng, 2, 20);
  CHECK_FALSE(GraphAccess::launch_call_median_built(base));
  const Predictor predictor(base);
  CHECK(GraphAccess::launch_call_median_built(predictor.base()));  // amp and fused_adam ask each what-if's copy
  const Graph copy = predictor.base();
  CHECK(GraphAccess::launch_call_median_built(copy));
  CHECK(median_launch_call_ns(copy) == median_launch_call_ns(base));
}

TEST_CASE("a split scenario's error through a Predictor names the scenario", "[predict][split]") {
  std::mt19937 rng(6);
  const ScenarioRegistry registry = probe_registry(std::make_shared<Calls>());
  const Predictor predictor(test::random_chained_graph(rng, 2, 20), registry);
  for (int i = 0; i < 3; ++i)  // met once, kept, again
    CHECK_THROWS_WITH(predictor.predict(parse_scenario_spec("test_split:count=0")),
                      "scenario 'test_split': count 0: nothing to insert");
}

TEST_CASE("amp, cuda_graphs, fused_adam, ddp and p3 predict from kept restructured graphs as from the base",
          "[predict][split][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const auto files = test::traces_at("resnet50-v100-dataloader/workers0");
  REQUIRE(files.size() == 1);
  const Graph base = build_graph(load_trace(files[0].string()));
  const Predictor predictor(base);
  for (const char* spec : {"amp:tensor_core=2,other=1.5", "amp:tensor_core=3,other=2", "amp:tensor_core=4",
                           "cuda_graphs:launch=5us", "cuda_graphs:launch=20us", "cuda_graphs:launch=1us",
                           "fused_adam:factor=0.5", "fused_adam:factor=0.8,kernels=3", "fused_adam:factor=1.5,kernels=3",
                           "fused_adam:factor=2", "fused_adam:kernels=2", "fused_adam:kernels=4,factor=0.7",
                           "amp:tensor_core=5,other=3", "cuda_graphs:launch=7us",
                           "ddp:machines=4,gpus=8,params=25.6e6,bandwidth=1Gbps",  // all-reduces inserted
                           "ddp:machines=4,gpus=8,params=25.6e6,bandwidth=10Gbps",
                           "ddp:machines=4,gpus=8,params=25.6e6,bandwidth=100Gbps"})
    check_same_as_fresh(predictor, base, builtin_scenarios(), spec);

  const auto ddp_run = test::traces_at("ddp-resnet-v100-rank0");  // all-reduces traced: re-costed, re-bucketed
  REQUIRE(ddp_run.size() == 1);
  const Graph traced = build_graph(load_trace(ddp_run[0].string()));
  const Predictor traced_predictor(traced);
  for (const char* spec : {"ddp:machines=4,gpus=8,bandwidth=10Gbps", "ddp:machines=4,gpus=8,bandwidth=25Gbps",
                           "ddp:machines=4,gpus=8,bandwidth=100Gbps", "ddp:bucket=50MiB,latency=5us",
                           "ddp:bucket=50MiB,latency=50us", "ddp:bucket=50MiB,latency=500us",
                           "p3:machines=4,gpus=8,bandwidth=10Gbps", "p3:machines=4,gpus=8,bandwidth=25Gbps",
                           "p3:machines=4,gpus=8,bandwidth=100Gbps"})
    check_same_as_fresh(traced_predictor, traced, builtin_scenarios(), spec);
}

TEST_CASE("a sweep on many threads builds and shares kept graphs as one thread does", "[predict][split]") {
  std::mt19937 rng(7);
  const Graph base = test::random_chained_graph(rng, 6, 400);
  const ScenarioRegistry registry = probe_registry(std::make_shared<Calls>());
  std::vector<ScenarioSpec> specs;
  for (int i = 0; i < 64; ++i)  // four keys, interleaved, each met 16 times
    specs.push_back(parse_scenario_spec(fmt::format("test_split:count={},factor={}", 1 + i % 4, 0.25 * (i % 7))));
  const auto one = sweep(Predictor(base, registry), specs, {1, {}});
  const auto many = sweep(Predictor(base, registry), specs, {4, {}});
  REQUIRE(one.size() == many.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    INFO(specs[i].text());
    REQUIRE(one[i].prediction);
    REQUIRE(many[i].prediction);
    CHECK(to_json(*one[i].prediction, "t") == to_json(*many[i].prediction, "t"));
    const Prediction fresh = Predictor(base, registry).predict(specs[i]);
    CHECK(to_json(fresh, "t") == to_json(*many[i].prediction, "t"));
  }
}
