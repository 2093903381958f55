// Multi-rank jobs: merging ranks, clock alignment, collective matching and coupling, the job
// report, bad input, the job scenarios; and the real 8-rank DLRM job.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "daydream/error.hpp"
#include "daydream/ingest.hpp"
#include "daydream/job.hpp"
#include "daydream/predict.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/scenario.hpp"
#include "daydream/simulate.hpp"
#include "daydream/transform.hpp"
#include "shared_traces.hpp"

using namespace daydream;

namespace {

/// One rank of a two-rank data-parallel step (times in us, all shifted by `clock_us`):
/// a GEMM, `cpu_us` of CPU work, then an all-reduce of 1000 floats launched at 105 + cpu_us
/// that ends at 650 on every rank; the CPU waits for it (cudaDeviceSynchronize) and runs an
/// optimizer step until 685. The ProfilerStep lasts 690 us.
std::string rank_trace(int rank, int world, double clock_us, double cpu_us, bool extra_allreduce = false) {
  const auto at = [&](double us) { return us + clock_us; };
  std::string events;
  const auto add = [&](const std::string& event) { events += (events.empty() ? "" : ",\n") + event; };
  const auto complete = [&](const char* cat, const std::string& name, double ts, double dur, const std::string& tid,
                            const std::string& args) {
    add(fmt::format(R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": 1, "tid": {}, "ts": {:.3f}, "dur": {:.3f}, "args": {{{}}}}})",
                    cat, name, tid, at(ts), dur, args));
  };
  const double launch = 105 + cpu_us;
  const double nccl_start = launch + 5;
  complete("user_annotation", "ProfilerStep#1", 0, 690, "1", "");
  complete("cpu_op", "aten::mm", 10, 20, "1", "");
  complete("cuda_runtime", "cudaLaunchKernel", 15, 5, "1", R"("correlation": 1)");
  complete("kernel", "gemm", 25, 50, "7", R"("correlation": 1, "stream": 7, "device": 0)");
  complete("cpu_op", "aten::cpu_work", 100, cpu_us, "1", "");
  complete("cpu_op", "record_param_comms", launch - 2, 10, "1",
           R"("Collective name": "allreduce", "In msg nelems": 1000, "dtype": "Float", "Process Group Name": "0", "Group size": )" +
               std::to_string(world));
  complete("cuda_runtime", "cudaLaunchKernel", launch, 4, "1", R"("correlation": 2)");
  complete("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", nccl_start, 650 - nccl_start, "20",
           R"("correlation": 2, "stream": 20, "device": 0)");
  complete("cuda_runtime", "cudaDeviceSynchronize", launch + 9, 655 - (launch + 9), "1", "");
  complete("cpu_op", "optimizer", 660, 25, "1", "");
  if (extra_allreduce) {
    complete("cpu_op", "record_param_comms", 662, 10, "1",
             R"("Collective name": "allreduce", "In msg nelems": 10, "dtype": "Float", "Process Group Name": "0")");
    complete("cuda_runtime", "cudaLaunchKernel", 664, 4, "1", R"("correlation": 3)");
    complete("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", 670, 10, "20",
             R"("correlation": 3, "stream": 20, "device": 0)");
  }
  return fmt::format(R"({{"schemaVersion": 1, "distributedInfo": {{"backend": "nccl", "rank": {}, "world_size": {}}},
  "deviceProperties": [{{"id": 0, "name": "Test GPU"}}], "traceEvents": [{}]}})",
                     rank, world, events);
}

Graph rank_graph(int rank, int world, double clock_us, double cpu_us, bool extra = false) {
  Graph g = build_graph(parse_kineto_json(rank_trace(rank, world, clock_us, cpu_us, extra), fmt::format("rank{}.json", rank)));
  g.source_path = fmt::format("rank{}.json", rank);
  return g;
}

