// replicate_ranks(): a job graph grown to more ranks, each new rank a copy of a traced one that
// joins every collective its template takes part in (data-parallel scale-out).
#include <fmt/format.h>

#include <unordered_map>

#include "daydream/error.hpp"
#include "daydream/job.hpp"
#include "graph/graph_access.hpp"

namespace daydream {
namespace {

/// What one traced rank owns in the job graph: its units, tasks, iterations and edges.
struct RankParts {
  std::vector<UnitId> units;
  std::vector<TaskId> tasks;
  std::vector<std::size_t> iterations;
  std::vector<Graph::EdgeRecord> edges;  ///< every edge touching one of its tasks
  std::vector<CpuRange> ranges;
};

std::vector<RankParts> split_by_rank(const Graph& job, const JobLayout& layout) {
  std::unordered_map<std::int64_t, std::size_t> index;
  for (std::size_t i = 0; i < layout.ranks.size(); ++i) index[layout.ranks[i].rank] = i;
  std::vector<RankParts> parts(layout.ranks.size());
  const auto owner = [&](TaskId t) -> RankParts* {
    const auto found = index.find(job.units()[job.task(t).unit].rank);
    return found == index.end() ? nullptr : &parts[found->second];
  };
  for (UnitId u = 0; u < job.units().size(); ++u)
    if (const auto found = index.find(job.units()[u].rank); found != index.end()) parts[found->second].units.push_back(u);
  for (TaskId t = 0; t < job.num_tasks(); ++t)
    if (RankParts* p = owner(t)) p->tasks.push_back(t);
  for (std::size_t i = 0; i < job.iterations().size(); ++i)
    if (job.iterations()[i].first_task != kNoTask)
      if (RankParts* p = owner(job.iterations()[i].first_task)) p->iterations.push_back(i);
  for (const auto& e : job.edges()) {
    RankParts* from = owner(e.from);
    RankParts* to = owner(e.to);
    if (from) from->edges.push_back(e);
    if (to && to != from) to->edges.push_back(e);
  }
  for (const CpuRange& r : job.ranges())
    if (const auto found = index.find(job.units()[r.unit].rank); found != index.end()) parts[found->second].ranges.push_back(r);
  return parts;
}

/// Adds one copy of `parts` as rank `rank`; returns the copy's id of every template task.
std::unordered_map<TaskId, TaskId> add_replica(Graph& job, const RankParts& parts, std::int64_t rank,
                                               std::int64_t template_rank, std::vector<CpuRange>& ranges) {
  std::unordered_map<UnitId, UnitId> unit_map;
  const std::string old_prefix = fmt::format("rank {}: ", template_rank);
  for (UnitId u : parts.units) {
    Unit unit = job.units()[u];
    unit.name = fmt::format("rank {}: {}", rank, std::string_view(unit.name).substr(old_prefix.size()));
    unit.rank = rank;
    unit_map[u] = job.add_unit(std::move(unit));
  }
  std::unordered_map<TaskId, TaskId> task_map;
  std::unordered_map<std::int32_t, std::int32_t> iteration_map;
  for (std::size_t i : parts.iterations) {
    Iteration it = job.iterations()[i];
    iteration_map[static_cast<std::int32_t>(i)] = static_cast<std::int32_t>(job.iterations().size());
    job.iterations().push_back(std::move(it));
  }
  for (TaskId t : parts.tasks) {
    Task task = job.task(t);
    task.unit = unit_map.at(task.unit);
    if (task.iteration >= 0) task.iteration = iteration_map.count(task.iteration) ? iteration_map[task.iteration] : -1;
    task_map[t] = job.add_task(task);
  }
  const auto mapped = [&](TaskId t) {
    const auto found = task_map.find(t);
    return found == task_map.end() ? t : found->second;  // a barrier stays shared
  };
  for (const auto& [from, to] : task_map) {
    TaskHolds holds = job.holds(from);
    if (!holds.any()) continue;
    if (holds.sm_held_by != kNoTask) holds.sm_held_by = mapped(holds.sm_held_by);
    if (holds.lock_held_by != kNoTask) holds.lock_held_by = mapped(holds.lock_held_by);
    GraphAccess::set_holds(job, to, holds);
  }
  for (const auto& e : parts.edges) job.add_edge(mapped(e.from), mapped(e.to), e.edge);
  for (const auto& [from, to] : iteration_map) {
    Iteration& it = job.iterations()[static_cast<std::size_t>(to)];
    if (it.first_task != kNoTask) it.first_task = task_map.at(it.first_task);
    if (it.last_task != kNoTask) it.last_task = task_map.at(it.last_task);
  }
  for (CpuRange r : parts.ranges) {
    r.unit = unit_map.at(r.unit);
    ranges.push_back(r);
  }
  return task_map;
}

}  // namespace

Graph replicate_ranks(const Graph& input, std::int64_t ranks) {
  const JobLayout* layout = input.job();
  if (!layout) throw Error(input.source_path, Error::kNoEvent, "", "replicating ranks needs a multi-rank job graph");
  if (layout->partial())
    throw Error(input.source_path, Error::kNoEvent, "",
                "replicating ranks needs a complete job (ranks are missing, so its collectives are not coupled)");
  const auto traced = static_cast<std::int64_t>(layout->ranks.size());
  if (ranks < traced)
    throw Error(fmt::format("cannot shrink a job of {} ranks to {} by replication", traced, ranks));
  if (ranks > kMaxWorldSize) throw Error(fmt::format("{} ranks: daydream accepts at most {}", ranks, kMaxWorldSize));
  const double tasks = static_cast<double>(input.num_tasks()) / static_cast<double>(traced) * static_cast<double>(ranks);
  if (tasks > static_cast<double>(kMaxGraphTasks))
    throw Error(fmt::format("{} ranks of about {} tasks each would make {:.3g} tasks, more than the {} a graph may hold",
                            ranks, input.num_tasks() / static_cast<std::size_t>(traced), tasks, kMaxGraphTasks));
  Graph job = input;
  JobLayout grown = *layout;
  const std::vector<RankParts> parts = split_by_rank(input, *layout);
  std::vector<CpuRange> ranges = input.ranges();
  for (std::int64_t rank = traced; rank < ranks; ++rank) {
    const auto t = static_cast<std::size_t>(rank % traced);
    const std::int64_t template_rank = layout->ranks[t].rank;
    const auto task_map = add_replica(job, parts[t], rank, template_rank, ranges);
    grown.ranks.push_back({rank, "", template_rank, 0, 0});
    for (MatchedCollective& c : grown.collectives)
      for (std::size_t i = 0; i < layout->collectives[&c - grown.collectives.data()].ranks.size(); ++i) {
        if (c.ranks[i] != template_rank) continue;
        c.ranks.push_back(rank);
        c.arrivals.push_back(task_map.at(c.arrivals[i]));
        c.transfers.push_back(task_map.at(c.transfers[i]));
      }
  }
  grown.world_size = ranks;
  job.set_ranges(std::move(ranges));
  job.set_job(std::move(grown));
  job.world_size = ranks;
  return job;
}

}  // namespace daydream
