// Iterations from annotations (lib/graph/iterations.cpp, docs/graph.md "Iterations"): which range
// names count, the marking thread, start-to-start windows and their simulated time.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "daydream/error.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/simulate.hpp"
#include "unit/graph_helpers.hpp"
#include "unit/trace_builder.hpp"

using namespace daydream;
using test::task_named;
using test::us;

namespace {

// One range named `name` around one operator, on thread 1.
Graph one_range(const std::string& name, const GraphOptions& options = {}) {
  return test::graph_of(test::KinetoJson().annotation(name, 0, 100).cpu_op("aten::add", 10, 20).str(), options);
}

Graph with_pattern(const std::string& json, const std::string& pattern) {
  GraphOptions options;
  options.iterations = pattern;
  return test::graph_of(json, options);
}

std::string unit_name_of(const Graph& g, TaskId t) { return g.units()[g.task(t).unit].name; }

// Thread 1 marks three `step N` ranges with gaps between them ([10, 100), [150, 250), [300, 350));
// step 2 holds a nested `step 2` (a second record_function of the same name). Thread 2 holds one
// `step 9` range, before the others, and one operator in the gap after step 2. A kernel launched
// in step 2 runs in step 3's window; a kernel without a launch call runs in step 1's gap.
std::string three_loop_steps() {
  return test::KinetoJson()
      .annotation("step 9", 0, 5, 2)
      .annotation("step 1", 10, 90, 1)
      .cpu_op("aten::mm", 20, 30, 1)
      .cpu_op("aten::copy_", 110, 20, 1)  // in the gap after step 1: the data wait
      .annotation("step 2", 150, 100, 1)
      .annotation("step 2", 160, 40, 1)  // nested: not a second iteration
      .runtime("cudaLaunchKernel", 200, 5, 1, 1)
      .kernel("late_kernel", 310, 10, 1)
      .kernel("orphan_kernel", 120, 5, 99)
      .cpu_op("loader_op", 260, 20, 2)  // thread 2, in the gap after step 2
      .annotation("step 3", 300, 50, 1)
      .cpu_op("aten::sum", 320, 10, 1)
      .cpu_op("after_the_last", 360, 10, 1)
      .str();
}

}  // namespace

TEST_CASE("iterations: the default forms, ProfilerStep#N first", "[graph][iterations]") {
  SECTION("recognised names, the words in any case") {
    const std::vector<std::pair<std::string, std::string>> names = {
        {"ProfilerStep#12", "ProfilerStep#N"}, {"step 3", "step N"},       {"Step 3", "step N"},
        {"STEP 42", "step N"},                 {"iteration 7", "iteration N"}, {"Iteration 7", "iteration N"},
        {"iter 5", "iter N"},                  {"ITER 5", "iter N"}};
    for (const auto& [name, form] : names) {
      CAPTURE(name);
      const Graph g = one_range(name);
      REQUIRE(g.iterations().size() == 1);
      CHECK(g.iterations()[0].name == name);
      CHECK(g.iteration_rule.form == form);
      CHECK(g.iteration_rule.pattern.empty());
      CHECK(g.iteration_rule.measure ==
            (form == "ProfilerStep#N" ? IterationMeasure::range : IterationMeasure::start_to_start));
    }
  }
  SECTION("names that only look alike are not iterations") {
    for (const std::string name : {"steps 3", "step 3a", "stepper", "step", "step ", "step  3", "profilerstep#1",
                                   "ProfilerStep#", "iter3", "iterations 2", "optimizer step 1"}) {
      CAPTURE(name);
      const Graph g = one_range(name);
      CHECK(g.iterations().empty());
      CHECK(g.iteration_rule.form.empty());
      CHECK(g.iteration_rule.thread.empty());
      CHECK(g.task(task_named(g, "aten::add")).iteration == -1);
      CHECK(g.report().get("iteration_pattern_unmatched") == 0);  // only a user pattern is reported
    }
  }
  SECTION("ProfilerStep#N wins over step N, step N over iteration N") {
    const Graph g = test::graph_of(test::KinetoJson()
                                       .annotation("step 1", 0, 100)
                                       .annotation("ProfilerStep#1", 10, 80)
                                       .annotation("iteration 1", 20, 60)
                                       .annotation("iteration 2", 200, 60)
                                       .cpu_op("aten::add", 30, 10)
                                       .str());
    REQUIRE(g.iterations().size() == 1);
    CHECK(g.iterations()[0].name == "ProfilerStep#1");
    CHECK(g.iteration_rule.form == "ProfilerStep#N");

    const Graph h = test::graph_of(test::KinetoJson()
                                       .annotation("iteration 1", 0, 100)
                                       .annotation("iteration 2", 100, 100)
                                       .annotation("step 1", 10, 80)
                                       .cpu_op("aten::add", 30, 10)
                                       .str());
    REQUIRE(h.iterations().size() == 1);
    CHECK(h.iterations()[0].name == "step 1");
    CHECK(h.iteration_rule.form == "step N");
  }
}

