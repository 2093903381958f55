// Scenario specs, grids, scenario files, parameter units and ranges, and the registry's errors.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>

#include "daydream/error.hpp"
#include "daydream/scenario.hpp"

namespace daydream {
namespace {

// A scenario with one parameter of each kind.
Scenario make_probe() {
  Scenario s;
  s.name = "test_probe";
  s.summary = "records its parameters";
  s.params = {{"factor", ParamKind::number, 2.0, "x", 0, 100, true},
              {"count", ParamKind::integer, 3, "n", 1, 64},
              {"bandwidth", ParamKind::bandwidth, 1.25e9, "link"},
              {"bucket", ParamKind::bytes, 25e6, "bucket", 0},
              {"latency", ParamKind::duration, 5e3, "per message", 0},
              ScenarioParam::text("pattern", "(?i)gemm", "kernels")};
  s.apply = [](Graph&, const ScenarioParams&) { return ScenarioOutcome{}; };
  return s;
}

const Scenario& probe() {
  static const Scenario s = make_probe();
  return s;
}

ScenarioParams resolve(const std::string& spec) { return resolve_params(probe(), parse_scenario_spec(spec)); }

TEST_CASE("scenario specs: name, arguments in order, canonical text", "[scenario][spec]") {
  const auto s = parse_scenario_spec("  ddp:machines=4, gpus=2,bandwidth=10Gbps ");
  CHECK(s.name == "ddp");
  REQUIRE(s.args.size() == 3);
  CHECK(s.args[1] == std::pair<std::string, std::string>{"gpus", "2"});
  CHECK(s.text() == "ddp:machines=4,gpus=2,bandwidth=10Gbps");
  CHECK(parse_scenario_spec("amp").text() == "amp");
  CHECK(parse_scenario_spec("amp:").args.empty());
  CHECK(parse_scenario_spec("amp:exclude=").args == std::vector<std::pair<std::string, std::string>>{{"exclude", ""}});
  CHECK(resolve("probe:pattern=").text("pattern").empty());
  CHECK_THROWS_WITH(resolve("probe:count="), Catch::Contains("'count' = '' is not a valid integer"));
  CHECK_THROWS_WITH(parse_scenario_spec(""), Catch::Contains("expected name"));
  CHECK_THROWS_WITH(parse_scenario_spec("ddp:machines"), Catch::Contains("'machines' is not key=value"));
  CHECK_THROWS_WITH(parse_scenario_spec("ddp:machines=1,machines=2"), Catch::Contains("given twice"));
  CHECK_THROWS_WITH(parse_scenario_spec("d d p"), Catch::Contains("expected name"));
}

TEST_CASE("scenario grids expand to every combination, first key slowest", "[scenario][spec]") {
  const auto specs = expand_scenario_grid("ddp:machines=1|2,gpus=8,bandwidth=10Gbps|40Gbps|100Gbps");
  REQUIRE(specs.size() == 6);
  CHECK(specs[0].text() == "ddp:machines=1,gpus=8,bandwidth=10Gbps");
  CHECK(specs[2].text() == "ddp:machines=1,gpus=8,bandwidth=100Gbps");
  CHECK(specs[5].text() == "ddp:machines=2,gpus=8,bandwidth=100Gbps");
  CHECK(expand_scenario_grid("amp").size() == 1);
  CHECK_THROWS_WITH(expand_scenario_grid("ddp:machines=1||2"), Catch::Contains("empty alternative"));
}

TEST_CASE("scenario grids are counted before they are expanded", "[scenario][spec]") {
  // 7 keys of 10 values: 10^7 combinations, refused at once (it built 10^7 specs before).
  std::string grid = "probe:";
  for (const char* key : {"a", "b", "c", "d", "e", "f", "g"}) grid += std::string(key) + "=0|1|2|3|4|5|6|7|8|9,";
  grid.pop_back();
  CHECK_THROWS_WITH(expand_scenario_grid(grid), Catch::Contains("the grid has more than 100000 combinations") &&
                                                    Catch::Contains("--max-specs"));
  CHECK(expand_scenario_grid("probe:a=1|2|3,b=1|2", 6).size() == 6);
  CHECK_THROWS_WITH(expand_scenario_grid("probe:a=1|2|3,b=1|2", 5), Catch::Contains("more than 5 combinations"));
  // A product past 64 bits saturates instead of wrapping around to a small count.
  std::string huge = "probe:";
  for (int key = 0; key < 70; ++key) huge += fmt::format("k{}=1|2,", key);
  huge.pop_back();
  CHECK_THROWS_WITH(expand_scenario_grid(huge, SIZE_MAX - 1), Catch::Contains("combinations"));
  const std::string path = "test_scenarios_budget.txt";
  std::ofstream(path) << "probe:a=1|2|3\nprobe:b=1|2|3\n";
  CHECK(read_scenario_file(path, 6).size() == 6);
  CHECK_THROWS_WITH(read_scenario_file(path, 5), Catch::Contains("line 2") && Catch::Contains("more than 2 combinations"));
  std::remove(path.c_str());
}

TEST_CASE("scenario files: comments, blank lines, grids, errors name the line", "[scenario][spec]") {
  const std::string path = "test_scenarios_file.txt";
  {
    std::ofstream out(path);
    out << "# what-ifs\n\namp\nfaster_gpu:factor=2|4\n";
  }
  const auto specs = read_scenario_file(path);
  REQUIRE(specs.size() == 3);
  CHECK(specs[2].text() == "faster_gpu:factor=4");
  {
    std::ofstream out(path);
    out << "amp\n\nddp:machines\n";
  }
  CHECK_THROWS_WITH(read_scenario_file(path), Catch::Contains("test_scenarios_file.txt: line 3"));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(read_scenario_file("no/such/file.txt"), Catch::Contains("cannot open"));
}

TEST_CASE("scenario parameters: units to canonical values, defaults, given()", "[scenario][spec]") {
  const auto defaults = resolve("test_probe");
  CHECK(defaults.number("factor") == 2.0);
  CHECK(defaults.integer("count") == 3);
  CHECK(defaults.text("pattern") == "(?i)gemm");
  CHECK_FALSE(defaults.given("factor"));
  const auto p = resolve("test_probe:factor=0.5,count=8,bandwidth=10Gbps,bucket=4MiB,latency=1.5ms,pattern=conv");
  CHECK(p.given("factor"));
  CHECK(p.number("factor") == 0.5);
  CHECK(p.number("bandwidth") == 1.25e9);  // bytes per second
  CHECK(p.number("bucket") == 4.0 * 1024 * 1024);
  CHECK(p.number("latency") == 1.5e6);  // ns
  CHECK(p.text("pattern") == "conv");
  CHECK(resolve("test_probe:bandwidth=12GB/s").number("bandwidth") == 12e9);
  CHECK(resolve("test_probe:bandwidth=40").number("bandwidth") == 5e9);  // bare number: Gbps
  CHECK(resolve("test_probe:latency=200").number("latency") == 200e3);   // bare number: us
  CHECK(std::isinf(resolve("test_probe:bandwidth=inf").number("bandwidth")));
  CHECK_THROWS_WITH(defaults.number("nope"), Catch::Contains("'nope' is not defined"));
}

TEST_CASE("bad scenario specs are refused with the valid names, parameters and ranges", "[scenario][spec]") {
  ScenarioRegistry with_probe = builtin_scenarios();
  with_probe.add(make_probe());
  Graph g;
  CHECK_THROWS_WITH(apply_scenario(g, parse_scenario_spec("no_such_scenario"), with_probe),
                    Catch::Contains("unknown scenario 'no_such_scenario' (valid: ") && Catch::Contains("test_probe"));
  CHECK_THROWS_WITH(resolve("test_probe:speed=2"),
                    Catch::Contains("no parameter 'speed'") && Catch::Contains("factor (number, > 0..100; default 2)") &&
                        Catch::Contains("count (integer, 1..64; default 3)"));
  CHECK_THROWS_WITH(resolve("test_probe:factor=0"), Catch::Contains("'factor' = '0' is out of range (valid: > 0..100)"));
  CHECK_THROWS_WITH(resolve("test_probe:factor=nan"), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(resolve("test_probe:factor=-inf"), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(resolve("test_probe:factor=fast"), Catch::Contains("is not a valid number"));
  CHECK_THROWS_WITH(resolve("test_probe:count=2.5"), Catch::Contains("whole numbers"));
  CHECK_THROWS_WITH(resolve("test_probe:count=0"), Catch::Contains("out of range (valid: 1..64"));
  CHECK_THROWS_WITH(resolve("test_probe:bandwidth=10furlongs"),
                    Catch::Contains("not a valid bandwidth (e.g. 10Gbps, 100Mbps, 12GB/s"));
  CHECK_THROWS_WITH(resolve("test_probe:bucket=-1MB"), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(resolve("test_probe:latency=5parsecs"), Catch::Contains("not a valid duration"));
}

TEST_CASE("the registry lists the built-in scenarios with their parameters", "[scenario][spec]") {
  const ScenarioRegistry& all = builtin_scenarios();
  for (const char* name : {"amp", "faster_gpu", "faster_network", "channels_last", "pinned_memory", "fused_adam",
                           "restructure_bn", "cuda_graphs", "ddp", "p3", "dataloader_workers", "network", "rank_speed",
                           "scale_out", "gpu"})
    CHECK(all.contains(name));
  CHECK(all.size() == 15);
  CHECK_THAT(describe_scenario(all.find("dataloader_workers")), Catch::Contains("workers (integer, 0..1024; default 4)"));
  CHECK_THROWS_WITH(all.find("nope"), Catch::StartsWith("unknown scenario 'nope' (valid: amp, channels_last, cuda_graphs"));
}

TEST_CASE("a registry is a value: a scenario added to a copy is not in the original", "[scenario][spec]") {
  ScenarioRegistry mine = builtin_scenarios();
  mine.add(make_probe());
  CHECK(mine.contains("test_probe"));
  CHECK_FALSE(builtin_scenarios().contains("test_probe"));
  Scenario no_script = make_probe();
  no_script.apply = nullptr;
  CHECK_THROWS_WITH(mine.add(no_script), "scenario 'test_probe' has no apply function");
}

TEST_CASE("a scenario's error comes out prefixed with its name", "[scenario][spec]") {
  ScenarioRegistry mine;
  Scenario bare = make_probe();
  bare.apply = [](Graph&, const ScenarioParams&) -> ScenarioOutcome { throw Error("the graph has no optimizer step"); };
  mine.add(bare);
  Graph g;
  CHECK_THROWS_WITH(apply_scenario(g, parse_scenario_spec("test_probe"), mine),
                    "scenario 'test_probe': the graph has no optimizer step");
  CHECK_THROWS_WITH(mine.apply(g, parse_scenario_spec("test_probe")),
                    "scenario 'test_probe': the graph has no optimizer step");
  // No built-in names itself in its own messages (the prefix is added once, here).
  const Graph one_trace;
  for (const char* job_only : {"network", "rank_speed", "scale_out"}) {
    Graph copy = one_trace;
    CHECK_THROWS_WITH(apply_scenario(copy, parse_scenario_spec(job_only)),
                      Catch::StartsWith(std::string("scenario '") + job_only + "': needs a multi-rank job graph"));
  }
  CHECK_THROWS_WITH(apply_scenario(g, parse_scenario_spec("test_probe")), Catch::StartsWith("unknown scenario"));
}

TEST_CASE("scenario help shows values in human units that parse back to the same value", "[scenario]") {
  const ScenarioRegistry registry = builtin_scenarios();
  std::size_t checked = 0;
  for (const auto& [name, scenario] : registry) {
    const std::string help = describe_scenario(scenario);
    for (const ScenarioParam& p : scenario.params) {
      if (p.kind != ParamKind::bandwidth && p.kind != ParamKind::bytes && p.kind != ParamKind::duration) continue;
      if (!p.automatic_means.empty() || !std::isfinite(p.default_value)) continue;
      const std::string marker = "  " + p.name + " (";
      const auto at = help.find(marker);
      REQUIRE(at != std::string::npos);
      const auto from = help.find("default ", at) + 8, to = help.find(')', from);
      const std::string shown = help.substr(from, to - from);
      INFO(name << "." << p.name << " default shown as " << shown);
      CHECK(shown.find('e') == std::string::npos);  // no 26.2144MB, no 1e+06us: a unit it fits
      const ScenarioParams parsed = resolve_params(scenario, parse_scenario_spec(name + ":" + p.name + "=" + shown));
      CHECK(parsed.number(p.name) == Approx(p.default_value).epsilon(1e-5));
      ++checked;
    }
  }
  CHECK(checked >= 7);  // buckets, slices, delays, ...
}

}  // namespace
}  // namespace daydream
