// merge_ranks(): the graphs of all ranks of a job as one graph, clocks aligned on the collectives
// and every matched collective coupled through a barrier (model: include/daydream/job.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>

#include "common/text.hpp"
#include "daydream/error.hpp"
#include "daydream/job.hpp"
#include "graph/graph_access.hpp"
#include "job/match.hpp"

namespace daydream {

void Graph::set_job(JobLayout job) { job_ = std::make_shared<const JobLayout>(std::move(job)); }

namespace {

using job::CommKernel;
using job::MatchTable;

std::string describe_rank_file(const Graph& g) { return g.source_path.empty() ? std::string("<memory>") : g.source_path; }

/// Ranks sorted by rank; Error for a trace without a rank, a rank outside the world, twice the
/// same rank or disagreeing world sizes.
std::vector<const Graph*> check_ranks(std::vector<const Graph*> ranks) {
  if (ranks.empty()) throw Error("", Error::kNoEvent, "", "a job needs the trace of at least one rank");
  for (const Graph* g : ranks) {
    if (g->rank == kNone)
      throw Error(describe_rank_file(*g), Error::kNoEvent, "distributedInfo.rank",
                  "missing: the trace does not say which rank of the job it is");
    if (g->world_size == kNone)
      throw Error(describe_rank_file(*g), Error::kNoEvent, "distributedInfo.world_size", "missing");
    if (g->world_size < 1 || g->world_size > kMaxWorldSize)  // missing_ranks() lists up to world_size ranks
      throw Error(describe_rank_file(*g), Error::kNoEvent, "distributedInfo.world_size",
                  fmt::format("{} ranks: daydream accepts 1 to {}", g->world_size, kMaxWorldSize));
    if (g->world_size != ranks.front()->world_size)
      throw Error(describe_rank_file(*g), Error::kNoEvent, "distributedInfo.world_size",
                  fmt::format("{} here but {} in {}: the traces are not of one job", g->world_size,
                              ranks.front()->world_size, describe_rank_file(*ranks.front())));
    if (g->rank < 0 || g->rank >= g->world_size)
      throw Error(describe_rank_file(*g), Error::kNoEvent, "distributedInfo.rank",
                  fmt::format("rank {} outside the world of {} ranks", g->rank, g->world_size));
  }
  std::stable_sort(ranks.begin(), ranks.end(), [](const Graph* a, const Graph* b) { return a->rank < b->rank; });
  for (std::size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i]->rank == ranks[i - 1]->rank)
      throw Error(describe_rank_file(*ranks[i]), Error::kNoEvent, "distributedInfo.rank",
                  fmt::format("rank {} is also the rank of {}", ranks[i]->rank, describe_rank_file(*ranks[i - 1])));
  return ranks;
}

std::vector<std::int64_t> missing_ranks(const std::vector<const Graph*>& ranks) {
  std::vector<std::int64_t> missing;
  std::size_t next = 0;
  for (std::int64_t r = 0; r < ranks.front()->world_size; ++r) {
    if (next < ranks.size() && ranks[next]->rank == r) ++next;
    else missing.push_back(r);
  }
  return missing;
}

/// A matched collective before merging: its key and each participant's (rank index, kernel).
struct Match {
  job::CollectiveKey key;
  std::vector<std::pair<std::size_t, std::size_t>> members;
};

/// The collectives every expected participant reached; the others become warnings.
std::vector<Match> complete_matches(const MatchTable& table, const std::vector<std::vector<CommKernel>>& kernels,
                                    const std::vector<const Graph*>& ranks, JobLayout& layout) {
  std::vector<Match> complete;
  for (const auto& [key, members] : table) {
    const CommKernel& first = kernels[members.front().first][members.front().second];
    const std::size_t expected =
        first.group_size > 0 ? static_cast<std::size_t>(first.group_size) : ranks.size();
    if (members.size() == expected && expected > 1) {
      complete.push_back({key, members});
      continue;
    }
    std::string who;
    for (const auto& [r, k] : members) who += fmt::format("{}{}", who.empty() ? "" : ",", ranks[r]->rank);
    layout.warnings.push_back(fmt::format("collective {} #{} of group {} reached by ranks [{}] only ({} expected): "
                                          "left as measured, not coupled",
                                          first.name, std::get<2>(key), std::get<0>(key), who, expected));
  }
  return complete;
}

/// Per rank: median over matched collectives of (its end - the reference rank's end). A
/// collective ends at once on every participant, so this is the rank's clock offset.
void estimate_clock_offsets(const std::vector<Match>& matches, const std::vector<std::vector<CommKernel>>& kernels,
                            JobLayout& layout) {
  std::vector<std::vector<TimeNs>> differences(layout.ranks.size());
  for (const Match& m : matches) {
    if (m.members.front().first != 0) continue;  // the reference (lowest) rank takes no part
    const TimeNs reference_end = kernels[0][m.members.front().second].end_ns;
    for (const auto& [r, k] : m.members) differences[r].push_back(kernels[r][k].end_ns - reference_end);
  }
  for (std::size_t r = 0; r < layout.ranks.size(); ++r) {
    layout.ranks[r].offset_samples = differences[r].size();
    layout.ranks[r].clock_offset_ns = text::median(differences[r]);
  }
}

void check_sizes(const Match& m, const std::vector<std::vector<CommKernel>>& kernels,
                 const std::vector<const Graph*>& ranks, JobLayout& layout) {
  const auto& [group, name, sequence] = m.key;
  if (name == "alltoall" || name == "alltoallv" || name == "sendrecv") return;  // sizes may differ by design
  const CommKernel& first = kernels[m.members.front().first][m.members.front().second];
  for (const auto& [r, k] : m.members) {
    const CommKernel& other = kernels[r][k];
    if (other.bytes == first.bytes || other.bytes == kNone || first.bytes == kNone) continue;
    layout.warnings.push_back(fmt::format("collective {} #{} of group {}: {} bytes on rank {} but {} on rank {}",
                                          first.name, sequence, group, first.bytes,
                                          ranks[m.members.front().first]->rank, other.bytes, ranks[r]->rank));
    return;
  }
}

/// Copies the ranks' tasks, edges, iterations and ranges into one graph.
class Merger {
 public:
  Merger(const std::vector<const Graph*>& ranks, JobLayout& layout) : ranks_(ranks), layout_(layout) {}