TEST_CASE("iterations: step N ranges on the marking thread, measured start to start", "[graph][iterations]") {
  const Graph g = test::graph_of(three_loop_steps());
  const TaskId mm = task_named(g, "aten::mm");

  const IterationRule& rule = g.iteration_rule;
  CHECK(rule.pattern.empty());
  CHECK(rule.form == "step N");
  CHECK(rule.measure == IterationMeasure::start_to_start);
  CHECK(rule.thread == unit_name_of(g, mm));  // thread 1: three matches against thread 2's one
  CHECK(rule.thread != unit_name_of(g, task_named(g, "loader_op")));

  // Three iterations (the nested `step 2` is not one, thread 2's `step 9` neither), each measured
  // to the next one's start; the last one is its range.
  const auto& its = g.iterations();
  REQUIRE(its.size() == 3);
  CHECK(its[0].name == "step 1");
  CHECK(its[1].name == "step 2");
  CHECK(its[2].name == "step 3");
  CHECK(its[0].measured_start_ns == 10 * us);
  CHECK(its[1].measured_start_ns == 150 * us);
  CHECK(its[2].measured_start_ns == 300 * us);
  CHECK(its[0].measured_ns == 140 * us);
  CHECK(its[1].measured_ns == 150 * us);
  CHECK(its[2].measured_ns == 50 * us);
  CHECK(its[0].to_next_start);
  CHECK(its[1].to_next_start);
  CHECK_FALSE(its[2].to_next_start);

  // First and last task of each window on the marking thread.
  CHECK(its[0].first_task == task_named(g, "step 1"));
  CHECK(its[0].last_task == task_named(g, "aten::copy_"));
  CHECK(its[1].first_task == task_named(g, "step 2"));
  CHECK(g.task(its[1].last_task).recorded_start_ns == 205 * us);  // step 2's tail after the launch
  CHECK(its[2].first_task == task_named(g, "step 3"));
  CHECK(its[2].last_task == task_named(g, "step 3", 1));

  // Membership: a task in the gap after a range belongs to the iteration before it, on any
  // thread; GPU tasks follow their launch call; a task after the last range belongs to none.
  CHECK(g.task(mm).iteration == 0);
  CHECK(g.task(task_named(g, "aten::copy_")).iteration == 0);
  CHECK(g.task(task_named(g, "orphan_kernel")).iteration == 0);   // no launch: by its start (120 us)
  CHECK(g.task(task_named(g, "loader_op")).iteration == 1);       // thread 2, in step 2's gap
  CHECK(g.task(task_named(g, "late_kernel")).iteration == 1);     // runs at 310 us, launched in step 2
  CHECK(g.task(task_named(g, "aten::sum")).iteration == 2);
  CHECK(g.task(task_named(g, "after_the_last")).iteration == -1);  // step 3 is measured as its range
  CHECK(g.task(task_named(g, "step 9")).iteration == -1);          // before the first window
}

