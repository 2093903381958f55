// The data-parallel scenarios (ddp, p3): the ring cost model, its fit and DDP's bucketing by hand;
// inserted all-reduces and slices on a hand-built two-iteration training trace; DDP's copy-back,
// buffer broadcasts and re-bucketing on a hand-built trace of a DDP run; properties on the shared
// real traces (ResNet-50 single GPU, DDP ResNet, DDP conv net with NCCL kernels, the sc22 DDP U-Net
// pairs).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>

#include "../scenarios/data_parallel.hpp"
#include "daydream/analyze.hpp"
#include "daydream/model.hpp"
#include "daydream/error.hpp"
#include "daydream/predict.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/transform.hpp"
#include "graph_helpers.hpp"
#include "shared_traces.hpp"
#include "trace_builder.hpp"

namespace daydream::test {
namespace {


// --- a hand-built training loop -------------------------------------------------------------

struct LoopOptions {
  int iterations = 2;
  int update_kernels = 3;           // optimizer kernels per step (3 = one per parameter)
  bool accumulate_kernels = false;  // each AccumulateGrad launches a grad_add kernel
};

// Per 300 us iteration (offset o): main thread (tid 1) launches the forward fwd_a [o+20, o+35)
// and fwd_b [o+40, o+55); the backward thread (tid 2) launches bwd_2 [65, 85), bwd_1 [90, 110)
// and bwd_0 [121, 141), each followed by an AccumulateGrad range ending at 80, 100 and 120 (the
// gradients of parameters 2, 1, 0: reverse forward order); Optimizer.step [150, 200) launches
// sgd_0 [160, 163), sgd_1 [170, 182), sgd_2 [190, 192) (3, 12 and 2 us: the update kernels'
// times follow the parameters' sizes); cudaDeviceSynchronize at 210 ends the iteration.
std::string training_loop(const LoopOptions& options = {}) {
  KinetoJson t;
  for (int i = 0; i < options.iterations; ++i) {
    const double o = 300.0 * i;
    const std::int64_t c = 100 * (i + 1);  // correlation ids of this iteration
    t.annotation("ProfilerStep#" + std::to_string(i + 1), o, 290)
        .runtime("cudaLaunchKernel", o + 10, 4, c + 1)
        .kernel("fwd_a", o + 20, 15, c + 1)
        .runtime("cudaLaunchKernel", o + 30, 4, c + 2)
        .kernel("fwd_b", o + 40, 15, c + 2);
    const double bwd_start[] = {65, 90, 121}, launch[] = {60, 82, 102}, accumulate[] = {70, 90, 110};
    const double add_start[] = {86, 111, 142}, add_duration[] = {2, 9, 3};
    for (int k = 0; k < 3; ++k) {  // parameters 2, 1, 0
      const std::string p = std::to_string(2 - k);
      t.runtime("cudaLaunchKernel", o + launch[k], 4, c + 10 + k, 2)
          .kernel("bwd_" + p, o + bwd_start[k], 20, c + 10 + k)
          .cpu_op("torch::autograd::AccumulateGrad", o + accumulate[k], 10, 2);
      if (options.accumulate_kernels)
        t.runtime("cudaLaunchKernel", o + accumulate[k] + 2, 3, c + 20 + k, 2)
            .kernel("grad_add_" + p, o + add_start[k], add_duration[k], c + 20 + k);
    }
    t.annotation("Optimizer.step#SGD.step", o + 150, 50);
    const double sgd_launch[] = {155, 165, 185}, sgd_start[] = {160, 170, 190}, sgd_duration[] = {3, 12, 2};
    for (int k = 0; k < options.update_kernels; ++k)
      t.runtime("cudaLaunchKernel", o + sgd_launch[k], 4, c + 30 + k)
          .kernel("sgd_" + std::to_string(k), o + sgd_start[k], sgd_duration[k], c + 30 + k);
    t.runtime("cudaDeviceSynchronize", o + 210, 2, c + 40);
  }
  return t.str();
}

/// A file removed when the test ends (param_file inputs, and traces loaded from disk).
struct TempFile {
  std::string path;
  TempFile(const std::string& name, const std::string& text)
      : path((std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid()))).string()) {
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

// Forward order: parameter 0 has 1000 elements (4000 bytes), 1 has 250000 (1 MB), 2 has 500 (2000 bytes).
const char* kParamFile = R"({"parameters": [{"name": "p0", "count": 1000}, {"name": "p1", "count": 250000},
                             {"name": "p2", "count": 500}]})";

/// The live tasks on units whose name starts with `unit_prefix`, by id.
std::vector<TaskId> tasks_on(const Graph& g, std::string_view unit_prefix) {
  std::vector<TaskId> out;
  for (TaskId t = 0; t < g.num_tasks(); ++t)
    if (!g.task(t).removed && g.units()[g.task(t).unit].name.rfind(unit_prefix, 0) == 0) out.push_back(t);
  return out;
}

SimulationResult run(const Graph& g, const ScenarioOutcome& outcome) {
  return outcome.policy ? simulate(g, *outcome.policy) : simulate(g);
}

std::vector<std::int64_t> gradient_bytes(const std::vector<BackwardPass>& passes) {
  std::vector<std::int64_t> out;
  for (const auto& p : passes)
    for (const auto& g : p.gradients) out.push_back(g.bytes);
  return out;
}

bool mentions(const std::vector<std::string>& notes, std::string_view part) {
  return std::any_of(notes.begin(), notes.end(), [&](const auto& n) { return n.find(part) != std::string::npos; });
}

}  // namespace

// --- the model's arithmetic -----------------------------------------------------------------