  Graph run(const std::vector<Match>& matches, const std::vector<std::vector<CommKernel>>& kernels) {
    set_shifts();
    plan_arrivals(matches, kernels);
    for (std::size_t r = 0; r < ranks_.size(); ++r) copy_rank(r);
    for (const Match& m : matches) couple(m, kernels);
    out_.set_ranges(std::move(ranges_));
    out_.set_collectives(std::move(records_));
    out_.set_gpus(std::move(gpus_));
    out_.set_launch_configs(std::move(launches_));
    out_.calibration() = ranks_.front()->calibration();
    out_.world_size = ranks_.front()->world_size;
    out_.iteration_rule = ranks_.front()->iteration_rule;
    return std::move(out_);
  }

 private:
  /// Rank r's times move by shift_[r]: into the job's clock (minus its offset) and onto the
  /// job's origin, the earliest aligned origin.
  void set_shifts() {
    TimeNs origin = std::numeric_limits<TimeNs>::max();
    for (std::size_t r = 0; r < ranks_.size(); ++r)
      origin = std::min(origin, ranks_[r]->origin_ns - layout_.ranks[r].clock_offset_ns);
    out_.origin_ns = origin;
    for (std::size_t r = 0; r < ranks_.size(); ++r)
      shift_.push_back(ranks_[r]->origin_ns - layout_.ranks[r].clock_offset_ns - origin);
  }

  /// Which kernels get an arrive task, and each kernel's transfer time: its aligned end minus
  /// the last participant's aligned start, within [0, its duration].
  void plan_arrivals(const std::vector<Match>& matches, const std::vector<std::vector<CommKernel>>& kernels) {
    transfer_.resize(ranks_.size());
    for (const Match& m : matches) {
      TimeNs last_start = std::numeric_limits<TimeNs>::min();
      for (const auto& [r, k] : m.members)
        last_start = std::max(last_start, kernels[r][k].start_ns - layout_.ranks[r].clock_offset_ns);
      for (const auto& [r, k] : m.members) {
        const CommKernel& kernel = kernels[r][k];
        const TimeNs end = kernel.end_ns - layout_.ranks[r].clock_offset_ns;
        transfer_[r][kernel.task] = std::clamp(end - last_start, TimeNs{0}, kernel.end_ns - kernel.start_ns);
      }
    }
  }

