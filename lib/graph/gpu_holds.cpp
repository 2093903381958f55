// GPU work held back by another stream (see gpu_holds.hpp).
#include "graph/gpu_holds.hpp"

#include <algorithm>

#include "common/nearly_sorted.hpp"
#include "common/text.hpp"
#include "graph/occupancy.hpp"

namespace daydream {

bool runs_on_sms(const Trace& trace, const TraceEvent& e) {
  if (e.kind == EventKind::memcpy) return text::contains(trace.name_of(e), "DtoD");
  return e.kind == EventKind::kernel || e.kind == EventKind::memset;
}

DeviceTimelines::DeviceTimelines(const BuildContext& ctx)
    : ctx_(ctx), by_lane_(ctx.trace.lanes.size()), starts_(ctx.trace.lanes.size()), others_(ctx.trace.lanes.size()) {
  const Trace& trace = ctx.trace;
  use_.assign(trace.events.size(), SmUse{});
  std::map<std::int64_t, std::optional<GpuResources>> resources;  // per device
  for (std::uint32_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (!is_gpu_activity(e.kind)) continue;
    const std::int64_t device = trace.lanes[e.lane].process;
    by_lane_[e.lane].push_back(i);
    busy_[device].emplace_back(e.start_ns, e.end_ns());
    if (!runs_on_sms(trace, e)) continue;
    use_[i].on_sms = true;
    auto [gpu, inserted] = resources.try_emplace(device);
    if (inserted) {
      gpu->second = resources_of(trace.metadata.gpus, device);
      if (gpu->second) gpu->second = with_architecture_defaults(*gpu->second);
    }
    if (e.launch < 0 || !gpu->second) continue;
    const LaunchConfig& launch = trace.launches[static_cast<std::size_t>(e.launch)];
    const std::int64_t wave = std::int64_t{blocks_per_sm(launch, *gpu->second)} * gpu->second->sm_count;
    if (wave == 0 || launch.blocks <= 0) continue;
    use_[i].waves = static_cast<std::int32_t>(std::min<std::int64_t>((launch.blocks + wave - 1) / wave, INT32_MAX));
    use_[i].fills = launch.blocks >= wave;
    modelled_[device] = true;
  }
  merge_device_busy();
  std::map<std::int64_t, std::vector<std::uint32_t>> device_lanes;
  for (std::uint32_t l = 0; l < by_lane_.size(); ++l) {
    auto& positions = by_lane_[l];
    if (positions.empty()) continue;
    std::stable_sort(positions.begin(), positions.end(), [&](std::uint32_t a, std::uint32_t b) {
      return trace.events[a].start_ns < trace.events[b].start_ns;
    });
    for (std::uint32_t p : positions) starts_[l].push_back(trace.events[p].start_ns);
    device_lanes[trace.lanes[l].process].push_back(l);
  }
  for (const auto& [device, lanes] : device_lanes)
    for (std::uint32_t l : lanes)
      for (std::uint32_t other : lanes)
        if (other != l) others_[l].push_back(other);
}

// Each device's GPU activities, collected in the constructor's pass, become their union.
void DeviceTimelines::merge_device_busy() {
  for (auto& [device, spans] : busy_) {
    sort_nearly_sorted(spans);
    std::vector<std::pair<TimeNs, TimeNs>> merged;
    for (const auto& s : spans) {
      if (!merged.empty() && s.first <= merged.back().second) merged.back().second = std::max(merged.back().second, s.second);
      else merged.push_back(s);
    }
    spans = std::move(merged);
  }
}

bool DeviceTimelines::device_busy_between(std::uint32_t lane, TimeNs from, TimeNs to) const {
  const auto device = busy_.find(ctx_.trace.lanes[lane].process);
  if (device == busy_.end()) return false;
  const auto& spans = device->second;
  const auto it = std::upper_bound(spans.begin(), spans.end(), from, [](TimeNs t, const auto& s) { return t < s.second; });
  return it != spans.end() && it->first < to;
}

bool DeviceTimelines::modelled(std::uint32_t lane) const {
  const auto it = modelled_.find(ctx_.trace.lanes[lane].process);
  return it != modelled_.end() && it->second;
}

std::optional<std::uint32_t> DeviceTimelines::holder(std::uint32_t lane, TimeNs ready, TimeNs start) const {
  if (others_[lane].empty()) return std::nullopt;
  const bool model = modelled(lane);
  for (std::uint32_t other : others_[lane]) {
    // the activity of the other stream that started last before `start`: a stream runs in order
    const auto& starts = starts_[other];
    const auto k = std::lower_bound(starts.begin(), starts.end(), start) - starts.begin();
    if (k > 0 && may_hold(by_lane_[other][static_cast<std::size_t>(k - 1)], ready, start, model))
      return by_lane_[other][static_cast<std::size_t>(k - 1)];
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
