// Patterns (docs/transform.md, "Patterns"; issue 18, item 2): every pattern is an RE2 expression,
// matched in linear time without recursion. Each case here overflowed the stack (SIGSEGV) or ran
// for minutes under std::regex's recursive backtracking.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "common/pattern.hpp"
#include "daydream/error.hpp"
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/predict.hpp"
#include "daydream/transform.hpp"
#include "unit/graph_helpers.hpp"
#include "unit/trace_builder.hpp"

namespace {

using daydream::Error;
using daydream::TaskFilter;
using daydream::test::KinetoJson;

/// One step: a GEMM, and a kernel named `long_name`, each launched by its own call.
std::string with_kernel_named(const std::string& long_name) {
  KinetoJson json;
  json.annotation("ProfilerStep#1", 0, 200)
      .cpu_op("aten::mm", 5, 20)
      .runtime("cudaLaunchKernel", 10, 5, 1)
      .kernel("volta_sgemm_128x64_nn", 20, 30, 1)
      .cpu_op("aten::batch_norm", 40, 20)
      .runtime("cudaLaunchKernel", 45, 5, 2)
      .kernel(long_name, 60, 30, 2);
  return json.str();
}

}  // namespace

TEST_CASE("patterns: a name of 100,000 characters is searched without recursion", "[patterns]") {
  using namespace daydream;
  // A templated kernel name as long as real ones get, of the shape the default patterns scan
  // with [^(]* and alternations (the stack overflowed at 20-100k characters under std::regex).
  const std::string long_name = "void batch_norm_kernel<" + std::string(100'000, 'a') + ">(float*)";
  Graph graph = test::graph_of(with_kernel_named(long_name));
  CHECK(graph.select(TaskFilter().name("(?i)^[^(]*(gemm|conv)")).size() == 1);
  CHECK(graph.select(TaskFilter().name("batch_norm_kernel<a+>")).size() == 1);
  CHECK(graph.select(TaskFilter().name("^(a|aa)*$")).empty());
  const Predictor predictor(graph);
  for (const char* spec : {"amp", "amp:tensor_core=3", "restructure_bn"})
    CHECK_NOTHROW(predictor.predict(parse_scenario_spec(spec)));
}

TEST_CASE("patterns: a pattern that backtracks exponentially elsewhere is linear here", "[patterns]") {
  using namespace daydream;
  Graph graph = test::graph_of(with_kernel_named(std::string(5'000, 'a') + "!"));
  // (a+)+$ against a...a! takes 2^n steps in a backtracking engine.
  CHECK(graph.select(TaskFilter().name("^(a+)+$")).empty());
  CHECK(graph.select(TaskFilter().name("^(a|a)*!$")).size() == 1);
}

TEST_CASE("patterns: what RE2 cannot compile is refused naming the pattern and the reason", "[patterns]") {
  using namespace daydream;
  Graph graph = test::graph_of(with_kernel_named("k"));
  // 20,000 nested groups: parsed without recursion (std::regex overflowed the stack).
  std::string nested;
  for (int i = 0; i < 20'000; ++i) nested += '(';
  nested += "volta";
  for (int i = 0; i < 20'000; ++i) nested += ')';
  CHECK(graph.select(TaskFilter().name(nested)).size() == 1);
  // A million instructions: over the program's memory budget, refused, the message kept short.
  std::string wide;
  for (int i = 0; i < 1000; ++i) wide += "[a-z]{1000}";
  CHECK_THROWS_WITH(graph.select(TaskFilter().name(wide)),
                    Catch::Contains("invalid name pattern '[a-z]{1000}[a-z]") && Catch::Contains("(11000 characters)") &&
                        Catch::Contains("not a regular expression RE2 accepts (pattern too large"));
  CHECK_THROWS_WITH(graph.select(TaskFilter().name("^(?!gemm)k")),
                    Catch::Contains("invalid name pattern '^(?!gemm)k'") && Catch::Contains("RE2 accepts"));
  CHECK_THROWS_WITH(graph.select(TaskFilter().layer("(a)\\1")), Catch::Contains("invalid layer pattern"));
  CHECK_THROWS_WITH(check_pattern("x{1000}{1000}", "amp"), Catch::Contains("invalid amp pattern"));
  CHECK_THROWS_WITH(test::graph_of(with_kernel_named("k"), GraphOptions{.iterations = "step(" }),
                    Catch::Contains("field \"iterations\"") && Catch::Contains("invalid iterations pattern 'step('"));
}

TEST_CASE("patterns: the syntax users write keeps its meaning", "[patterns]") {
  using namespace daydream;
  Graph graph = test::graph_of(with_kernel_named("Elementwise_Kernel<float>"));
  CHECK(graph.select(TaskFilter().name("(?i)elementwise")).size() == 1);
  CHECK(graph.select(TaskFilter().name("elementwise")).empty());  // case-sensitive without (?i)
  CHECK(graph.select(TaskFilter().name("\\bsgemm_\\d+x\\d+")).empty());
  CHECK(graph.select(TaskFilter().name("_sgemm_\\d+x\\d+_[nt]{2}$")).size() == 1);
  CHECK(graph.select(TaskFilter().kind(TaskKind::kernel).name_not("(?i)gemm")).size() == 1);
  // amp's tensor-core kernels: pattern minus exclude (a lookahead before RE2).
  KinetoJson json;
  json.annotation("ProfilerStep#1", 0, 200)
      .runtime("cudaLaunchKernel", 10, 5, 1)
      .kernel("cutlass_80_tensorop_s1688gemm_64x64", 20, 30, 1)
      .runtime("cudaLaunchKernel", 45, 5, 2)
      .kernel("computeOffsetsKernel<conv>", 60, 30, 2);
  const Predictor amp(test::graph_of(json.str()));
  const Prediction fixed = amp.predict(parse_scenario_spec("amp:tensor_core=3,other=2,casts=0"));
  CHECK(fixed.notes.front().find("1 tensor-core kernels scaled by 1/3") != std::string::npos);
  const Prediction no_exclude = amp.predict(parse_scenario_spec("amp:tensor_core=3,other=2,casts=0,exclude="));
  CHECK(no_exclude.notes.front().find("2 tensor-core kernels scaled by 1/3") != std::string::npos);
}

TEST_CASE("patterns: a pattern compiled again is the same pattern, from any thread", "[patterns]") {
  // Compiled patterns are shared across the process (a sweep names the same few thousands of
  // times): a second compilation must match as the first, an invalid one must be refused every
  // time, and threads compiling and matching at once must agree.
  using namespace daydream;
  const Pattern first("(?i)^[^(]*(gemm|conv)", "test");
  const Pattern again("(?i)^[^(]*(gemm|conv)", "test");
  for (const char* name : {"volta_sgemm_128x64_nn", "Conv3d", "elementwise(gemm)", "relu"})
    CHECK(first.search(name) == again.search(name));
  CHECK(again.search("implicit_CONVOLVE"));
  CHECK_FALSE(again.search("relu"));
  for (int k = 0; k < 2; ++k) CHECK_THROWS_WITH(Pattern("(a)\\1", "test"), Catch::Contains("invalid test pattern"));
  // More distinct patterns than the cache keeps: each still means itself.
  for (int i = 0; i < 600; ++i) {
    const Pattern p(fmt::format("^k{}$", i), "test");
    CHECK(p.search(fmt::format("k{}", i)));
    CHECK_FALSE(p.search(fmt::format("k{}", i + 1)));
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        const int k = (i + t) % 300;
        const Pattern p(fmt::format("^t{}_", k), "test");
        if (!p.search(fmt::format("t{}_x", k)) || p.search("u_x")) ++wrong;
      }
    });
  for (auto& thread : threads) thread.join();
  CHECK(wrong == 0);
}
