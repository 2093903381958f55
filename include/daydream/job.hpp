#pragma once
/// @file job.hpp
/// @brief Multi-rank jobs: the traces of all ranks of one distributed job merged into one graph,
/// their clocks aligned and each collective matched across ranks, so that a collective cannot end
/// on one rank before every participant has reached it.
///
/// How a matched collective is modelled (docs/distributed.md): each rank's NCCL kernel is split
/// into an `arrive` task (zero length, on the kernel's stream, after everything the kernel waited
/// for) and the kernel itself, which now only transfers; every arrival leads to one zero-length
/// `barrier` task on the process group's channel, and the barrier leads to every rank's kernel
/// (`communication` edges). A kernel's transfer time is its measured end minus the last
/// participant's measured start (clamped to its measured duration), so the replay reproduces the
/// trace and a what-if that delays one rank delays the others at the next collective.
///
/// @code
///   daydream::Graph job = daydream::load_job({"worker0.json.gz", "worker1.json.gz"});
///   auto result = daydream::simulate(job);
///   daydream::JobReport report = daydream::make_job_report(job, result);
/// @endcode

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "daydream/graph.hpp"
#include "daydream/model.hpp"  // collective_traffic_bytes, the link model
#include "daydream/report/replay.hpp"
#include "daydream/simulate.hpp"