TEST_CASE("iterations: ProfilerStep#N ranges are measured as their range", "[graph][iterations]") {
  const Graph g = test::graph_of(test::KinetoJson()
                                     .annotation("ProfilerStep#1", 0, 100)
                                     .cpu_op("aten::mm", 10, 30)
                                     .cpu_op("between", 110, 20)
                                     .annotation("ProfilerStep#2", 150, 80)
                                     .cpu_op("aten::mm", 160, 30)
                                     .str());
  CHECK(g.iteration_rule.form == "ProfilerStep#N");
  CHECK(g.iteration_rule.measure == IterationMeasure::range);
  const auto& its = g.iterations();
  REQUIRE(its.size() == 2);
  CHECK(its[0].measured_ns == 100 * us);
  CHECK(its[1].measured_ns == 80 * us);
  CHECK_FALSE(its[0].to_next_start);
  CHECK_FALSE(its[1].to_next_start);
  CHECK(g.task(task_named(g, "between")).iteration == -1);  // outside both ranges

  const auto report = make_replay_report(g, simulate(g));
  REQUIRE(report.iterations.size() == 2);
  CHECK(report.iterations[0].simulated_ns == 100 * us);  // not stretched to the next start
  CHECK(report.iterations[1].simulated_ns == 80 * us);
}

TEST_CASE("iterations: a user pattern picks its ranges, measured start to start", "[graph][iterations]") {
  const std::string json = test::KinetoJson()
                               .annotation("ProfilerStep#1", 0, 400)
                               .annotation("epoch-1", 10, 100)
                               .cpu_op("aten::mm", 20, 30)
                               .annotation("epoch-1b", 130, 10)      // `$` rules it out
                               .annotation("my epoch-2", 150, 10)    // `^` rules it out
                               .annotation("epoch-2", 200, 100)
                               .cpu_op("aten::mm", 210, 30)
                               .str();
  const Graph g = with_pattern(json, "^epoch-[0-9]+$");
  const IterationRule& rule = g.iteration_rule;
  CHECK(rule.pattern == "^epoch-[0-9]+$");
  CHECK(rule.form == "^epoch-[0-9]+$");
  CHECK(rule.measure == IterationMeasure::start_to_start);
  CHECK(rule.thread == unit_name_of(g, task_named(g, "aten::mm")));
  REQUIRE(g.iterations().size() == 2);
  CHECK(g.iterations()[0].name == "epoch-1");
  CHECK(g.iterations()[1].name == "epoch-2");
  CHECK(g.iterations()[0].measured_ns == 190 * us);  // 10 -> 200
  CHECK(g.iterations()[1].measured_ns == 100 * us);
  CHECK(g.task(task_named(g, "epoch-1b")).iteration == 0);
  CHECK(g.report().get("iteration_pattern_unmatched") == 0);
  CHECK(describe(rule) ==
        "ranges matching /^epoch-[0-9]+$/ on " + rule.thread + ", measured start to start (the last one: its range)");

  SECTION("an invalid expression is an Error naming the option") {
    try {
      (void)with_pattern(json, "epoch-([0-9]+");
      FAIL("no Error thrown");
    } catch (const Error& e) {
      CHECK(e.field() == "iterations");
      CHECK(std::string(e.what()).find("iterations") != std::string::npos);
      CHECK(std::string(e.what()).find("epoch-([0-9]+") != std::string::npos);
    }
  }
  SECTION("an expression matching nothing: no iterations, reported") {
    const Graph none = with_pattern(json, "^batch [0-9]+$");
    CHECK(none.iterations().empty());
    CHECK(none.iteration_rule.thread.empty());
    CHECK(none.task(task_named(none, "aten::mm")).iteration == -1);
    CHECK(none.report().get("iteration_pattern_unmatched") == 1);
    const auto& stats = none.report().stats();
    const auto it = std::find_if(stats.begin(), stats.end(),
                                 [](const auto& s) { return s.key == "iteration_pattern_unmatched"; });
    REQUIRE(it != stats.end());
    CHECK(it->severity == Severity::error);
  }
}