TEST_CASE("ring all-reduce cost: latency + 2(n-1)/n * bytes / bandwidth", "[scenario][distributed]") {
  CHECK(ring_traffic_bytes(2, 100) == 100);   // 2 * 1/2
  CHECK(ring_traffic_bytes(8, 800) == 1400);  // 2 * 7/8
  CHECK(ring_traffic_bytes(1, 800) == 0);
  const RingCost four{{10'000, 1.0}, 4};                                   // 10 us, 1 GB/s, 4 GPUs
  CHECK(four.allreduce_ns(2000) == 13'000);                              // 10000 + 1.5 * 2000
  CHECK(four.allreduce_ns(1'004'000) == 1'516'000);                      // 10000 + 1.5 * 1004000
  CHECK(RingCost{{10'000, 1.0}, 1}.allreduce_ns(1'000'000) == 0);          // one GPU exchanges nothing
  CHECK(RingCost{{0, 0}, 64}.allreduce_ns(1'000'000) == 0);                // infinite link, no latency
  const RingCost crawling{{0, 1e9}, 8};                                    // 1 byte/s
  CHECK_THROWS_AS(crawling.allreduce_ns(std::int64_t{1} << 40), Error);  // beyond the ns clock
}

TEST_CASE("the ring fit recovers latency and bandwidth exactly from synthetic collectives", "[scenario][distributed]") {
  // alpha = 15 us, beta = 0.5 ns/byte (2 GB/s), n = 4 (traffic 1.5 x bytes).
  std::vector<MeasuredCollective> samples;
  for (std::int64_t bytes : {1'000'000, 4'000'000, 16'000'000, 4'000'000})
    samples.push_back({bytes, 15'000 + bytes * 3 / 4});
  const auto fit = fit_ring(samples, 4);
  REQUIRE(fit);
  CHECK(fit->link.latency_ns == Approx(15'000).epsilon(1e-9));
  CHECK(fit->link.ns_per_byte == Approx(0.5).epsilon(1e-9));
  CHECK(fit->rms_residual_ns == Approx(0).margin(1e-6));
  CHECK(fit->r_squared == Approx(1).epsilon(1e-12));
  CHECK(fit->samples == 4);
  CHECK(fit->distinct_sizes == 3);
  // A line needs two distinct sizes, and one GPU has no traffic to fit.
  CHECK_FALSE(fit_ring({{1'000, 10}, {1'000, 12}}, 4));
  CHECK_FALSE(fit_ring(samples, 1));
  // It stands in for defaults only where it explains the times with a latency >= 0 and a finite link.
  CHECK(fit->usable());
  LinkFit weak = *fit;
  weak.r_squared = kMinFitRSquared - 0.01;
  CHECK_FALSE(weak.usable());
  LinkFit infinite = *fit;
  infinite.link.ns_per_byte = 0;
  CHECK_FALSE(infinite.usable());
}

TEST_CASE("DDP buckets fill in ready order and close at their caps", "[scenario][distributed]") {
  std::vector<Gradient> g(3);
  g[0].bytes = 2000, g[1].bytes = 1'000'000, g[2].bytes = 4000;
  auto same = [](const std::vector<Bucket>& a, const std::vector<Bucket>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Bucket& x, const Bucket& y) {
      return x.first == y.first && x.last == y.last && x.bytes == y.bytes;
    });
  };
  // First cap 1000: {2000} closes at once; cap 2 MB: {1 MB, 4000} stays open to the end.
  CHECK(same(fill_buckets(g, 1000, 2'000'000), {{0, 1, 2000}, {1, 3, 1'004'000}}));
  // First cap 5000: 2000 + 1 MB reaches it; 4000 < 1 MB is the last, partial bucket.
  CHECK(same(fill_buckets(g, 5000, 1'000'000), {{0, 2, 1'002'000}, {2, 3, 4000}}));
  CHECK(fill_buckets({}, 1, 1).empty());
}

TEST_CASE("spread_bytes splits exactly in proportion", "[scenario][distributed]") {
  CHECK(spread_bytes(4000, {0, 10'000, 1'000}) ==
        std::vector<std::int64_t>{0, 3636, 364});  // 4000*10/11 = 3636.4
  CHECK(spread_bytes(4000, {1, 1, 1}) ==
        std::vector<std::int64_t>{1333, 1334, 1333});                             // rounding 1333.3, 2666.7
  CHECK(spread_bytes(10, {0, 0}) == std::vector<std::int64_t>{5, 5});  // no weight: equal
}

// --- gradient discovery on the hand-built loop ----------------------------------------------

TEST_CASE("gradients: ready tasks, optimizer barrier and sizes from each source", "[scenario][distributed]") {
  const Graph g = graph_of(training_loop());
  auto passes = find_backward_passes(g, read_trace_collectives(g));
  REQUIRE(passes.size() == 2);
  const auto& p = passes[0];
  REQUIRE(p.gradients.size() == 3);
  CHECK(p.gradients[0].ready == task_named(g, "bwd_2"));  // ready order: parameters 2, 1, 0
  CHECK(p.gradients[1].ready == task_named(g, "bwd_1"));
  CHECK(p.gradients[2].ready == task_named(g, "bwd_0"));
  CHECK(p.gradients[2].ready_ns == 120 * us);  // end of the last AccumulateGrad
  CHECK(p.update_tasks == std::vector<TaskId>{task_named(g, "sgd_0"), task_named(g, "sgd_1"), task_named(g, "sgd_2")});
  CHECK(p.barrier == task_named(g, "sgd_0"));
  CHECK(passes[1].barrier == task_named(g, "sgd_0", 1));

  auto sized = [&](const Graph& graph, const std::string& spec) {
    auto ps = find_backward_passes(graph, read_trace_collectives(graph));
    const auto params = resolve_params(builtin_scenarios().find("ddp"), parse_scenario_spec(spec));
    const auto note = scenarios::assign_sizes(graph, ps, params);
    return std::make_pair(gradient_bytes(ps), note);
  };
  const TempFile file("ddp_params.json", kParamFile);
  // param_file: reverse forward order -> 500, 250000, 1000 elements x 4 bytes.
  CHECK(sized(g, "ddp:param_file=" + file.path).first ==
        std::vector<std::int64_t>{2000, 1'000'000, 4000, 2000, 1'000'000, 4000});
  // params = 1000 x 4 bytes over the update kernels' time above the shortest (3, 12, 2 us -> in
  // ready order 2-2, 12-2, 3-2 = 0, 10, 1 us): 0, 4000*10/11 = 3636, 364.
  const auto [by_update, note] = sized(g, "ddp:params=1000");
  CHECK(by_update == std::vector<std::int64_t>{0, 3636, 364, 0, 3636, 364});
  CHECK(note.find("update kernels") != std::string::npos);
  // Two update kernels for three parameters: the AccumulateGrad kernels (2, 9, 3 us -> 0, 7, 1).
  const Graph accumulating = graph_of(training_loop({2, 2, true}));
  const auto [by_accumulate, note2] = sized(accumulating, "ddp:params=1000");
  CHECK(by_accumulate == std::vector<std::int64_t>{0, 3500, 500, 0, 3500, 500});
  CHECK(note2.find("AccumulateGrad kernels") != std::string::npos);
  // Neither: equal shares.
  CHECK(sized(graph_of(training_loop({2, 2, false})), "ddp:params=1000").first ==
        std::vector<std::int64_t>{1333, 1334, 1333, 1333, 1334, 1333});
}

// --- ddp --------------------------------------------------------------------------------------

TEST_CASE("the next forward, where it uses each parameter, sizes from counts, buckets by ready task",
          "[scenario][distributed]") {
  const Graph g = graph_of(training_loop());
  auto passes = find_backward_passes(g, read_trace_collectives(g));
  REQUIRE(passes.size() == 2);
  CHECK(update_tasks_per_gradient(passes[0]) == 1);  // SGD: one kernel per parameter
  // From the step's last update along the stream to the next pass's first gradient.
  const auto forward = next_forward(g, passes[0], passes[1]);
  CHECK(forward == std::vector<TaskId>{task_named(g, "fwd_a", 1), task_named(g, "fwd_b", 1)});
  CHECK(next_forward(g, passes[1], passes[0]).empty());  // the stream never leads back
  // Gradients ready at 80, 100, 120 us: parameter 0 (ready last) is used at the forward's start,
  // parameter 1 (half the backward still to run) half-way through its 30 us, parameter 2 at its end.
  CHECK(forward_use_tasks(g, passes[0], forward) == std::vector<TaskId>{forward[0], forward[1], forward[1]});
  // Counts in forward order, matched in reverse: parameter 2 (500 elements) is ready first.
  CHECK(set_gradient_bytes(passes[0], {1000, 250'000, 500}, 4));
  CHECK(gradient_bytes({passes[0]}) == std::vector<std::int64_t>{2000, 1'000'000, 4000});
  CHECK_FALSE(set_gradient_bytes(passes[0], {1, 2}, 4));
  const auto buckets = gradient_buckets(passes[0], 1000, 2'000'000);  // {2000}, {1 MB, 4000}
  REQUIRE(buckets.size() == 2);
  CHECK((buckets[0].ready == task_named(g, "bwd_2") && buckets[0].bytes == 2000));
  CHECK((buckets[1].ready == task_named(g, "bwd_0") && buckets[1].bytes == 1'004'000));
  // A schedule for some tasks, trace order for the rest.
  const auto policy = priorities_over_trace_order(g, {{task_named(g, "fwd_b"), -1.0}}, "some first");
  CHECK(policy.name() == "some first");
  CHECK(policy.priority(g, task_named(g, "fwd_b")) == -1.0);
  CHECK(policy.priority(g, task_named(g, "fwd_a")) == TraceOrderPolicy{}.priority(g, task_named(g, "fwd_a")));
}

TEST_CASE("ddp inserts bucket all-reduces between the gradients and the optimizer step", "[scenario][distributed]") {
  const TempFile file("ddp_insert.json", kParamFile);
  Graph g = graph_of(training_loop());
  // n = 4 on one machine at 1 GB/s (1 ns/byte), 10 us latency; buckets {p2: 2000 B} (first cap
  // 1000 B) and {p1, p0: 1004000 B} (cap 2 MB).
  const auto outcome = apply_scenario(
      g,
      parse_scenario_spec("ddp:gpus=4,intra=1GB/s,latency=10us,first_bucket=1000,bucket=2MB,param_file=" + file.path));
  CHECK(outcome.policy == nullptr);
  const auto comm = tasks_on(g, "ddp all-reduce");
  REQUIRE(comm.size() == 4);  // two buckets per iteration
  const TaskId ar0 = comm[0], ar1 = comm[1];
  CHECK(g.task(ar0).duration_ns == 13'000);     // 10 us + 1.5 x 2000 B
  CHECK(g.task(ar1).duration_ns == 1'516'000);  // 10 us + 1.5 x 1004000 B
  CHECK(g.task(ar0).kind == TaskKind::communication);
  CHECK(g.units()[g.task(ar0).unit].kind == UnitKind::comm_channel);
  CHECK(edge_between(g, task_named(g, "bwd_2"), ar0));  // bucket 0 is ready with parameter 2
  CHECK(edge_between(g, task_named(g, "bwd_0"), ar1));  // bucket 1 with parameter 0
  CHECK(edge_between(g, ar0, ar1));                     // buckets go in order
  CHECK(edge_between(g, ar0, task_named(g, "sgd_0")));  // the step waits for every bucket
  CHECK(edge_between(g, ar1, task_named(g, "sgd_0")));
  CHECK(edge_between(g, comm[3], task_named(g, "sgd_0", 1)));
  CHECK(mentions(outcome.notes, "param_file"));

  const auto r = run(g, outcome);
  CHECK(r.start_ns[ar0] == r.end_ns[task_named(g, "bwd_2")]);  // the channel is idle: at once
  CHECK(r.start_ns[ar1] == r.end_ns[task_named(g, "bwd_0")]);  // bucket 0 ended long before
  CHECK(r.start_ns[task_named(g, "sgd_0")] == r.end_ns[ar1]);  // 1.5 ms of all-reduce holds the step
  // ... and, in stream order, the next forward.
  CHECK(r.start_ns[task_named(g, "fwd_a", 1)] >= r.end_ns[ar1]);
}

TEST_CASE("ddp: one GPU, or an infinite link without latency, changes nothing", "[scenario][distributed]") {
  const Graph base = graph_of(training_loop());
  const auto baseline = simulate(base);
  Graph one = base;
  apply_scenario(one, parse_scenario_spec("ddp"));  // no sizes needed: nothing to exchange
  CHECK(one.num_tasks() == base.num_tasks());
  Graph free_link = base;
  const auto outcome = apply_scenario(free_link, parse_scenario_spec("ddp:gpus=8,bandwidth=inf,latency=0,params=1e6"));
  // 4 MB per pass spread 0, 3.64, 0.36 MB: {p2, p1} closes the 1 MiB first bucket, {p0} is the second.
  const auto comm = tasks_on(free_link, "ddp all-reduce");
  REQUIRE(comm.size() == 4);
  for (TaskId t : comm) CHECK(free_link.task(t).duration_ns == 0);
  const auto r = run(free_link, outcome);
  CHECK(r.makespan_ns == baseline.makespan_ns);
  for (TaskId t = 0; t < base.num_tasks(); ++t) CHECK(r.end_ns[t] == baseline.end_ns[t]);
}

TEST_CASE("ddp re-costs a trace's own NCCL all-reduces with the fitted latency and bandwidth",
          "[scenario][distributed]") {
  // Three all-reduces of 1M, 2M and 4M floats (4, 8 and 16 MB) measured at 20 us + 1 ns/byte
  // over 2 GPUs (traffic = bytes): 4020, 8020 and 16020 us.
  KinetoJson t;
  const double starts[] = {0, 5000, 15000}, durations[] = {4020, 8020, 16020};
  const std::int64_t elements[] = {1'000'000, 2'000'000, 4'000'000};
  for (int k = 0; k < 3; ++k) {
    t.raw(fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 100, "tid": 2, "ts": {},
        "dur": 10, "args": {{"Collective name": "allreduce", "In msg nelems": {}, "Out msg nelems": {},
        "Group size": 2, "dtype": "Float"}}}})",
                      starts[k], elements[k], elements[k]));
    t.runtime("cudaLaunchKernel", starts[k] + 2, 4, k + 1, 2)
        .kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", starts[k] + 8,
                durations[k], k + 1, 20);
  }
  const TempFile file("ddp_nccl.json", t.str());
  Graph g = build_graph(load_trace(file.path));
  const auto collectives = read_trace_collectives(g);
  CHECK(collectives.world_size == 2);
  REQUIRE(traced_allreduce_tasks(collectives).size() == 3);
  const auto outcome = apply_scenario(g, parse_scenario_spec("ddp:gpus=4"));
  CHECK(
      mentions(outcome.notes, "fit to the trace's 3 all-reduces (3 sizes, n = 2): latency 20.0 us, bandwidth 1 GB/s"));
  // n = 4 (traffic 1.5 x bytes) at the fitted 20 us + 1 ns/byte: 6.02, 12.02 and 24.02 ms.
  const auto kernels = traced_allreduce_tasks(collectives);
  CHECK(g.task(kernels[0]).duration_ns == 6'020'000);
  CHECK(g.task(kernels[1]).duration_ns == 12'020'000);
  CHECK(g.task(kernels[2]).duration_ns == 24'020'000);
  // A given link overrides the fitted bandwidth only: 20 us + 1.5 x 4 MB / 4 GB/s.
  Graph given = build_graph(load_trace(file.path));
  apply_scenario(given, parse_scenario_spec("ddp:gpus=4,intra=4GB/s"));
  CHECK(given.task(kernels[0]).duration_ns == 20'000 + 1'500'000);
}

// --- ddp on a trace of a DDP run ----------------------------------------------------------------

namespace {

const char* kAllReduceKernel = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";
const char* kBroadcastKernel = "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)";
const char* kDeviceCopy = "Memcpy DtoD (Device -> Device)";

struct DdpRunOptions {
  std::vector<double> allreduce_us = {60, 30, 30};  // the three buckets' NCCL kernel times
  /// Elements (float) of each bucket, recorded by record_param_comms (group size 2); empty: no
  /// record, as in an Nsight trace.
  std::vector<std::int64_t> recorded_elements;
  std::vector<std::int64_t> copy_back_bytes = {1'000'000, 2'000'000, 3'000'000};
};

void record_bucket(KinetoJson& t, double launch, std::int64_t elements) {
  t.raw(fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 100, "tid": 2, "ts": {},
      "dur": 6, "args": {{"Collective name": "allreduce", "In msg nelems": {}, "Out msg nelems": {},
      "Group size": 2, "dtype": "Float"}}}})",
                    launch - 2, elements, elements));
}

// Two 1000 us iterations of one rank of a DDP job (offset o = 100 + 1000 i). The main thread
// (tid 1) starts the forward with DDP's buffer broadcast: the flatten (a CatArrayBatchedCopy
// kernel, launched at o+5), the NCCL broadcast (o+11, stream 20), the unflatten copy (64-byte
// DtoD, o+19), then fwd (o+25). The autograd thread (tid 2) launches bwd_1 (o+100), a 500-byte
// DtoD copy of its own (o+110), bucket all-reduce 0 (o+150), bwd_0 (o+155), all-reduces 1 and 2
// (o+205, o+210), makes the compute stream wait for the last one (o+212, o+214), and copies the
// buckets back into .grad: three DtoD copies (o+220, o+225, o+230). The main thread then launches
// the update sgd (o+300) and a 4-byte DtoD copy (o+320). Before the first iteration, DDP's
// construction broadcasts the parameters once (launched at 10).
std::string ddp_run(const DdpRunOptions& options = {}) {
  KinetoJson t;
  t.runtime("cudaLaunchKernelExC", 10, 2, 1).kernel(kBroadcastKernel, 12, 4, 1, 20);
  for (int i = 0; i < 2; ++i) {
    const double o = 100 + 1000.0 * i;
    const std::int64_t c = 100 * (i + 1);
    t.annotation("ProfilerStep#" + std::to_string(i), o, 900)
        .runtime("cudaLaunchKernel", o + 5, 2, c + 1)
        .kernel("void at::native::CatArrayBatchedCopy<float, unsigned int, 1, 128, 1>", o + 8, 2, c + 1)
        .runtime("cudaLaunchKernelExC", o + 11, 2, c + 2)
        .kernel(kBroadcastKernel, o + 14, 4, c + 2, 20)
        .runtime("cudaMemcpyAsync", o + 19, 2, c + 3)
        .memcpy(kDeviceCopy, o + 22, 1, c + 3, 7, 64)
        .runtime("cudaLaunchKernel", o + 25, 2, c + 4)
        .kernel("fwd", o + 30, 50, c + 4)
        .runtime("cudaLaunchKernel", o + 100, 2, c + 10, 2)
        .kernel("bwd_1", o + 105, 40, c + 10)
        .runtime("cudaMemcpyAsync", o + 110, 2, c + 11, 2)
        .memcpy(kDeviceCopy, o + 146, 1, c + 11, 7, 500)
        .runtime("cudaLaunchKernel", o + 155, 2, c + 13, 2)
        .kernel("bwd_0", o + 160, 40, c + 13);
    const double launch[] = {150, 205, 210};
    const std::int64_t correlation[] = {12, 14, 15};
    double stream_free = 0;  // the NCCL stream runs the buckets in order
    for (int k = 0; k < 3; ++k) {
      const double start = std::max(o + launch[k] + 2, stream_free);
      if (!options.recorded_elements.empty()) record_bucket(t, o + launch[k], options.recorded_elements[k]);
      t.runtime("cudaLaunchKernelExC", o + launch[k], 2, c + correlation[k], 2)
          .kernel(kAllReduceKernel, start, options.allreduce_us[k], c + correlation[k], 20);
      stream_free = start + options.allreduce_us[k];
    }
    t.runtime("cudaEventRecord", o + 212, 1, c + 16, 2).runtime("cudaStreamWaitEvent", o + 214, 1, c + 17, 2);
    for (int j = 0; j < 3; ++j)
      t.runtime("cudaMemcpyAsync", o + 220 + 5 * j, 2, c + 18 + j, 2)
          .memcpy(kDeviceCopy, stream_free + 1 + 2 * j, 1, c + 18 + j, 7, options.copy_back_bytes[j]);
    t.runtime("cudaLaunchKernel", o + 300, 2, c + 30)
        .kernel("sgd", o + 305, 10, c + 30)
        .runtime("cudaMemcpyAsync", o + 320, 2, c + 31)
        .memcpy(kDeviceCopy, o + 321, 1, c + 31, 7, 4)
        .runtime("cudaDeviceSynchronize", o + 400, 2, c + 40);
  }
  return t.str();
}

/// Live tasks of this kind and name pattern, by bytes (memcpy sizes; -1 when not recorded).
std::map<std::int64_t, int> live_by_bytes(const Graph& g, TaskKind kind) {
  std::map<std::int64_t, int> out;
  for (TaskId t = 0; t < g.num_tasks(); ++t)
    if (!g.removed(t) && g.task(t).kind == kind) ++out[g.task(t).bytes];
  return out;
}

std::vector<TaskId> live_named_tasks(const Graph& g, std::string_view name) {
  std::vector<TaskId> out;
  for (TaskId t = 0; t < g.num_tasks(); ++t)
    if (!g.removed(t) && g.name(t) == name) out.push_back(t);
  return out;
}

}  // namespace

TEST_CASE("ddp on a DDP run's trace: without cluster, caps or DDP options the graph is unchanged",
          "[scenario][distributed]") {
  const Graph base = graph_of(ddp_run());
  const auto baseline = simulate(base);
  for (const char* spec : {"ddp", "ddp:broadcast_buffers=1,gradient_as_bucket_view=0,latency=50us,params=1e6"}) {
    INFO(spec);
    Graph g = base;
    const auto outcome = apply_scenario(g, parse_scenario_spec(spec));  // no refusal: no size is needed
    CHECK(mentions(outcome.notes, "the trace's all-reduces kept as measured"));
    CHECK(g.fingerprint() == base.fingerprint());
    const auto r = run(g, outcome);
    CHECK(r.makespan_ns == baseline.makespan_ns);
    CHECK(r.end_ns == baseline.end_ns);
  }
}

TEST_CASE("ddp gradient_as_bucket_view=1 removes the copy-back after each pass's last all-reduce, nothing else",
          "[scenario][distributed]") {
  Graph g = graph_of(ddp_run());
  const auto calls_before = live_named_tasks(g, "cudaMemcpyAsync").size();
  const auto outcome = apply_scenario(g, parse_scenario_spec("ddp:gradient_as_bucket_view=1"));
  // The three copies into .grad of both passes go; the autograd thread's own copy during the
  // backward (500 B), the main thread's after it (4 B) and the unflatten copy (64 B) stay.
  CHECK(live_by_bytes(g, TaskKind::memcpy) == std::map<std::int64_t, int>{{4, 2}, {64, 2}, {500, 2}});
  CHECK(live_named_tasks(g, "cudaMemcpyAsync").size() == calls_before - 6);
  CHECK(live_named_tasks(g, kAllReduceKernel).size() == 6);
  CHECK(live_named_tasks(g, kBroadcastKernel).size() == 3);
  CHECK(mentions(outcome.notes, "3 copies of 6.00 MB per pass in 2 of 2 passes, 6 copies and 6 launch calls"));
  CHECK(mentions(outcome.notes, "kept as measured"));
}

TEST_CASE("ddp keeps the copy-back when its bytes differ from the recorded all-reduce sizes",
          "[scenario][distributed]") {
  // Buckets of 500000, 250000 and 750000 floats: 6 MB, as the copies move ...
  DdpRunOptions options;
  options.recorded_elements = {500'000, 250'000, 750'000};
  Graph same = graph_of(ddp_run(options));
  apply_scenario(same, parse_scenario_spec("ddp:gradient_as_bucket_view=1"));
  CHECK(live_by_bytes(same, TaskKind::memcpy).count(1'000'000) == 0);
  // ... but 5 MB of copies after the last all-reduce are not DDP's copy-back: kept.
  options.copy_back_bytes = {1'000'000, 2'000'000, 2'000'000};
  Graph other = graph_of(ddp_run(options));
  const auto outcome = apply_scenario(other, parse_scenario_spec("ddp:gradient_as_bucket_view=1"));
  CHECK(live_by_bytes(other, TaskKind::memcpy)[2'000'000] == 4);
  CHECK(mentions(outcome.notes, "in 0 of 2 passes"));
  CHECK(mentions(outcome.notes, "2 passes kept theirs: their bytes differ from the recorded all-reduce sizes"));
}

TEST_CASE("ddp broadcast_buffers=0 removes each forward's broadcast and its coalescing copies",
          "[scenario][distributed]") {
  Graph g = graph_of(ddp_run());
  const auto launches_before = live_named_tasks(g, "cudaLaunchKernel").size();
  const auto outcome = apply_scenario(g, parse_scenario_spec("ddp:broadcast_buffers=0"));
  // Per iteration: the broadcast, the flatten kernel before it and the 64-byte unflatten copy
  // after it; the construction broadcast before the first iteration stays, and so does every
  // other copy (the 4-byte copy that ends iteration 0 is not part of iteration 1's broadcast).
  const auto broadcasts = live_named_tasks(g, kBroadcastKernel);
  REQUIRE(broadcasts.size() == 1);
  CHECK(g.task(broadcasts[0]).iteration == -1);
  CHECK(live_named_tasks(g, "void at::native::CatArrayBatchedCopy<float, unsigned int, 1, 128, 1>").empty());
  CHECK(live_by_bytes(g, TaskKind::memcpy) ==
        std::map<std::int64_t, int>{{4, 2}, {500, 2}, {1'000'000, 2}, {2'000'000, 2}, {3'000'000, 2}});
  CHECK(live_named_tasks(g, "cudaLaunchKernel").size() == launches_before - 2);
  CHECK(live_named_tasks(g, "fwd").size() == 2);
  CHECK(mentions(outcome.notes,
                 "removed 2 NCCL broadcast kernels inside iterations and the copies coalescing their buffers around "
                 "them, 2 copy kernels and 2 device-to-device copies (6 launch calls)"));
}

TEST_CASE("ddp re-buckets traced all-reduces of recorded size: merged under the caps, costed by the ring fit",
          "[scenario][distributed]") {
  // Buckets of 2, 1 and 3 MB measured at 20 us + 0.01 ns/byte over 2 GPUs (traffic = bytes): 40,
  // 30 and 50 us. Caps: 1 MiB first (2 MB closes it alone), then 4 MB: {1 MB, 3 MB}.
  DdpRunOptions options;
  options.allreduce_us = {40, 30, 50};
  options.recorded_elements = {500'000, 250'000, 750'000};
  const Graph base = graph_of(ddp_run(options));
  const auto kernels = live_named_tasks(base, kAllReduceKernel);
  REQUIRE(kernels.size() == 6);
  Graph g = base;
  const auto outcome = apply_scenario(g, parse_scenario_spec("ddp:bucket=4MB,first_bucket=1MiB"));
  CHECK(live_named_tasks(g, kAllReduceKernel) == std::vector<TaskId>{kernels[0], kernels[2], kernels[3], kernels[5]});
  CHECK(g.task(kernels[0]).duration_ns == 40'000);  // alone: as measured
  CHECK(g.task(kernels[2]).duration_ns == 60'000);  // 20 us + 0.01 ns/B x 4 MB, the fitted model
  CHECK(g.task(kernels[5]).duration_ns == 60'000);
  CHECK(g.removed(launching_call(base, kernels[1])));  // the merged-away all-reduce's launch call goes too
  CHECK(live_named_tasks(g, "cudaLaunchKernelExC").size() == live_named_tasks(base, "cudaLaunchKernelExC").size() - 2);
  CHECK(mentions(outcome.notes, "fit to the trace's 6 all-reduces (3 sizes, n = 2): latency 20.0 us, bandwidth 100 GB/s"));
  CHECK(mentions(outcome.notes, "3 -> 2 per pass; 2 merged all-reduces costed by the ring model, 2 merged-away"));
  // The merged all-reduce starts once its last member is ready: at its launch (o+210 us), not at
  // its traced start behind the merged-away member (o+237 us).
  const auto r = run(g, outcome);
  const TaskId merged_launch = launching_call(g, kernels[2]);
  CHECK(r.start_ns[kernels[2]] == r.start_ns[merged_launch] + 2 * us);  // the trace's launch latency
  CHECK(r.start_ns[kernels[2]] <= base.task(merged_launch).recorded_start_ns + 2 * us);
  CHECK(base.task(kernels[2]).recorded_start_ns - base.task(merged_launch).recorded_start_ns == 27 * us);
  CHECK(r.start_ns[kernels[2]] >= r.end_ns[kernels[0]]);
  // A given cluster re-costs the lone buckets too: n = 4, 20 us + 1.5 x 0.01 ns/B x bytes.
  Graph four = base;
  apply_scenario(four, parse_scenario_spec("ddp:gpus=4,bucket=4MB,first_bucket=1MiB,bandwidth=100GB/s"));
  CHECK(four.task(kernels[0]).duration_ns == 50'000);
  CHECK(four.task(kernels[2]).duration_ns == 80'000);
}

TEST_CASE("ddp re-buckets unsized traced all-reduces from params, at the bandwidth their durations show",
          "[scenario][distributed]") {
  const Graph base = graph_of(ddp_run());  // 60, 30 and 30 us, no recorded size (as in Nsight)
  const auto kernels = live_named_tasks(base, kAllReduceKernel);
  Graph refused = base;
  CHECK_THROWS_WITH(apply_scenario(refused, parse_scenario_spec("ddp:bucket=1500")),
                    Catch::Contains("re-bucketing needs the size of every traced all-reduce") &&
                        Catch::Contains("give params"));
  // params = 1000 x 4 B spread by duration: 2000, 1000, 1000 B. First cap 1000 B closes {2000};
  // cap 1500 B merges the other two. The ring model: latency 20 us (default); bandwidth from the
  // traced times, sum(duration - 20 us) / sum(bytes) = 2 x 60 us / 8000 B = 15 ns/B (n is not in
  // the trace: traffic = bytes). Merged: 20 us + 15 ns/B x 2000 B = 50 us.
  Graph g = base;
  const auto outcome = apply_scenario(g, parse_scenario_spec("ddp:bucket=1500,first_bucket=1000,params=1000"));
  CHECK(live_named_tasks(g, kAllReduceKernel) == std::vector<TaskId>{kernels[0], kernels[2], kernels[3], kernels[5]});
  CHECK(g.task(kernels[0]).duration_ns == 60'000);
  CHECK(g.task(kernels[2]).duration_ns == 50'000);
  CHECK(g.task(kernels[5]).duration_ns == 50'000);
  CHECK(mentions(outcome.notes, "n unknown"));
  CHECK(mentions(outcome.notes, "latency 20.0 us (default), bandwidth 0.0667 GB/s (from the measured durations of "
                                "the 6 traced all-reduces"));
  // Caps that merge nothing leave every all-reduce as measured.
  Graph same = base;
  apply_scenario(same, parse_scenario_spec("ddp:bucket=1,first_bucket=1,params=1000"));
  CHECK(same.fingerprint() == base.fingerprint());
}

// --- p3 ---------------------------------------------------------------------------------------

TEST_CASE("p3 slices gradients, sends the earliest layer first and moves updates before the next forward",
          "[scenario][distributed]") {
  const TempFile file("p3_insert.json", kParamFile);
  Graph g = graph_of(training_loop());
  const auto outcome =
      apply_scenario(g, parse_scenario_spec("p3:gpus=4,intra=1GB/s,latency=10us,slice=400000,param_file=" + file.path));
  REQUIRE(outcome.policy);
  // Slices per pass, forward order: p0 {4000}, p1 {400000, 400000, 200000}, p2 {2000}.
  const auto slices = tasks_on(g, "p3 slices");
  REQUIRE(slices.size() == 10);
  std::vector<TimeNs> durations;
  for (std::size_t k = 0; k < 5; ++k) durations.push_back(g.task(slices[k]).duration_ns);
  CHECK(durations == std::vector<TimeNs>{16'000, 610'000, 610'000, 310'000, 13'000});  // 10 us + 1.5 x bytes
  // Ranks: pass 0 before pass 1, earliest layer first.
  for (std::size_t k = 1; k < slices.size(); ++k)
    CHECK(outcome.policy->priority(g, slices[k - 1]) < outcome.policy->priority(g, slices[k]));

  // Pass 0 has a next forward: the step's kernels are replaced by per-parameter updates on the
  // stream, each after its own slices. fwd_b sits at half the forward's GPU time: parameter 0
  // (ready last) gates fwd_a, parameters 1 (half the backward still to run) and 2 gate fwd_b.
  CHECK(g.removed(task_named(g, "sgd_0")));
  const TaskId u0 = task_named(g, "p3 update of parameter 0"), u1 = task_named(g, "p3 update of parameter 1"),
               u2 = task_named(g, "p3 update of parameter 2");
  CHECK(g.task(u0).duration_ns == 3 * us);
  CHECK(g.task(u1).duration_ns == 12 * us);
  const TaskId fwd_a2 = task_named(g, "fwd_a", 1), fwd_b2 = task_named(g, "fwd_b", 1);
  CHECK(edge_between(g, slices[0], u0));
  CHECK(edge_between(g, u0, fwd_a2));
  CHECK(edge_between(g, slices[3], u1));
  CHECK(edge_between(g, u1, fwd_b2));
  CHECK(edge_between(g, u1, u2));
  CHECK(edge_between(g, u2, fwd_b2));
  // Pass 1 is the last: its slices gate the step's own kernels, one per parameter.
  CHECK(edge_between(g, slices[5], task_named(g, "sgd_0", 1)));
  CHECK(edge_between(g, slices[8], task_named(g, "sgd_1", 1)));
  CHECK(edge_between(g, slices[9], task_named(g, "sgd_2", 1)));

  const auto r = run(g, outcome);
  // p2's slice goes as soon as bwd_2 ends; p1's first slice when bwd_1 ends; while it runs,
  // p0's gradient becomes ready and overtakes p1's remaining slices.
  CHECK(r.start_ns[slices[4]] == r.end_ns[task_named(g, "bwd_2")]);
  CHECK(r.start_ns[slices[1]] == r.end_ns[task_named(g, "bwd_1")]);
  CHECK(r.start_ns[slices[0]] == r.end_ns[slices[1]]);
  CHECK(r.start_ns[slices[2]] == r.end_ns[slices[0]]);
  CHECK(r.start_ns[u0] == r.end_ns[slices[0]]);
  CHECK(r.start_ns[fwd_a2] == r.end_ns[u0]);  // the next forward starts before p1's slices are through
  CHECK(r.start_ns[fwd_a2] < r.end_ns[slices[3]]);
}

TEST_CASE("p3 keeps the step's barrier when its kernels do not split over the parameters", "[scenario][distributed]") {
  Graph g = graph_of(training_loop({2, 2, false}));
  const auto outcome = apply_scenario(g, parse_scenario_spec("p3:gpus=2,params=1000"));
  const auto slices = tasks_on(g, "p3 slices");
  REQUIRE(slices.size() == 6);  // 1333, 1334, 1333 bytes: one slice each
  for (std::size_t k = 0; k < 3; ++k) CHECK(edge_between(g, slices[k], task_named(g, "sgd_0")));
  CHECK_FALSE(g.removed(task_named(g, "sgd_0")));
  CHECK(mentions(outcome.notes, "behind the step's barrier in 2"));
}

// --- refusals ---------------------------------------------------------------------------------

TEST_CASE("ddp and p3 refuse bad parameters and graphs they cannot apply to", "[scenario][distributed]") {
  Graph g = graph_of(training_loop());
  auto refuses = [&](const std::string& spec, const std::string& part) {
    Graph copy = g;
    try {
      apply_scenario(copy, parse_scenario_spec(spec));
      FAIL("accepted " << spec);
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Catch::Contains(part));
    }
  };
  refuses("ddp:machines=0", "machines");
  refuses("ddp:gpus=1.5", "gpus");
  refuses("ddp:nodes=2", "no parameter 'nodes'");
  refuses("p3:slice=0", "slice");
  refuses("ddp:intra=fast", "intra");
  // No sizes anywhere: both parameters are named.
  refuses("ddp:gpus=2", "param_file");
  refuses("p3:gpus=2", "params");
  refuses("ddp:gpus=2,param_file=/nonexistent/params.json", "/nonexistent/params.json");
  const TempFile two("ddp_two_params.json", R"({"parameters": [{"count": 10}, {"count": 20}]})");
  refuses("ddp:gpus=2,param_file=" + two.path, "lists 2 parameters but the backward pass of iteration 0 has 3");
  // A trace with no AccumulateGrad range shows no backward pass.
  Graph forward_only = graph_of(KinetoJson()
                                    .annotation("ProfilerStep#1", 0, 50)
                                    .runtime("cudaLaunchKernel", 1, 4, 1)
                                    .kernel("k", 10, 5, 1)
                                    .str());
  CHECK_THROWS_WITH(apply_scenario(forward_only, parse_scenario_spec("ddp:gpus=2,params=10")),
                    Catch::Contains("AccumulateGrad"));
  CHECK_THROWS_WITH(apply_scenario(forward_only, parse_scenario_spec("p3:gpus=2,params=10")),
                    Catch::Contains("AccumulateGrad"));
}

// --- real traces --------------------------------------------------------------------------------

namespace {

const char* kResNet = "resnet50-v100-dataloader/workers0";
const char* kDdpResNet = "ddp-resnet-v100-rank0";
const char* kConvNet = "ddp-convnet-a100-nccl";

const Predictor& predictor_of(const char* folder) {
  static std::map<std::string, std::unique_ptr<Predictor>> cache;  // tests run on one thread
  auto& p = cache[folder];
  if (!p) p = std::make_unique<Predictor>(build_graph(load_trace(traces_at(folder).at(0))));
  return *p;
}

double ms(TimeNs ns) { return static_cast<double>(ns) / 1e6; }

Prediction predict(const char* folder, const std::string& spec) {
  return predictor_of(folder).predict(parse_scenario_spec(spec));
}

}  // namespace

TEST_CASE("real: ddp on one GPU equals the baseline to the ns", "[scenario][distributed][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  for (const char* folder : {kResNet, kDdpResNet}) {
    const auto p = predict(folder, "ddp:machines=1,gpus=1");
    CHECK(p.predicted_total_ns == p.baseline_total_ns);
    for (const auto& it : p.iterations) CHECK(it.predicted_ns == it.baseline_ns);
  }
}

TEST_CASE("real: an infinite link without latency leaves a single-GPU trace at its baseline",
          "[scenario][distributed][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const auto p = predict(kResNet, "ddp:machines=4,gpus=2,params=25.6e6,bandwidth=inf,latency=0");
  CHECK(p.predicted_total_ns == p.baseline_total_ns);
  for (const auto& it : p.iterations) CHECK(it.predicted_ns == it.baseline_ns);
  const auto recorded = predict(kDdpResNet, "ddp:gpus=8,bandwidth=inf,latency=0");  // the trace's own buckets
  CHECK(recorded.predicted_total_ns == recorded.baseline_total_ns);
}

TEST_CASE("real: more GPUs at a fixed bandwidth are never faster", "[scenario][distributed][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const std::vector<std::pair<const char*, std::string>> cases = {
      {kResNet, "ddp:machines=2,params=25.6e6,inter=10Gbps,gpus="},
      {kDdpResNet, "ddp:machines=2,inter=10Gbps,gpus="},
      {kConvNet, "ddp:machines=2,inter=10Gbps,gpus="},
      {kResNet, "p3:machines=2,params=25.6e6,inter=10Gbps,gpus="}};
  for (const auto& [folder, spec] : cases) {
    TimeNs previous_total = 0, previous_median = 0;
    for (int gpus : {1, 2, 4, 8}) {
      const auto p = predict(folder, spec + std::to_string(gpus));
      INFO(folder << " " << spec << gpus << ": median " << ms(p.predicted_median_ns) << " ms");
      CHECK(p.predicted_total_ns >= previous_total);
      CHECK(p.predicted_median_ns >= previous_median);
      previous_total = p.predicted_total_ns, previous_median = p.predicted_median_ns;
    }
  }
}

TEST_CASE("real: p3 is never slower than ddp when communication-bound", "[scenario][distributed][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  for (const char* link : {"10Gbps", "5Gbps", "2Gbps", "1Gbps"}) {
    const std::string cluster = fmt::format(":machines=4,gpus=2,params=25.6e6,inter={}", link);
    const auto ddp = predict(kResNet, "ddp" + cluster), p3 = predict(kResNet, "p3" + cluster);
    INFO(link << ": ddp median " << ms(ddp.predicted_median_ns) << " ms, p3 " << ms(p3.predicted_median_ns) << " ms");
    CHECK(p3.predicted_median_ns <= ddp.predicted_median_ns);
    CHECK(p3.predicted_total_ns <= ddp.predicted_total_ns);
    CHECK(ddp.predicted_median_ns > ddp.baseline_median_ns);  // communication-bound indeed
  }
}

TEST_CASE("real: the ring fit to ddp-convnet-a100-nccl's all-reduces", "[scenario][distributed][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const Graph& g = predictor_of(kConvNet).base();
  const auto collectives = read_trace_collectives(g);
  CHECK(collectives.world_size == 2);
  std::vector<MeasuredCollective> samples;
  for (const auto& c : collectives.list)
    if (c.allreduce && c.bytes != kNone && !c.tasks.empty()) samples.push_back({c.bytes, c.tasks_ns});
  REQUIRE(samples.size() == 15);  // 5 buckets x 3 steps
  const auto fit = fit_ring(samples, collectives.world_size);
  REQUIRE(fit);
  WARN("ddp-convnet-a100-nccl fit: latency " << fit->link.latency_ns / 1e3 << " us, bandwidth " << 1 / fit->link.ns_per_byte
                                             << " GB/s, rms residual " << fit->rms_residual_ns / 1e3 << " us, R^2 "
                                             << fit->r_squared);
  CHECK(fit->distinct_sizes == 5);
  // The kernels' times hardly depend on their sizes (they also wait for the other rank): the fit
  // explains almost nothing and the scenario falls back to the defaults.
  CHECK(fit->r_squared < 0.5);
  CHECK(fit->link.latency_ns == Approx(2.793e6).epsilon(0.01));
  const auto p = predict(kConvNet, "ddp:gpus=2");
  CHECK(mentions(p.notes, "fit not used"));
  CHECK(mentions(p.notes, "re-costed the trace's all-reduce tasks for n = 2 GPUs: 15 of recorded size"));
}

namespace {

/// The measured pairs (../shared/pairs): one rank of a 4-GPU DDP job of a 3D U-Net, Nsight.
std::string sc22_pair(const char* run) {
  return (kShared.parent_path() / "pairs" / "nersc-sc22-unet-a100" / run).string();
}

/// Removed tasks of `after` that passed `keep` in `before`, by id.
std::vector<TaskId> removed_where(const Graph& before, const Graph& after, const std::function<bool(TaskId)>& keep) {
  std::vector<TaskId> out;
  for (TaskId t = 0; t < before.num_tasks(); ++t)
    if (!before.removed(t) && after.removed(t) && keep(t)) out.push_back(t);
  return out;
}

}  // namespace

TEST_CASE("real: ddp on the sc22 DDP U-Net: identity to the ns, the copy-back is 24 copies of the model's gradients",
          "[scenario][distributed][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const Predictor predictor(build_graph(load_trace(sc22_pair("4gpu_baseline.sqlite.gz"))));
  const auto same = predictor.predict(parse_scenario_spec("ddp"));
  CHECK(same.predicted_total_ns == same.baseline_total_ns);
  for (const auto& it : same.iterations) CHECK(it.predicted_ns == it.baseline_ns);

  const Graph& base = predictor.base();
  Graph g = base;
  const auto outcome = apply_scenario(g, parse_scenario_spec("ddp:broadcast_buffers=0,gradient_as_bucket_view=1"));
  // Every step copies each parameter's gradient back once: 24 DtoD copies, 467,908,116 bytes
  // (116,977,029 fp32 parameters), launched by the thread that launched the all-reduces.
  std::map<std::int32_t, std::pair<int, std::int64_t>> per_step;
  for (TaskId t : removed_where(base, g, [&](TaskId t) { return base.task(t).kind == TaskKind::memcpy; })) {
    CHECK(is_device_to_device_copy(base, t));
    auto& [copies, bytes] = per_step[base.task(t).iteration];
    ++copies, bytes += base.task(t).bytes;
  }
  CHECK(per_step.size() == 59);
  for (const auto& [step, tally] : per_step) CHECK(tally == std::make_pair(24, std::int64_t{467'908'116}));
  CHECK(mentions(outcome.notes, "24 copies of 467.91 MB per pass in 59 of 59 passes"));
  CHECK(mentions(outcome.notes, "removed 0 NCCL broadcast kernels"));  // the model has no buffers
  CHECK(removed_where(base, g, [&](TaskId t) { return base.task(t).kind == TaskKind::communication; }).empty());
}

TEST_CASE("real: ddp re-buckets the sc22 U-Net's 8 all-reduces per step at a 100 MB cap",
          "[scenario][distributed][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const Predictor predictor(build_graph(load_trace(sc22_pair("4gpu_nobroadcast.sqlite.gz"))));
  CHECK_THROWS_WITH(predictor.predict(parse_scenario_spec("ddp:bucket=100MiB")), Catch::Contains("give params"));
  // params: the sum of the copy-back sizes of 4gpu_baseline / 4 bytes (a fact about the model).
  const auto p = predictor.predict(parse_scenario_spec("ddp:bucket=100MiB,params=116977029"));
  CHECK(mentions(p.notes, "re-bucketed the traced all-reduces of 59 passes at bucket 104.86 MB (first bucket 1.05 MB): "
                          "8 -> 4-5 per pass"));
  CHECK(mentions(p.notes, "latency 20.0 us (default)"));
}

TEST_CASE("real: on ddp-convnet-a100-nccl the copy-back and buffer-broadcast rules pick what PyTorch's ranges name",
          "[scenario][distributed][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  const Graph& base = predictor_of(kConvNet).base();
  const auto device_copies_within = [&](const std::string& range) {
    Graph copy = base;  // select() is not const
    std::vector<TaskId> out;
    for (TaskId t : copy.select(TaskFilter().kind(TaskKind::memcpy).within(range)))
      if (base.task(t).iteration >= 0) out.push_back(t);
    return out;
  };
  const auto is_copy = [&](TaskId t) { return base.task(t).kind == TaskKind::memcpy; };
  // gradient_as_bucket_view: the copies inside DDP's copy_bucket_to_grad ranges, 161 per step.
  Graph grads = base;
  apply_scenario(grads, parse_scenario_spec("ddp:gradient_as_bucket_view=1"));
  const auto copy_back = removed_where(base, grads, is_copy);
  CHECK(copy_back.size() == 3 * 161);
  CHECK(copy_back == device_copies_within("torch.distributed.ddp.reducer::copy_bucket_to_grad"));
  // broadcast_buffers: 2 broadcasts per forward, 2 flatten kernels and the 159 buffers' copies
  // back, which are the copies inside DistributedDataParallel.forward.
  Graph buffers = base;
  const auto outcome = apply_scenario(buffers, parse_scenario_spec("ddp:broadcast_buffers=0"));
  CHECK(removed_where(base, buffers, is_copy) == device_copies_within("DistributedDataParallel.forward"));
  CHECK(mentions(outcome.notes, "removed 6 NCCL broadcast kernels inside iterations and the copies coalescing their "
                                "buffers around them, 6 copy kernels and 477 device-to-device copies"));
}

TEST_CASE("ddp and p3 with machines or gpus given: the predicted job runs on machines x gpus GPUs",
          "[scenario][distributed][cost]") {
  const Predictor predictor(graph_of(training_loop()));
  CHECK(predictor.predict(parse_scenario_spec("ddp:params=1000,machines=2,gpus=4")).gpus == 8);
  CHECK(predictor.predict(parse_scenario_spec("p3:params=1000,gpus=4")).gpus == 4);
  CHECK(predictor.predict(parse_scenario_spec("ddp:params=1000")).gpus == 1);  // none given: the trace's (none: 1)
}

}  // namespace daydream::test
