#pragma once
// GPU work held back by another stream (docs/graph.md, "Held back by another stream"): per
// device, the recorded timelines of its streams and what each task asks of the SMs, so the
// graph builder can tell which late start another stream's kernel explains.

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "graph/build_context.hpp"

namespace daydream {

/// What a GPU activity asks of its device's SMs.
struct SmUse {
  bool on_sms = false;     ///< kernels, memsets and device-to-device copies; other copies use the copy engines
  bool fills = false;      ///< a kernel whose grid holds at least one full wave of the device's SMs
  std::int32_t waves = 0;  ///< waves of the SMs its grid needs; 0 when its launch configuration is unknown
};

/// Whether a GPU activity runs on SMs. Device-to-device copies do: the SC21/SC22 Nsight
/// profiles show them held back by GPU-filling kernels exactly like kernels (docs/simulator.md).
bool runs_on_sms(const Trace& trace, const TraceEvent& e);

class DeviceTimelines {
 public:
  explicit DeviceTimelines(const BuildContext& ctx);

  /// The GPU activities of each lane, by recorded start (event positions).
  const std::vector<std::vector<std::uint32_t>>& by_lane() const { return by_lane_; }
  /// What the GPU activity at this event position asks of the SMs.
  const SmUse& use(std::uint32_t position) const { return use_[position]; }
  /// Whether the occupancy model covers the device of this lane: the trace records the device's
  /// SM resources and the launch configurations of its kernels.
  bool modelled(std::uint32_t lane) const;
  /// What may have held back SM work on `lane` that could start at `ready` but started at
  /// `start` (absolute trace times): SM work on another stream of the device that was running at
  /// `ready` and still ran at `start`. Where the occupancy model covers the device, only a
  /// kernel that fills the GPU counts, and one that began after `ready` counts too when `start`
  /// lies in its last kTailWaves waves: `ready` knows only the launch and the stream, and the
  /// task may first have waited for another stream (an event). The event position, or nullopt.
  std::optional<std::uint32_t> holder(std::uint32_t lane, TimeNs ready, TimeNs start) const;
  static constexpr double kTailWaves = 3.0;
  /// Whether any stream of this lane's device ran something in (from, to) (absolute trace times).
  bool device_busy_between(std::uint32_t lane, TimeNs from, TimeNs to) const;

 private:
  bool may_hold(std::uint32_t position, TimeNs ready, TimeNs start, bool model) const;
  void merge_device_busy();

  const BuildContext& ctx_;
  std::vector<std::vector<std::uint32_t>> by_lane_;
  std::vector<std::vector<TimeNs>> starts_;          // per lane: the starts of by_lane_, for searching
  std::vector<std::vector<std::uint32_t>> others_;   // per lane: the other GPU lanes of its device
  std::vector<SmUse> use_;                           // per event position (GPU activities)
  std::map<std::int64_t, bool> modelled_;            // device -> the occupancy model applies
  // device -> its recorded busy stretches (the union over its streams), by start
  std::map<std::int64_t, std::vector<std::pair<TimeNs, TimeNs>>> busy_;
};

}  // namespace daydream