Graph two_rank_job(double skew_us = 5000) {
  const Graph r0 = rank_graph(0, 2, 0, 200);
  const Graph r1 = rank_graph(1, 2, skew_us, 400);  // arrives last: 200 us later than rank 0
  return merge_ranks({&r1, &r0});                   // any order
}

}  // namespace

TEST_CASE("merge_ranks couples a matched all-reduce through one barrier", "[job]") {
  Graph job = two_rank_job();
  REQUIRE(job.job() != nullptr);
  const JobLayout& layout = *job.job();
  CHECK(layout.world_size == 2);
  CHECK_FALSE(layout.partial());
  CHECK(layout.warnings.empty());
  REQUIRE(layout.ranks.size() == 2);
  CHECK(layout.ranks[0].rank == 0);
  CHECK(layout.ranks[1].rank == 1);
  REQUIRE(layout.collectives.size() == 1);
  const MatchedCollective& c = layout.collectives.front();
  CHECK(c.name == "allreduce");
  CHECK(c.process_group == "0");
  CHECK(c.bytes == 4000);
  CHECK(c.ranks == std::vector<std::int64_t>{0, 1});
  CHECK(job.in_degree(c.barrier) == 2);
  CHECK(job.out_degree(c.barrier) == 2);
  CHECK(job.task(c.barrier).duration_ns == 0);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(job.task(c.arrivals[i]).duration_ns == 0);
    CHECK(job.edge(c.arrivals[i], c.barrier).type == EdgeType::communication);
    CHECK(job.edge(c.barrier, c.transfers[i]).type == EdgeType::communication);
    CHECK(job.edge(c.arrivals[i], c.transfers[i]).type == EdgeType::gpu_sequential);
    // Transfer: the common end (650 us) minus the last start (rank 1: 105 + 400 + 5 = 510 us).
    CHECK(job.task(c.transfers[i]).duration_ns == 140'000);
    CHECK(job.units()[job.task(c.transfers[i]).unit].rank == static_cast<std::int64_t>(i));
  }
  CHECK(job.units()[job.task(c.transfers[1]).unit].name.rfind("rank 1: ", 0) == 0);
  CHECK(job.iterations().size() == 2);
}

TEST_CASE("clock offsets come from the collectives' common end", "[job]") {
  for (double skew_us : {0.0, 5000.0, -1234.5}) {
    const Graph job = two_rank_job(skew_us);
    CHECK(job.job()->ranks[0].clock_offset_ns == 0);
    CHECK(job.job()->ranks[1].clock_offset_ns == static_cast<TimeNs>(skew_us * 1000));
    CHECK(job.job()->ranks[1].offset_samples == 1);
    // Aligned, the skew changes nothing in the replay.
    const JobReport report = make_job_report(job, simulate(job));
    CHECK(report.max_clock_skew_ns == static_cast<TimeNs>(std::abs(skew_us) * 1000));
    REQUIRE(report.collectives.size() == 1);
    CHECK(report.collectives[0].last_rank == 1);
  }
}