TEST_CASE("iterations: describe() says which ranges and how they are measured", "[graph][iterations]") {
  IterationRule rule;
  CHECK(describe(rule).rfind(
            "no iterations: no CPU range is named ProfilerStep#N, step N, iteration N, iter N or Optimizer.step#...", 0) ==
        0);
  rule = {"", "ProfilerStep#N", IterationMeasure::range, "thread 1"};
  CHECK(describe(rule) == "`ProfilerStep#N` ranges on thread 1, each measured as its range");
  rule = {"", "step N", IterationMeasure::start_to_start, "thread 1"};
  CHECK(describe(rule) == "`step N` ranges on thread 1, measured start to start (the last one: its range)");
  rule = {"", "Optimizer.step#...", IterationMeasure::end_to_end, "thread 1"};
  CHECK(describe(rule) == "no step marks: iterations between the ends of `Optimizer.step#...` ranges on thread 1, "
                          "each from one optimizer step's end to the next's (named by the step that ends it)");
}

// Three optimizer steps (torch.optim's record_function ranges) and no step marks: two iterations,
// each from one step's end to the next step's end.
std::string three_optimizer_steps() {
  return test::KinetoJson()
      .cpu_op("aten::mm", 0, 40)
      .annotation("Optimizer.step#SGD.step", 50, 20)
      .cpu_op("aten::mm", 80, 40)
      .annotation("Optimizer.step#SGD.step", 130, 30)
      .cpu_op("aten::mm", 170, 40)
      .annotation("Optimizer.step#SGD.step", 220, 20)
      .cpu_op("aten::add_", 225, 10)
      .str();
}

TEST_CASE("iterations: without step marks, optimizer steps end the iterations", "[graph][iterations]") {
  const Graph g = test::graph_of(three_optimizer_steps());
  CHECK(g.iteration_rule.form == "Optimizer.step#...");
  CHECK(g.iteration_rule.measure == IterationMeasure::end_to_end);
  const auto& its = g.iterations();
  REQUIRE(its.size() == 2);
  CHECK(its[0].name == "optimizer step 2");
  CHECK(its[1].name == "optimizer step 3");
  CHECK(its[0].measured_start_ns == 70 * us);  // the first step's end
  CHECK(its[0].measured_ns == 90 * us);        // to the second's end (160)
  CHECK(its[1].measured_start_ns == 160 * us);
  CHECK(its[1].measured_ns == 80 * us);  // to the third's end (240)
  CHECK(its[0].to_next_start);
  CHECK_FALSE(its[1].to_next_start);
  CHECK(g.task(task_named(g, "aten::mm", 0)).iteration == -1);  // before the first step's end
  CHECK(g.task(task_named(g, "aten::mm", 1)).iteration == 0);
  CHECK(g.task(task_named(g, "aten::add_")).iteration == 1);
  const auto spans = simulated_iteration_spans(g, simulate(g));
  REQUIRE(spans.size() == 2);
  CHECK(spans[0].end_ns - spans[0].start_ns == 90 * us);
  CHECK(spans[1].end_ns - spans[1].start_ns == 80 * us);

  // A step mark wins over the optimizer's steps.
  const Graph marked = test::graph_of(test::KinetoJson()
                                          .annotation("ProfilerStep#4", 0, 300)
                                          .cpu_op("aten::mm", 10, 40)
                                          .annotation("Optimizer.step#SGD.step", 50, 20)
                                          .annotation("Optimizer.step#SGD.step", 130, 30)
                                          .str());
  CHECK(marked.iteration_rule.form == "ProfilerStep#N");
  CHECK(marked.iterations().size() == 1);
}

// ProfilerStep ranges with the profiler's bookkeeping between them and tasks inside, not at their
// edges: [0, 100) holds an operator at [10, 60); a task at [104, 114) lies between the ranges;
// [120, 220) holds an operator at [130, 180).
std::string two_profiler_steps_with_gap_work() {
  return test::KinetoJson()
      .annotation("ProfilerStep#1", 0, 100)
      .cpu_op("aten::mm", 10, 50)
      .cpu_op("between", 104, 10)
      .annotation("ProfilerStep#2", 120, 100)
      .cpu_op("aten::mm", 130, 50)
      .str();
}