namespace daydream {

/// One rank of a job graph.
struct RankInfo {
  std::int64_t rank = kNone;
  std::string trace;          ///< the file it came from ("" for a rank added by replication)
  std::int64_t replica_of = kNone;  ///< the traced rank it copies, for ranks added by replicate_ranks
  /// Estimated clock offset of this rank's trace against the reference rank (the lowest one):
  /// subtracted from its timestamps. Median over matched collectives of end(rank) - end(reference).
  TimeNs clock_offset_ns = 0;
  std::size_t offset_samples = 0;  ///< matched collectives behind the estimate
};

/// One collective matched across the ranks of a job.
struct MatchedCollective {
  std::string process_group;  ///< the trace's process group name, "default" when not recorded
  std::string name;           ///< "all_reduce", "all_to_all", ... (or the NCCL kernel's family)
  std::int64_t sequence = 0;  ///< its index among the group's collectives of that name
  std::int64_t bytes = kNone; ///< message size on the reference rank, kNone when not recorded
  TaskId barrier = kNoTask;   ///< zero-length task on the group's channel
  std::vector<std::int64_t> ranks;  ///< participants, in order
  std::vector<TaskId> arrivals;     ///< per participant: its zero-length arrive task
  std::vector<TaskId> transfers;    ///< per participant: its NCCL kernel (the transfer)
};

/// The ranks, matched collectives and import findings of a job graph (Graph::job()).
struct JobLayout {
  std::int64_t world_size = kNone;
  std::vector<RankInfo> ranks;  ///< in rank order
  std::vector<MatchedCollective> collectives;
  std::vector<std::int64_t> missing_ranks;  ///< ranks below world_size that no trace holds
  /// Collectives some participants never reached (or other oddities): left as measured tasks.
  std::vector<std::string> warnings;
  /// JSON files a directory listing brought in that are no Chrome trace (no traceEvents: PyTorch
  /// execution traces, configs), left out of the job; each also has a line in warnings.
  std::vector<std::string> skipped_files;
  bool partial() const { return !missing_ranks.empty(); }
};

/// Options of job import.
struct JobOptions {
  GraphOptions graph;
  /// Worker threads for loading and building the rank graphs (0: all hardware threads).
  unsigned threads = 0;
  /// When set, receives the JSON files a directory listing brought in that are no Chrome trace
  /// (skipped), for a note to the user.
  std::vector<std::string>* skipped = nullptr;
};

/// The trace files among `inputs`: each directory is replaced by the traces directly inside it
/// (`*.json`, `*.json.gz`, sorted by name). Throws Error naming a path that does not exist or a
/// directory without traces.
std::vector<std::filesystem::path> expand_trace_inputs(const std::vector<std::filesystem::path>& inputs);

/// Loads every rank's trace and merges them (merge_ranks). A JSON file a directory listing
/// brings in that is no Chrome trace (no traceEvents) is skipped (JobLayout::skipped_files,
/// JobOptions::skipped); one named as a file is an error. When there is one trace (a directory
/// holding one) and it is no rank of a job (no distributedInfo.rank), its own graph is returned
/// (Graph::job() null). Throws Error naming the files for duplicate ranks, mismatched
/// world sizes, a trace without `distributedInfo.rank`, or a directory with no Chrome trace.
Graph load_job(const std::vector<std::filesystem::path>& inputs, const JobOptions& options = {});

/// Merges the graphs of the ranks of one job (each built from one trace, with Graph::rank and
/// world_size set): units are renamed "rank R: <name>", clocks aligned, collectives matched and
/// coupled. With ranks missing the result is partial: collectives stay as measured (no
/// coupling) and JobLayout::missing_ranks says which.
Graph merge_ranks(const std::vector<const Graph*>& ranks);

/// A job graph grown to `ranks` ranks by replicating traced ranks (new rank r copies traced rank
/// r mod n) and adding them to every matched collective: data-parallel scale-out. Collective
/// costs are left as they are (scenarios re-cost them). Throws Error when `job` is not a
/// complete job graph or `ranks` is smaller than its rank count.
Graph replicate_ranks(const Graph& job, std::int64_t ranks);

// --- reports ---

/// A job iteration: measured_ns is the slowest rank's measured ProfilerStep, simulated_ns the
/// slowest rank's simulated step.
struct JobIterationTime : IterationTime {
  std::int64_t measured_slowest_rank = kNone, simulated_slowest_rank = kNone;
};

/// How one collective went in the simulation.
struct CollectiveTiming {
  std::size_t index = 0;          ///< into JobLayout::collectives
  std::string group, name;        ///< as in MatchedCollective
  std::int64_t sequence = 0, bytes = kNone;
  std::int64_t last_rank = kNone; ///< the participant that arrived last (holds the others back)
  TimeNs wait_ns = 0;             ///< summed over participants: last arrival - own arrival
  TimeNs max_wait_ns = 0;         ///< the longest any participant waited
  TimeNs transfer_ns = 0;         ///< median transfer time of the participants
  bool on_critical_path = false;  ///< its barrier lies on the job's critical path
};

struct RankReport {
  std::int64_t rank = kNone;
  std::string trace;
  TimeNs clock_offset_ns = 0;
  std::vector<IterationTime> iterations;
  TimeNs waited_ns = 0;          ///< time this rank spent waiting for others at collectives
  TimeNs held_back_ns = 0;       ///< time others waited for it (as the last arrival)
  std::int64_t last_arrivals = 0;///< collectives it reached last
  TimeNs critical_path_ns = 0;   ///< task time of this rank on the job's critical path
  TimeNs step_start_ns = -1;     ///< simulated start of its first iteration (-1: none left)
};

struct JobReport {
  std::int64_t world_size = kNone;
  std::vector<std::int64_t> missing_ranks;
  std::vector<std::string> warnings;
  std::vector<JobIterationTime> iterations;
  std::vector<RankReport> ranks;
  std::vector<CollectiveTiming> collectives;
  std::int64_t straggler = kNone;  ///< the rank others waited for longest (kNone: nobody waited)
  /// The rank with the longest simulated step most often over the job's iterations (ties: the
  /// lower rank); kNone without iterations. It differs from the straggler when the ranks that
  /// waited for the straggler have the longer steps.
  std::int64_t slowest_rank = kNone;
  /// The job's critical path: its length (first task's start to last task's end), that window
  /// in the simulated run (ns from the origin) and the ranks of its first and last task.
  TimeNs critical_path_ns = 0;
  TimeNs critical_path_start_ns = 0, critical_path_end_ns = 0;
  std::int64_t critical_path_first_rank = kNone, critical_path_last_rank = kNone;
  TimeNs max_clock_skew_ns = 0;    ///< largest |clock offset| estimated
  /// Sentences that explain the numbers: why the straggler and the slowest rank differ, what the
  /// critical path covers (explain_job).
  std::vector<std::string> explanations;
};

/// Measured vs simulated per rank and for the job, who waited for whom, and the critical path
/// by rank. Throws Error when `graph` is not a job graph.
JobReport make_job_report(const Graph& graph, const SimulationResult& result);

/// `daydream replay --json` on several ranks: {"job": {...}, "ranks": [...]} (docs/cli.md).
std::string to_json(const JobReport& report);

}  // namespace daydream
