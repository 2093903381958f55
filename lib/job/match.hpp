#pragma once
// Finding each rank's collectives (its NCCL kernels, named and sized by the record around their
// launch) and matching them across ranks by (process group, name, sequence).
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "daydream/graph.hpp"

namespace daydream::job {

/// One NCCL kernel of one rank, with what its collective record says.
struct CommKernel {
  TaskId task = kNoTask;     ///< in the rank's own graph
  std::string group;         ///< process group name, "default" when not recorded
  std::string name;          ///< the record's name, else the kernel family ("AllReduce")
  std::string key_name;      ///< name without case and underscores, for matching
  std::int64_t bytes = kNone;
  std::int64_t group_size = kNone;  ///< participants the record names, kNone when not recorded
  TimeNs start_ns = 0, end_ns = 0;  ///< absolute trace time (before clock alignment)
};

/// The rank's NCCL kernels (communication tasks on GPU streams), by recorded start.
std::vector<CommKernel> find_comm_kernels(const Graph& graph);

/// (group, key_name, sequence among the rank's kernels of that group and name)
using CollectiveKey = std::tuple<std::string, std::string, std::int64_t>;

/// Per key, the kernel of each rank that has one: (rank index, index into that rank's kernels).
using MatchTable = std::map<CollectiveKey, std::vector<std::pair<std::size_t, std::size_t>>>;

MatchTable match_collectives(const std::vector<std::vector<CommKernel>>& kernels);

}  // namespace daydream::job