TEST_CASE("iterations: the replay of the unmodified graph gives each measured window to the ns",
          "[graph][iterations]") {
  const Graph g = test::graph_of(two_profiler_steps_with_gap_work());
  REQUIRE(g.iterations().size() == 2);
  const auto spans = simulated_iteration_spans(g, simulate(g));
  REQUIRE(spans.size() == 2);
  CHECK(spans[0].start_ns == 0);
  CHECK(spans[0].end_ns == 100 * us);
  CHECK(spans[1].start_ns == 120 * us);
  CHECK(spans[1].end_ns == 220 * us);
}

TEST_CASE("iterations: a wait a change adds before a range's first task counts in that iteration",
          "[graph][iterations]") {
  Graph g = test::graph_of(two_profiler_steps_with_gap_work());
  g.set_duration(task_named(g, "between"), 100 * us);  // 90 us longer: the second step's work starts later
  const auto spans = simulated_iteration_spans(g, simulate(g));
  REQUIRE(spans.size() == 2);
  CHECK(spans[0].end_ns - spans[0].start_ns == 100 * us);
  // It starts where the first ended plus the measured 20 us between them, not 90 us later.
  CHECK(spans[1].start_ns == 120 * us);
  CHECK(spans[1].end_ns - spans[1].start_ns == 190 * us);
}

TEST_CASE("iterations: a start-to-start iteration is simulated to the next one's first task", "[graph][iterations]") {
  // Nothing is recorded between the ranges: the thread's time there is a cpu_sequential delay.
  const Graph g = test::graph_of(test::KinetoJson()
                                     .annotation("step 1", 0, 100)
                                     .cpu_op("aten::mm", 10, 60)
                                     .annotation("step 2", 150, 100)
                                     .cpu_op("aten::mm", 160, 60)
                                     .annotation("step 3", 330, 40)
                                     .cpu_op("aten::mm", 340, 10)
                                     .str());
  REQUIRE(g.iterations().size() == 3);
  const auto result = simulate(g);
  const auto spans = simulated_iteration_spans(g, result);
  REQUIRE(spans.size() == 3);
  CHECK(spans[0].start_ns == 0);
  CHECK(spans[0].end_ns == 150 * us);  // the next iteration's first task, not the range's end (100)
  CHECK(spans[1].start_ns == 150 * us);
  CHECK(spans[1].end_ns == 330 * us);
  CHECK(spans[2].start_ns == 330 * us);
  CHECK(spans[2].end_ns == 370 * us);

  const auto report = make_replay_report(g, result);
  REQUIRE(report.iterations.size() == 3);
  CHECK(report.iteration_rule.form == "step N");
  CHECK(report.iterations[0].measured_ns == 150 * us);
  CHECK(report.iterations[0].simulated_ns == 150 * us);
  CHECK(report.iterations[1].measured_ns == 180 * us);
  CHECK(report.iterations[1].simulated_ns == 180 * us);
  CHECK(report.iterations[2].measured_ns == 40 * us);
  CHECK(report.iterations[2].simulated_ns == 40 * us);

  // What-if: step 2's operator 50 us faster moves step 3's start, so step 2 is 50 us shorter
  // while step 1 (ending at step 2's first task) keeps its time.
  Graph faster = g;
  faster.set_duration(task_named(g, "aten::mm", 1), faster.task(task_named(g, "aten::mm", 1)).duration_ns - 50 * us);
  const auto changed = make_replay_report(faster, simulate(faster));
  REQUIRE(changed.iterations.size() == 3);
  CHECK(changed.iterations[0].simulated_ns == 150 * us);
  CHECK(changed.iterations[1].simulated_ns == 130 * us);
  CHECK(changed.iterations[2].simulated_ns == 40 * us);
}