  std::uint32_t string_of(const Graph& g, std::uint32_t index) { return index == 0 ? 0 : out_.intern(g.string(index)); }

  void copy_rank(std::size_t r) {
    const Graph& g = *ranks_[r];
    const std::int64_t rank = g.rank;
    unit_base_ = static_cast<UnitId>(out_.units().size());
    for (Unit unit : g.units()) {
      unit.name = fmt::format("rank {}: {}", rank, unit.name);
      unit.rank = rank;
      out_.add_unit(std::move(unit));
    }
    const auto iteration_base = static_cast<std::int32_t>(out_.iterations().size());
    launch_base_ = static_cast<std::int32_t>(launches_.size());
    launches_.insert(launches_.end(), g.launch_configs().begin(), g.launch_configs().end());
    gpus_.insert(gpus_.end(), g.gpus().begin(), g.gpus().end());
    task_map_.assign(g.num_tasks(), kNoTask);
    arrival_map_.assign(g.num_tasks(), kNoTask);
    for (TaskId t = 0; t < g.num_tasks(); ++t) copy_task(g, r, t, iteration_base);
    for (auto [t, holds] : g.held_tasks()) {  // holders may come after the tasks they held
      if (holds.sm_held_by != kNoTask) holds.sm_held_by = task_map_[holds.sm_held_by];
      if (holds.lock_held_by != kNoTask) holds.lock_held_by = task_map_[holds.lock_held_by];
      GraphAccess::set_holds(out_, task_map_[t], holds);
    }
    for (const auto& e : g.edges()) {
      const TaskId to = arrival_map_[e.to] != kNoTask ? arrival_map_[e.to] : task_map_[e.to];
      out_.add_edge(task_map_[e.from], to, e.edge);
    }
    for (TaskId t = 0; t < g.num_tasks(); ++t)
      if (arrival_map_[t] != kNoTask)
        out_.add_edge(arrival_map_[t], task_map_[t], {EdgeType::gpu_sequential, Timing::finish_to_start, 0, false});
    for (Iteration it : g.iterations()) {
      if (it.first_task != kNoTask) it.first_task = task_map_[it.first_task];
      if (it.last_task != kNoTask) it.last_task = task_map_[it.last_task];
      it.measured_start_ns += shift_[r];
      out_.iterations().push_back(std::move(it));
    }
    for (CpuRange range : g.ranges())
      ranges_.push_back({string_of(g, range.name), range.unit + unit_base_, range.start_ns + shift_[r],
                         range.end_ns + shift_[r], range.event});
    for (CollectiveRecord record : g.collectives()) {
      record.unit += unit_base_;
      record.start_ns += shift_[r];
      record.end_ns += shift_[r];
      records_.push_back(std::move(record));
    }
    merge_report(g);
    kernel_maps_.push_back({task_map_, arrival_map_});
  }

  void copy_task(const Graph& g, std::size_t r, TaskId t, std::int32_t iteration_base) {
    Task task = g.task(t);
    task.unit += unit_base_;
    task.name = string_of(g, task.name);
    task.op_name = string_of(g, task.op_name);
    if (task.launch >= 0) task.launch += launch_base_;
    task.layer = string_of(g, task.layer);
    task.release_ns += shift_[r];
    task.recorded_start_ns += shift_[r];
    if (task.iteration >= 0) task.iteration += iteration_base;
    const auto transfer = transfer_[r].find(t);
    if (transfer != transfer_[r].end()) {
      Task arrive = task;
      arrive.duration_ns = 0;
      arrive.name = out_.intern(fmt::format("arrive: {}", g.name(t)));
      arrival_map_[t] = out_.add_task(arrive);
      task.duration_ns = transfer->second;
    }
    task_map_[t] = out_.add_task(task);
  }

  void merge_report(const Graph& g) {
    for (const ImportStat& s : g.report().stats()) out_.report().add(s);
  }