TEST_CASE("the job replay reproduces each rank and names the straggler", "[job]") {
  const Graph job = two_rank_job();
  const SimulationResult result = simulate(job);
  const JobLayout& layout = *job.job();
  const MatchedCollective& c = layout.collectives.front();
  // Both ranks' all-reduce ends together, after the last arrival plus the transfer.
  CHECK(result.end_ns[c.transfers[0]] == result.end_ns[c.transfers[1]]);
  CHECK(result.start_ns[c.transfers[0]] == result.end_ns[c.barrier]);
  const JobReport report = make_job_report(job, result);
  REQUIRE(report.ranks.size() == 2);
  for (const RankReport& r : report.ranks) {
    REQUIRE(r.iterations.size() == 1);
    CHECK(r.iterations[0].measured_ns == 690'000);
    CHECK(std::abs(r.iterations[0].error()) < 0.02);
  }
  REQUIRE(report.iterations.size() == 1);
  CHECK(report.iterations[0].measured_ns == 690'000);
  CHECK(std::abs(report.iterations[0].error()) < 0.02);
  CHECK(report.straggler == 1);
  CHECK(report.ranks[1].last_arrivals == 1);
  CHECK(report.ranks[0].waited_ns == report.collectives[0].wait_ns);
  CHECK(report.collectives[0].wait_ns > 150'000);  // rank 0 waits about 200 us for rank 1
  CHECK(report.ranks[1].held_back_ns == report.collectives[0].wait_ns);
  const std::string json = to_json(report);
  CHECK(json.rfind(R"({"job": {"world_size": 2,)", 0) == 0);
  CHECK(json.find(R"("ranks": [{"rank": 0, "trace": "rank0.json", )") != std::string::npos);
  CHECK(json.find(R"("iterations": [{"name": "ProfilerStep#1", "measured_ms": 0.69, "simulated_ms": )") != std::string::npos);
}

TEST_CASE("job scenarios: a faster straggler speeds up the whole job, scale-out replicates ranks", "[job]") {
  const Predictor predictor(two_rank_job());
  const Prediction faster = predictor.predict(parse_scenario_spec("rank_speed:rank=1,factor=2"));
  REQUIRE(faster.iterations.size() == 1);
  CHECK(faster.predicted_median_ns < faster.baseline_median_ns - 150'000);  // rank 1's 400 us CPU work halved

  const Prediction straggler = predictor.predict(parse_scenario_spec("rank_speed"));
  CHECK(straggler.notes.front() == "rank 1 is the straggler of the baseline");
  CHECK(straggler.predicted_median_ns < straggler.baseline_median_ns);

  const Graph grown = replicate_ranks(predictor.base(), 5);
  const JobLayout& layout = *grown.job();
  CHECK(layout.world_size == 5);
  REQUIRE(layout.ranks.size() == 5);
  CHECK(layout.ranks[4].replica_of == 0);
  CHECK(layout.collectives.front().ranks == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  CHECK(grown.in_degree(layout.collectives.front().barrier) == 5);
  CHECK(grown.iterations().size() == 5);
  std::size_t rank0_tasks = 0, rank1_tasks = 0;
  for (TaskId t = 0; t < predictor.base().num_tasks(); ++t) {
    const std::int64_t rank = predictor.base().units()[predictor.base().task(t).unit].rank;
    rank0_tasks += rank == 0, rank1_tasks += rank == 1;
  }
  CHECK(grown.num_tasks() == predictor.base().num_tasks() + 2 * rank0_tasks + rank1_tasks);  // ranks 2, 4 copy 0; 3 copies 1
  const SimulationResult result = simulate(grown);
  const JobReport report = make_job_report(grown, result);
  REQUIRE(report.iterations.size() == 1);
  CHECK(report.iterations[0].simulated_ns == make_job_report(predictor.base(), predictor.baseline()).iterations[0].simulated_ns);
  CHECK_THROWS_WITH(replicate_ranks(predictor.base(), 1), Catch::Contains("cannot shrink a job of 2 ranks to 1"));
}

TEST_CASE("bad jobs: duplicate ranks, world sizes, missing ranks, unmatched collectives", "[job][bad-input]") {
  const Graph r0 = rank_graph(0, 2, 0, 200);
  const Graph r0_again = rank_graph(0, 2, 0, 300);
  CHECK_THROWS_WITH(merge_ranks({&r0, &r0_again}), Catch::Contains("rank0.json") && Catch::Contains("rank 0 is also the rank of"));
  const Graph of_three = rank_graph(1, 3, 0, 200);
  CHECK_THROWS_WITH(merge_ranks({&r0, &of_three}),
                    Catch::Contains("distributedInfo.world_size") && Catch::Contains("not of one job"));
  Graph no_rank = rank_graph(1, 2, 0, 200);
  no_rank.rank = kNone;
  CHECK_THROWS_WITH(merge_ranks({&r0, &no_rank}), Catch::Contains("distributedInfo.rank"));

  // Rank 1 of 3 missing: a partial job, collectives as measured.
  const Graph a = rank_graph(0, 3, 0, 200), c = rank_graph(2, 3, 0, 400);
  const Graph partial = merge_ranks({&a, &c});
  CHECK(partial.job()->partial());
  CHECK(partial.job()->missing_ranks == std::vector<std::int64_t>{1});
  CHECK(partial.job()->collectives.empty());
  const JobReport report = make_job_report(partial, simulate(partial));
  CHECK(to_json(report).find(R"("partial": true, "missing_ranks": [1])") != std::string::npos);
  for (const auto& r : report.ranks) CHECK(std::abs(r.iterations.at(0).error()) < 0.02);

  // Rank 1 issues one more all-reduce than rank 0: flagged, left as measured.
  const Graph extra = rank_graph(1, 2, 0, 400, true);
  const Graph job = merge_ranks({&r0, &extra});
  REQUIRE(job.job()->collectives.size() == 1);
  REQUIRE(job.job()->warnings.size() == 1);
  CHECK_THAT(job.job()->warnings[0], Catch::Contains("allreduce #1 of group 0 reached by ranks [1] only (2 expected)"));
  CHECK_NOTHROW(simulate(job));
}

TEST_CASE("load_job expands directories and reports missing paths", "[job][bad-input]") {
  CHECK_THROWS_WITH(load_job({"/nonexistent/ranks"}), Catch::Contains("/nonexistent/ranks") && Catch::Contains("no such file"));
}

TEST_CASE("load_job skips the JSON files of a directory that are no Chrome trace, with a note", "[job][bad-input]") {
  const auto dir = std::filesystem::temp_directory_path() / "daydream_test_job_with_et";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (int rank : {0, 1}) std::ofstream(dir / fmt::format("rank{}.json", rank)) << rank_trace(rank, 2, 1000.0 * rank, 10);
  const std::string execution_trace = R"({"schema": "1.0.1", "pid": 7, "nodes": []})";
  std::ofstream(dir / "rank0_et.json") << execution_trace;
  std::vector<std::string> skipped;
  JobOptions options;
  options.skipped = &skipped;
  const Graph job = load_job({dir}, options);
  REQUIRE(job.job() != nullptr);
  CHECK(job.job()->ranks.size() == 2);
  CHECK(skipped == std::vector<std::string>{(dir / "rank0_et.json").string()});
  CHECK(job.job()->skipped_files == skipped);
  CHECK_THAT(job.job()->warnings.back(), Catch::Contains("skipped 1 JSON files") && Catch::Contains("rank0_et.json"));
  // Named as a file, it is an error; a directory of nothing but such files too.
  CHECK_THROWS_WITH(load_job({dir / "rank0.json", dir / "rank0_et.json"}), Catch::Contains("traceEvents"));
  for (int rank : {0, 1}) std::filesystem::remove(dir / fmt::format("rank{}.json", rank));
  CHECK_THROWS_WITH(load_job({dir}), Catch::Contains("no Chrome trace in") && Catch::Contains("rank0_et.json"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("real DLRM job: cuda_graphs captures each rank's own work, one launch queue per thread", "[job][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const Graph base = load_job({test::kShared / "dlrm-v100-8ranks" / "kineto"});
  Graph job = base;
  const ScenarioOutcome out = builtin_scenarios().apply(job, parse_scenario_spec("cuda_graphs"));
  CHECK_THAT(out.notes.front(), Catch::Contains("8 occurrences captured as 40 graphs"));
  CHECK(job.find_cycle().empty());
  const auto rank_of = [&](TaskId t) { return job.units()[job.task(t).unit].rank; };
  std::vector<int> graphs_per_rank(8, 0);
  for (TaskId t = 0; t < job.num_tasks(); ++t) {
    if (job.removed(t) || job.name(t) != "cudaGraphLaunch") continue;
    ++graphs_per_rank.at(static_cast<std::size_t>(rank_of(t)));
    job.visit_successors(t, [&](TaskId next, const Edge&) {
      CHECK(rank_of(next) == rank_of(t));  // launches only its rank's GPU work
      return true;
    });
    job.visit_predecessors(t, [&](TaskId before, const Edge& e) {
      if (e.type == EdgeType::sync) CHECK(rank_of(before) == rank_of(t));  // waits only for its rank's graphs
      return true;
    });
  }
  CHECK(graphs_per_rank == std::vector<int>(8, 5));
  // Rank 0 alone predicts 14.4 -> 5.3 ms (docs/scenarios/cuda_graphs.md); in the job each rank
  // still waits for the others at the collectives, and no rank's step gets longer.
  const JobReport before = make_job_report(base, simulate(base));
  const JobReport after = make_job_report(job, simulate(job));
  REQUIRE(after.ranks.size() == 8);
  for (std::size_t r = 0; r < 8; ++r)
    CHECK(after.ranks[r].iterations[0].simulated_ns < before.ranks[r].iterations[0].simulated_ns);
}

TEST_CASE("real DLRM job: 8 ranks, each step and the job's within 2%", "[job][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const Graph job = load_job({test::kShared / "dlrm-v100-8ranks" / "kineto"});
  const JobLayout& layout = *job.job();
  CHECK(layout.world_size == 8);
  CHECK(layout.ranks.size() == 8);
  CHECK(layout.warnings.empty());
  CHECK(layout.collectives.size() == 8);  // 3 all_reduce + 5 all_to_all per rank, all matched
  for (const auto& c : layout.collectives) CHECK(c.ranks.size() == 8);
  const JobReport report = make_job_report(job, simulate(job));
  CHECK(report.max_clock_skew_ns < 10'000);  // the ranks share a clock
  for (const RankReport& r : report.ranks) {
    REQUIRE(r.iterations.size() == 1);
    INFO("rank " << r.rank << " measured " << r.iterations[0].measured_ns << " simulated " << r.iterations[0].simulated_ns);
    CHECK(std::abs(r.iterations[0].error()) < 0.02);
  }
  REQUIRE(report.iterations.size() == 1);
  CHECK(report.iterations[0].measured_ns == 19'901'000);  // rank 1's ProfilerStep
  CHECK(std::abs(report.iterations[0].error()) < 0.02);
  CHECK(report.straggler == 7);
  // The slowest step is rank 1's, which waited for rank 7: the report says why they differ and
  // what window the critical path covers (it starts on rank 7, which started its step last).
  CHECK(report.slowest_rank == 1);
  REQUIRE(report.explanations.size() == 2);
  CHECK_THAT(report.explanations[0], Catch::StartsWith("rank 1 has the slowest step (19.865 ms, median) but is not "
                                                       "the straggler: it waited 11.141 ms at collectives. Rank 7 is "
                                                       "the straggler"));
  CHECK_THAT(report.explanations[0], Catch::EndsWith("it starts its first step 7.513 ms after rank 1"));
  CHECK(report.critical_path_end_ns - report.critical_path_start_ns == report.critical_path_ns);
  CHECK(report.critical_path_first_rank == 7);
  CHECK(report.critical_path_start_ns == report.ranks[7].step_start_ns);
  CHECK_THAT(report.explanations[1], Catch::StartsWith("the critical path (13.319 ms) runs from 7.513 to 20.832 ms"));
  const std::string json = to_json(report);
  CHECK_THAT(json, Catch::Contains(R"("straggler": 7, "slowest_rank": 1,)"));
  CHECK_THAT(json, Catch::Contains(R"("critical_path_window_ms": [7.513)"));
  CHECK_THAT(json, Catch::Contains(R"("critical_path_ranks": [7, 4], "explanations": ["rank 1 has)"));

  const Predictor predictor(job);
  const Prediction slower = predictor.predict(parse_scenario_spec("network:latency=1ms"));
  CHECK(slower.predicted_median_ns > slower.baseline_median_ns);
  CHECK_THAT(slower.notes.front(), Catch::Contains("fitted to 8 collectives"));
  const Prediction grown = predictor.predict(parse_scenario_spec("scale_out:ranks=32,inter=1Gbps"));
  CHECK(grown.predicted_median_ns > grown.baseline_median_ns);
}

TEST_CASE("a single rank of a bigger DDP job still loads as one trace, or as a partial job", "[job][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const auto files = test::traces_at("ddp-convnet-a100-nccl");
  REQUIRE(files.size() == 1);
  const Graph job = load_job(files);
  CHECK(job.job()->partial());
  CHECK(job.job()->missing_ranks == std::vector<std::int64_t>{1});
  const JobReport report = make_job_report(job, simulate(job));
  REQUIRE_FALSE(report.ranks.at(0).iterations.empty());
  for (const auto& it : report.ranks[0].iterations) CHECK(std::abs(it.error()) < 0.02);
}

TEST_CASE("sizes and ranks daydream accepts: no product or rank count passes what it can hold", "[job][bad-input]") {
  const auto replaced = [](std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
  };
  // 2^62 floats: elements x 4 bytes would pass int64; the size is left unknown, not wrapped.
  const std::string huge = replaced(rank_trace(0, 2, 0, 200), R"("In msg nelems": 1000)", R"("In msg nelems": 4611686018427387904)");
  Graph r0 = build_graph(parse_kineto_json(huge, "rank0.json"));
  r0.source_path = "rank0.json";
  const Graph r1 = rank_graph(1, 2, 0, 400);
  const Graph job = merge_ranks({&r0, &r1});
  REQUIRE(job.job()->collectives.size() == 1);
  CHECK(job.job()->collectives.front().bytes == kNone);  // the reference rank (0) has no size it can hold
  // A world of 10^12 ranks is refused at ingest, before missing_ranks() could list them.
  const std::string wide = replaced(rank_trace(0, 2, 0, 200), R"("world_size": 2)", R"("world_size": 1000000000000)");
  CHECK_THROWS_WITH(parse_kineto_json(wide, "wide.json"),
                    Catch::Contains("wide.json") && Catch::Contains("distributedInfo.world_size") &&
                        Catch::Contains("1000000000000 ranks: daydream accepts 1 to 1048576"));
  Graph set_wide = rank_graph(0, 2, 0, 200);
  set_wide.world_size = std::int64_t{1} << 40;  // as Python may set it
  CHECK_THROWS_WITH(merge_ranks({&set_wide}), Catch::Contains("distributedInfo.world_size") && Catch::Contains("daydream accepts"));
  // Rank counts of what-ifs: refused as parameters, and a grown graph stays within kMaxGraphTasks.
  const Predictor predictor(two_rank_job());
  CHECK_THROWS_WITH(predictor.predict(parse_scenario_spec("rank_speed:rank=1e300")),
                    Catch::Contains("'rank' = '1e300' is out of range (valid: 0..1048575"));
  CHECK_THROWS_WITH(predictor.predict(parse_scenario_spec("scale_out:ranks=1e9")),
                    Catch::Contains("'ranks' = '1e9' is out of range (valid: 2..1048576"));
  CHECK_THROWS_WITH(predictor.predict(parse_scenario_spec("rank_speed:rank=7")), Catch::Contains("rank 7 is not in the job"));
  Graph bigger = predictor.base();
  NewTask filler = NewTask::of("filler", bigger.task(0).kind, 1, 0);
  filler.unit = bigger.task(0).unit;
  for (int i = 0; i < 300; ++i) bigger.insert(filler);  // 2 ranks of about 150 tasks more
  CHECK_THROWS_WITH(replicate_ranks(bigger, kMaxWorldSize),
                    Catch::Contains("1048576 ranks of about") && Catch::Contains("more than the 134217728 a graph may hold"));
}
