// Each rank's NCCL kernels, named and sized by the collective record around their launch call,
// and their matching across ranks: NCCL runs a communicator's collectives in the order every rank
// issued them, so the k-th collective of a name in a group is the same collective on every rank.
#include "job/match.hpp"

#include <algorithm>
#include <cctype>

#include "common/checked.hpp"
#include "common/text.hpp"
#include "daydream/job.hpp"

namespace daydream::job {
namespace {

/// The innermost collective record on `unit` around `time`, or null. Records are by start.
const CollectiveRecord* record_around(const Graph& graph, UnitId unit, TimeNs time) {
  const CollectiveRecord* best = nullptr;
  for (const CollectiveRecord& r : graph.collectives()) {
    if (r.start_ns > time) break;
    if (r.unit == unit && r.end_ns >= time) best = &r;
  }
  return best;
}

/// "ncclKernel_AllReduce_RING_LL_Sum_float(...)" / "ncclDevKernel_SendRecv(...)" -> "AllReduce".
std::string kernel_family(std::string_view kernel) {
  for (std::string_view prefix : {"ncclKernel_", "ncclDevKernel_"}) {
    if (!text::starts_with(kernel, prefix)) continue;
    const auto rest = kernel.substr(prefix.size());
    return std::string(rest.substr(0, rest.find_first_of("_(")));
  }
  return std::string(kernel.substr(0, kernel.find('(')));
}

CommKernel describe(const Graph& graph, TaskId t, const CollectiveRecord* record) {
  const Task& task = graph.task(t);
  CommKernel k;
  k.task = t;
  k.start_ns = graph.origin_ns + task.recorded_start_ns;
  k.end_ns = k.start_ns + task.duration_ns;
  k.group = "default";
  k.name = kernel_family(graph.name(t));
  if (record) {
    if (!record->info.process_group.empty()) k.group = record->info.process_group;
    if (!record->info.name.empty()) k.name = record->info.name;
    const std::int64_t element = dtype_element_bytes(record->info.dtype);
    if (record->info.in_elements != kNone && element > 0)  // unknown where the product does not fit
      k.bytes = checked::mul(record->info.in_elements, element).value_or(kNone);
    k.group_size = record->info.group_size;
  }
  k.key_name = text::squashed(k.name);
  return k;
}

}  // namespace

std::vector<CommKernel> find_comm_kernels(const Graph& graph) {
  std::vector<CommKernel> kernels;
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (task.removed || task.kind != TaskKind::communication) continue;
    if (graph.units()[task.unit].kind != UnitKind::gpu_stream) continue;
    const TaskId call = launching_call(graph, t);
    const CollectiveRecord* record =
        call == kNoTask ? nullptr : record_around(graph, graph.task(call).unit, graph.task(call).recorded_start_ns);
    kernels.push_back(describe(graph, t, record));
  }
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const CommKernel& a, const CommKernel& b) { return a.start_ns < b.start_ns; });
  return kernels;
}

MatchTable match_collectives(const std::vector<std::vector<CommKernel>>& kernels) {
  MatchTable table;
  for (std::size_t r = 0; r < kernels.size(); ++r) {
    std::map<std::pair<std::string, std::string>, std::int64_t> next_sequence;
    for (std::size_t i = 0; i < kernels[r].size(); ++i) {
      const CommKernel& k = kernels[r][i];
      const std::int64_t sequence = next_sequence[{k.group, k.key_name}]++;
      table[{k.group, k.key_name, sequence}].emplace_back(r, i);
    }
  }
  return table;
}

}  // namespace daydream::job
