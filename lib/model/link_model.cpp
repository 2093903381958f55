// The alpha-beta link model and its least-squares fit (include/daydream/model.hpp).
#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "common/checked.hpp"
#include "common/text.hpp"
#include "daydream/error.hpp"
#include "daydream/model.hpp"

namespace daydream {

double ns_per_byte(double bytes_per_s) { return std::isinf(bytes_per_s) ? 0 : 1e9 / bytes_per_s; }

double bytes_per_second(double ns_per_byte) {
  return ns_per_byte > 0 ? 1e9 / ns_per_byte : std::numeric_limits<double>::infinity();
}

TimeNs transfer_ns(double bytes, double bytes_per_s) {
  return checked::task_duration(bytes / bytes_per_s * 1e9,
                                [&] { return fmt::format("a copy of {:g} bytes at {:g} B/s", bytes, bytes_per_s); });
}

std::int64_t dtype_element_bytes(std::string_view dtype) {
  std::string d = text::squashed(dtype);
  d.erase(std::remove(d.begin(), d.end(), ' '), d.end());  // "long int" -> "longint"
  if (d == "double" || d == "long" || d == "longint" || d == "int64" || d == "c10::complex<float>") return 8;
  if (d == "float" || d == "int" || d == "int32" || d == "float32") return 4;
  if (d == "half" || d == "c10::half" || d == "bfloat16" || d == "c10::bfloat16" || d == "short" || d == "float16")
    return 2;
  if (d == "char" || d == "byte" || d == "bool" || d == "int8" || d == "uint8" || d == "unsignedchar" ||
      d == "signedchar")
    return 1;
  return 0;
}

// Plain arithmetic: RingCost::allreduce_ns calls it per all-reduce (p3 costs every slice).
double ring_traffic_bytes(std::int64_t ranks, double bytes) {
  if (ranks < 2) return 0.0;
  const double n = static_cast<double>(ranks);
  return 2.0 * (n - 1.0) / n * bytes;
}

double collective_traffic_bytes(std::string_view name, std::int64_t ranks, double bytes) {
  if (ranks < 2) return 0.0;
  const std::string key = text::squashed(name);
  const double n = static_cast<double>(ranks);
  if (key == "allreduce") return ring_traffic_bytes(ranks, bytes);
  if (key == "allgather" || key == "reducescatter" || key == "alltoall" || key == "alltoallv" ||
      key == "allgatherintocoalesced" || key == "reducescattertensor" || key == "allgatherbase")
    return (n - 1.0) / n * bytes;
  return bytes;
}

std::optional<LinkFit> fit_link(const std::vector<std::pair<double, TimeNs>>& samples) {
  std::set<double> sizes;
  for (const auto& s : samples) sizes.insert(s.first);
  if (sizes.size() < 2) return std::nullopt;
  // Columns: 1 and the traffic in MB (scaled so that both columns have similar magnitudes).
  const auto m = static_cast<Eigen::Index>(samples.size());
  Eigen::MatrixXd a(m, 2);
  Eigen::VectorXd y(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    const auto& [traffic, duration] = samples[static_cast<std::size_t>(i)];
    a(i, 0) = 1;
    a(i, 1) = traffic / 1e6;
    y(i) = static_cast<double>(duration);
  }
  const Eigen::Vector2d x = a.colPivHouseholderQr().solve(y);
  const double residual = (y - a * x).squaredNorm();
  const double spread = (y.array() - y.mean()).matrix().squaredNorm();
  LinkFit fit;
  fit.link = {x(0), x(1) / 1e6};
  fit.rms_residual_ns = std::sqrt(residual / static_cast<double>(m));
  fit.r_squared = spread > 0 ? 1 - residual / spread : 1;
  fit.samples = samples.size();
  fit.distinct_sizes = sizes.size();
  return fit;
}

std::optional<LinkFit> fit_ring(const std::vector<MeasuredCollective>& samples, std::int64_t ranks) {
  if (ranks < 2) return std::nullopt;
  std::vector<std::pair<double, TimeNs>> traffic;
  for (const auto& s : samples) traffic.emplace_back(ring_traffic_bytes(ranks, static_cast<double>(s.bytes)), s.duration_ns);
  return fit_link(traffic);
}

TimeNs RingCost::allreduce_ns(std::int64_t bytes) const {
  if (ranks <= 1) return 0;
  return checked::task_duration(link.cost_ns(ring_traffic_bytes(ranks, static_cast<double>(bytes))),
                                [&] { return fmt::format("all-reduce of {} bytes over {} GPUs", bytes, ranks); });
}

}  // namespace daydream