  /// The barrier: every arrival -> barrier -> every transfer.
  void couple(const Match& m, const std::vector<std::vector<CommKernel>>& kernels) {
    const auto& [group, key_name, sequence] = m.key;
    const CommKernel& first = kernels[m.members.front().first][m.members.front().second];
    MatchedCollective c{group, first.name, sequence, first.bytes, kNoTask, {}, {}, {}};
    Task barrier;
    barrier.kind = TaskKind::communication;
    barrier.unit = channel(group);
    barrier.name = out_.intern(fmt::format("{} #{} ({}): all ranks arrived", first.name, sequence, group));
    for (const auto& [r, k] : m.members) {
      c.ranks.push_back(ranks_[r]->rank);
      c.arrivals.push_back(kernel_maps_[r].arrivals[kernels[r][k].task]);
      c.transfers.push_back(kernel_maps_[r].tasks[kernels[r][k].task]);
      barrier.recorded_start_ns = std::max(barrier.recorded_start_ns, out_.task(c.arrivals.back()).recorded_start_ns);
    }
    c.barrier = out_.add_task(barrier);
    for (std::size_t i = 0; i < c.arrivals.size(); ++i) {
      out_.add_edge(c.arrivals[i], c.barrier, {EdgeType::communication, Timing::finish_to_start, 0, false});
      out_.add_edge(c.barrier, c.transfers[i], {EdgeType::communication, Timing::finish_to_start, 0, false});
    }
    layout_.collectives.push_back(std::move(c));
  }

  UnitId channel(const std::string& group) {
    const auto found = channels_.find(group);
    if (found != channels_.end()) return found->second;
    Unit unit;
    unit.kind = UnitKind::comm_channel;
    unit.name = fmt::format("collectives: group {}", group);
    unit.background = true;  // zero-length barriers; the path goes on to a rank's work
    return channels_[group] = out_.add_unit(std::move(unit));
  }

  struct KernelMaps {
    std::vector<TaskId> tasks, arrivals;  // rank-local id -> merged id
  };

  const std::vector<const Graph*>& ranks_;
  JobLayout& layout_;
  Graph out_;
  std::vector<TimeNs> shift_;
  std::vector<std::map<TaskId, TimeNs>> transfer_;
  std::vector<TaskId> task_map_, arrival_map_;
  std::vector<KernelMaps> kernel_maps_;
  UnitId unit_base_ = 0;
  std::vector<CpuRange> ranges_;
  std::vector<GpuResources> gpus_;
  std::vector<LaunchConfig> launches_;
  std::int32_t launch_base_ = 0;  // the current rank's first launch configuration in launches_
  std::vector<CollectiveRecord> records_;
  std::map<std::string, UnitId> channels_;
};

}  // namespace

Graph merge_ranks(const std::vector<const Graph*>& input) {
  const std::vector<const Graph*> ranks = check_ranks(input);
  JobLayout layout;
  layout.world_size = ranks.front()->world_size;
  layout.missing_ranks = missing_ranks(ranks);
  for (const Graph* g : ranks) layout.ranks.push_back({g->rank, g->source_path, kNone, 0, 0});
  std::vector<std::vector<CommKernel>> kernels;
  for (const Graph* g : ranks) kernels.push_back(job::find_comm_kernels(*g));
  std::vector<Match> matches;
  if (layout.partial()) {
    layout.warnings.push_back(fmt::format("{} of {} ranks missing: collectives left as measured, not coupled",
                                          layout.missing_ranks.size(), layout.world_size));
  } else {
    matches = complete_matches(job::match_collectives(kernels), kernels, ranks, layout);
    for (const Match& m : matches) check_sizes(m, kernels, ranks, layout);
    estimate_clock_offsets(matches, kernels, layout);
  }
  Graph merged = Merger(ranks, layout).run(matches, kernels);
  std::string sources;
  for (const Graph* g : ranks) sources += (sources.empty() ? "" : ",") + g->source_path;
  merged.source_path = std::move(sources);
  merged.set_job(std::move(layout));
  if (auto cycle = merged.find_cycle(); !cycle.empty())
    throw Error(merged.source_path, Error::kNoEvent, "",
                fmt::format("the matched collectives form a cycle through task '{}': the ranks issued them in "
                            "different orders",
                            merged.name(cycle.front())));
  GraphAccess::settle(merged);  // at rest, as build_graph leaves a rank's graph
  return merged;
}

}  // namespace daydream
