#pragma once
/// @file model.hpp
/// @brief Cost models that scenarios share: the alpha-beta link model of a collective
/// (latency + traffic / bandwidth), its least-squares fit to a trace's own collectives, the
/// traffic factor of each collective, and the bytes <-> bandwidth conversions. Models and
/// formats: docs/scenarios/ddp.md, docs/scenarios/network.md.
///
/// @code
///   // What the traced all-reduces say about the link, then a 25 MB all-reduce on 8 GPUs.
///   auto fit = daydream::fit_link({{1e6, 60'000}, {4e6, 180'000}, {16e6, 660'000}});
///   daydream::RingCost ring{fit->link, 8};
///   TimeNs ns = ring.allreduce_ns(25'000'000);
/// @endcode

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "daydream/trace.hpp"

namespace daydream {

// --- bytes and bandwidth ---

/// ns per byte of a link of `bytes_per_s` (bytes per second); 0 for an infinite link.
double ns_per_byte(double bytes_per_s);
/// Bytes per second of a link of `ns_per_byte`; infinity for 0.
double bytes_per_second(double ns_per_byte);
/// Time to move `bytes` at `bytes_per_s`, rounded to the nearest ns.
TimeNs transfer_ns(double bytes, double bytes_per_s);
/// Bytes of one element of a dtype as traces write it ("Float", "float", "c10::Half", "long int",
/// "BFloat16"); 0 when unknown.
std::int64_t dtype_element_bytes(std::string_view dtype);

// --- traffic ---

/// Bytes each GPU sends in a ring all-reduce of `bytes` over `ranks` GPUs: 2(n-1)/n * bytes;
/// 0 for one GPU.
double ring_traffic_bytes(std::int64_t ranks, double bytes);

/// Bytes one participant moves over its links in a collective of `bytes` among `ranks`:
/// all_reduce 2(n-1)/n, all_gather/reduce_scatter/all_to_all (n-1)/n, others (broadcast, send,
/// recv, reduce) 1 times `bytes`; 0 for one rank. Names compare without case and underscores.
double collective_traffic_bytes(std::string_view name, std::int64_t ranks, double bytes);

// --- the link ---

/// The alpha-beta model: a collective that moves `traffic` bytes per participant takes
/// latency + ns_per_byte * traffic.
struct LinkModel {
  double latency_ns = 0;   ///< alpha: fixed cost of one collective
  double ns_per_byte = 0;  ///< beta = 1e9 / link bandwidth (bytes/s); 0 for an infinite link
  double cost_ns(double traffic_bytes) const { return latency_ns + ns_per_byte * traffic_bytes; }
};

/// A fit that explains less of the variance of the measured durations than this does not stand in
/// for a default (LinkFit::usable).
inline constexpr double kMinFitRSquared = 0.5;

/// A LinkModel fitted by least squares, with how well it explains the samples.
struct LinkFit {
  LinkModel link;
  double rms_residual_ns = 0;  ///< root mean square of (measured - fitted)
  double r_squared = 0;        ///< share of the variance of the durations the fit explains
  std::size_t samples = 0;
  std::size_t distinct_sizes = 0;
  /// Whether the fit may replace a default latency and bandwidth: it explains the durations
  /// (r_squared >= kMinFitRSquared) with a latency >= 0 and a finite bandwidth (ns_per_byte > 0).
  /// Collectives whose times hardly depend on their sizes (NCCL kernels that wait for the slowest
  /// rank) fail it.
  bool usable() const { return r_squared >= kMinFitRSquared && link.latency_ns >= 0 && link.ns_per_byte > 0; }
};

/// Fits duration = latency + ns_per_byte * traffic to (traffic bytes, duration) samples by least
/// squares; nullopt with fewer than two distinct traffic sizes (a line needs two points).
std::optional<LinkFit> fit_link(const std::vector<std::pair<double, TimeNs>>& samples);

/// One all-reduce the trace measured: its size and its duration.
struct MeasuredCollective {
  std::int64_t bytes = 0;
  TimeNs duration_ns = 0;
};

/// fit_link over the ring traffic of all-reduces among `ranks` GPUs; nullopt when ranks < 2 (no
/// traffic to fit) or fewer than two distinct sizes.
std::optional<LinkFit> fit_ring(const std::vector<MeasuredCollective>& samples, std::int64_t ranks);

/// A ring all-reduce over `ranks` GPUs on `link`.
struct RingCost {
  LinkModel link;
  std::int64_t ranks = 1;  ///< n = machines * gpus
  /// 0 when ranks == 1 (one GPU has nothing to exchange); rounded to the nearest ns. Throws Error
  /// when the time is negative or does not fit in TimeNs.
  TimeNs allreduce_ns(std::int64_t bytes) const;
};

}  // namespace daydream
