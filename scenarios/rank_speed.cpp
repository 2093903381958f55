// rank_speed: on a multi-rank job graph, one rank's compute (GPU kernels, copies, memsets and CPU
// work) `factor` times as fast; by default the straggler of the baseline replay (the rank the
// others waited for longest). docs/scenarios/rank_speed.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "builtin.hpp"
#include "common/checked.hpp"
#include "daydream/error.hpp"
#include "daydream/simulate.hpp"
#include "job_link.hpp"

namespace daydream::scenarios {
namespace {

bool is_compute(const Graph& graph, const Task& task) {
  return !task.removed && task.kind != TaskKind::communication && graph.units()[task.unit].kind != UnitKind::comm_channel;
}

ScenarioOutcome apply_rank_speed(Graph& graph, const ScenarioParams& params) {
  const JobLayout& job = job_of(graph);
  ScenarioOutcome outcome;
  std::int64_t rank = params.integer("rank");
  if (!params.given("rank")) {
    rank = make_job_report(graph, simulate(graph)).straggler;
    if (rank == kNone) throw Error("no rank held the others back; give 'rank'");
    outcome.notes.push_back(fmt::format("rank {} is the straggler of the baseline", rank));
  }
  const bool traced = std::any_of(job.ranks.begin(), job.ranks.end(), [&](const RankInfo& r) { return r.rank == rank; });
  if (!traced) throw Error(fmt::format("rank {} is not in the job", rank));
  const double factor = params.number("factor");
  TimeNs compute_ns = 0;  // before the change, for the note
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (!is_compute(graph, task) || graph.units()[task.unit].rank != rank) continue;
    compute_ns += task.duration_ns;
    graph.set_duration(t, checked::task_duration(double(task.duration_ns) / factor, [&] {
                         return fmt::format("task {} '{}' at factor {:g}", t, graph.name(t), factor);
                       }));
  }
  outcome.notes.push_back(fmt::format("rank {}'s compute ({:.3f} ms of GPU and CPU task time) {:g} times as fast", rank,
                                      double(compute_ns) / 1e6, factor));
  return outcome;
}

}  // namespace

Scenario rank_speed() {
  return {"rank_speed",
          "multi-rank job: one rank's compute (GPU and CPU) factor times as fast (straggler removal)",
          {ScenarioParam("rank", ParamKind::integer, -1, "the rank whose compute gets faster", 0, double(kMaxWorldSize - 1))
               .automatic("the straggler of the baseline replay (the rank the others waited for longest)"),
           {"factor", ParamKind::number, 2, "speed-up of its compute", 0, std::numeric_limits<double>::infinity(), true}},
          apply_rank_speed};
}

}  // namespace daydream::scenarios
