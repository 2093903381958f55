// GPU clock alignment: some profiles (seen in Nsight Systems exports of multi-node jobs) record
// a device's activity on a clock hundreds of milliseconds away from the CPU's. Every dependency
// between the CPU and the GPU would then be contradicted, so the offset is estimated and removed
// before the graph is built.
//
// Causality bounds the offset d = GPU clock - CPU clock of each device:
//  - a GPU task starts after its launch call starts: d <= min(task start - call start) = hi;
//  - a copy call that blocks the host (cuda::copy_blocks_host: device-to-pageable-host, or any
//    synchronous copy to the host or from pinned memory) returns after the copy ends:
//    d >= max(copy end - call end) = lo.
// When 0 lies in [lo, hi] (within a tolerance), the clocks agree and nothing changes. Otherwise the
// device's GPU events are shifted by the middle of [lo, hi] (both bounds known and consistent) or
// by the one bound known; bounds that exclude each other (lo > hi) are no offset, and nothing moves.
#include "ingest/clock_alignment.hpp"

#include "common/cuda_api.hpp"
#include "common/nearly_sorted.hpp"
#include "daydream/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace daydream {
namespace {

constexpr TimeNs kTolerance = 2'000;  // ns: timestamp jitter that is not a clock offset

struct OffsetBounds {
  std::optional<TimeNs> lo, hi;
};

/// (correlation id, position) of the events of a kind, by id and then position: ids grow with time,
/// so the sort sees a few runs (a hash map of the calls was most of aligning the clocks).
template <class Kind>
std::vector<std::pair<std::int64_t, std::uint32_t>> by_correlation(const Trace& trace, Kind of_kind) {
  std::vector<std::pair<std::int64_t, std::uint32_t>> events;
  for (std::uint32_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (of_kind(e.kind) && e.correlation != kNone) events.emplace_back(e.correlation, i);
  }
  sort_nearly_sorted(events);
  return events;
}

/// The bounds of each device's offset, from its GPU tasks whose launch call (the first call of
/// their correlation id) is in the trace: the two lists by id, walked together.
std::map<std::int64_t, OffsetBounds> offset_bounds(const Trace& trace) {
  const auto calls = by_correlation(trace, is_api_call);
  const auto tasks = by_correlation(trace, is_gpu_activity);
  std::map<std::int64_t, OffsetBounds> bounds;
  auto call = calls.begin();
  for (const auto& [correlation, position] : tasks) {
    while (call != calls.end() && call->first < correlation) ++call;
    if (call == calls.end()) break;
    if (call->first != correlation) continue;
    const TraceEvent& e = trace.events[position];
    const TraceEvent& launch_call = trace.events[call->second];
    OffsetBounds& b = bounds[trace.lanes[e.lane].process];
    const TimeNs launch = e.start_ns - launch_call.start_ns;
    b.hi = b.hi ? std::min(*b.hi, launch) : launch;
    if (e.kind == EventKind::memcpy && cuda::copy_blocks_host(trace.name_of(launch_call), trace.name_of(e))) {
      const TimeNs ret = e.end_ns() - launch_call.end_ns();
      b.lo = b.lo ? std::max(*b.lo, ret) : ret;
    }
  }
  return bounds;
}

/// The correction for one device: 0 when its clock agrees with the CPU's.
TimeNs offset_of(const OffsetBounds& b) {
  const bool too_early = b.hi && *b.hi < -kTolerance;  // tasks starting before their launch
  const bool too_late = b.lo && *b.lo > kTolerance;    // blocking copies returning before their copy ended
  if (!too_early && !too_late) return 0;
  // A day or more apart is no clock offset but contradicting records (the builder counts them).
  const auto beyond_a_day = [](const std::optional<TimeNs>& bound) {
    return bound && (*bound > kMaxTaskDurationNs || *bound < -kMaxTaskDurationNs);
  };
  if (beyond_a_day(b.lo) || beyond_a_day(b.hi)) return 0;
  // Bounds that exclude each other are not a clock offset (a copy call that did not block, say):
  // the graph builder counts such contradictions one by one instead.
  if (b.lo && b.hi) return *b.lo <= *b.hi ? *b.lo + (*b.hi - *b.lo) / 2 : 0;
  return too_early ? *b.hi : *b.lo;
}

}  // namespace

void align_gpu_clocks(Trace& trace) {
  for (const auto& [device, bounds] : offset_bounds(trace)) {
    const TimeNs offset = offset_of(bounds);
    if (offset == 0) continue;
    for (TraceEvent& e : trace.events) {
      const Lane& lane = trace.lanes[e.lane];
      if (lane.kind == LaneKind::gpu_stream && lane.process == device && e.kind != EventKind::cuda_sync)
        e.start_ns -= offset;
    }
    trace.report.count_time(stats::gpu_clock_aligned, fmt::format("device {}", device),
                            stats::Detail{fmt::format("{:.3f}", static_cast<double>(offset) / 1e6)},
                            offset < 0 ? -offset : offset);
  }
}

/// The times every reader left are within what daydream accepts (trace.hpp), also after the GPU
/// clocks moved, and the trace spans at most kMaxTraceTimeNs: every difference of two of its
/// times then fits in 64 bits, and every time relative to its first one is at most 2^62 ns.
void check_trace_times(const Trace& trace) {
  TimeNs first = kMaxTraceTimeNs, last = -kMaxTraceTimeNs;
  for (const TraceEvent& e : trace.events) {
    if (!is_trace_time(e.start_ns) || !is_trace_time(e.end_ns()))
      throw Error(trace.path, e.source_index, "ts",
                  fmt::format("{} ns (on {}, after aligning its clock) is outside the times daydream accepts "
                              "(|t| < 2^62 ns)", e.start_ns, trace.lanes[e.lane].name));
    first = std::min(first, e.start_ns);
    last = std::max(last, e.end_ns());
  }
  if (last - first > kMaxTraceTimeNs)
    throw Error(trace.path, Error::kNoEvent, "",
                fmt::format("its events span {} ns, more than the 2^62 ns (146 years) daydream accepts", last - first));
}

}  // namespace daydream
