// GPU work held back by another stream (see gpu_holds.hpp).
#include "graph/gpu_holds.hpp"

#include <algorithm>

#include "common/text.hpp"
#include "graph/occupancy.hpp"

namespace daydream {

bool runs_on_sms(const Trace& trace, const TraceEvent& e) {
  if (e.kind == EventKind::memcpy) return text::contains(trace.name_of(e), "DtoD");
  return e.kind == EventKind::kernel || e.kind == EventKind::memset;
}

DeviceTimelines::DeviceTimelines(const BuildContext& ctx) : ctx_(ctx), by_lane_(ctx.trace.lanes.size()) {
  const Trace& trace = ctx.trace;
  use_.assign(trace.events.size(), SmUse{});
  std::map<std::int64_t, std::optional<GpuResources>> resources;  // per device
  for (std::uint32_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (!is_gpu_activity(e.kind)) continue;
    by_lane_[e.lane].push_back(i);
    if (!runs_on_sms(trace, e)) continue;
    use_[i].on_sms = true;
    const std::int64_t device = trace.lanes[e.lane].process;
    auto [gpu, inserted] = resources.try_emplace(device);
    if (inserted) gpu->second = resources_of(trace.metadata.gpus, device);
    if (e.launch < 0 || !gpu->second) continue;
    const LaunchConfig& launch = trace.launches[static_cast<std::size_t>(e.launch)];
    use_[i].waves = waves(launch, *gpu->second);
    if (use_[i].waves == 0) continue;
    use_[i].fills = launch.blocks >= std::int64_t{blocks_per_sm(launch, *gpu->second)} * gpu->second->sm_count;
    modelled_[device] = true;
  }
  for (std::uint32_t l = 0; l < by_lane_.size(); ++l) {
    auto& positions = by_lane_[l];
    if (positions.empty()) continue;
    std::stable_sort(positions.begin(), positions.end(), [&](std::uint32_t a, std::uint32_t b) {
      return trace.events[a].start_ns < trace.events[b].start_ns;
    });
    lanes_[trace.lanes[l].process].push_back(l);
  }
}

bool DeviceTimelines::modelled(std::uint32_t lane) const {
  const auto it = modelled_.find(ctx_.trace.lanes[lane].process);
  return it != modelled_.end() && it->second;
}

std::optional<std::uint32_t> DeviceTimelines::holder(std::uint32_t lane, TimeNs ready, TimeNs start) const {
  const auto device = lanes_.find(ctx_.trace.lanes[lane].process);
  if (device == lanes_.end()) return std::nullopt;
  const bool model = modelled(lane);
  for (std::uint32_t other : device->second) {
    if (other == lane) continue;
    // the activity of the other stream that started last before `start`: a stream runs in order
    const auto& positions = by_lane_[other];
    const auto it = std::partition_point(positions.begin(), positions.end(),
                                         [&](std::uint32_t p) { return ctx_.trace.events[p].start_ns < start; });
    if (it != positions.begin() && may_hold(*std::prev(it), ready, start, model)) return *std::prev(it);
  }
  return std::nullopt;
}

bool DeviceTimelines::may_hold(std::uint32_t position, TimeNs ready, TimeNs start, bool model) const {
  const TraceEvent& e = ctx_.trace.events[position];
  const SmUse& use = use_[position];
  if (!use.on_sms || e.end_ns() <= start) return false;
  if (!model) return e.start_ns <= ready;
  if (!use.fills) return false;
  const double tail = kTailWaves * static_cast<double>(e.duration_ns) / use.waves;
  return e.start_ns <= ready || static_cast<double>(e.end_ns() - start) <= tail;
}

}  // namespace daydream
