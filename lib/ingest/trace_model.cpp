// Names of the trace model's enums and the import report's counters.
#include <fmt/format.h>

#include <optional>
#include <stdexcept>

#include "daydream/trace.hpp"

namespace daydream {

std::string_view to_string(EventKind kind) {
  switch (kind) {
    case EventKind::cpu_op: return "cpu_op";
    case EventKind::user_annotation: return "user_annotation";
    case EventKind::python_function: return "python_function";
    case EventKind::runtime: return "cuda_runtime";
    case EventKind::driver: return "cuda_driver";
    case EventKind::kernel: return "kernel";
    case EventKind::memcpy: return "gpu_memcpy";
    case EventKind::memset: return "gpu_memset";
    case EventKind::cuda_sync: return "cuda_sync";
    case EventKind::gpu_annotation: return "gpu_user_annotation";
  }
  return "?";
}

bool is_gpu_activity(EventKind kind) {
  return kind == EventKind::kernel || kind == EventKind::memcpy || kind == EventKind::memset;
}
bool is_cpu_range(EventKind kind) {
  return kind == EventKind::cpu_op || kind == EventKind::user_annotation || kind == EventKind::python_function;
}
bool is_api_call(EventKind kind) { return kind == EventKind::runtime || kind == EventKind::driver; }

namespace {

using Part = std::optional<std::string_view>;

// A keyed stat takes a suffix and a detailed one a detail (either may be empty text); others
// take none. A mismatch would make a key or a description that the catalogue does not list.
void check_use(const stats::Stat& s, const Part& suffix, const Part& detail) {
  const auto wrong = [&](bool expected, std::string_view what) {
    return std::logic_error(fmt::format("import stat '{}' counted {} {}", s.key, expected ? "without" : "with", what));
  };
  if (s.keyed() != suffix.has_value()) throw wrong(s.keyed(), "a suffix");
  if (s.detailed() != detail.has_value()) throw wrong(s.detailed(), "a detail");
}

void add_time(ImportStat& stat, TimeNs duration_ns) {
  ++stat.count;
  stat.total_ns += duration_ns;
}

}  // namespace

ImportStat& ImportReport::counter(stats::Id id, Part suffix, Part detail, std::int64_t event) {
  const stats::Stat& s = stats::stat(id);
  check_use(s, suffix, detail);
  if (!suffix && unkeyed_[id] != 0) return stats_[unkeyed_[id] - 1];
  std::string key = s.counter_key(suffix.value_or(""));
  ImportStat* found = find(key);
  ImportStat& stat = found ? *found : insert({std::move(key), s.severity, s.describe(detail.value_or("")), 0, event});
  if (!suffix) unkeyed_[id] = static_cast<std::uint32_t>(&stat - stats_.data()) + 1;
  return stat;
}

ImportStat* ImportReport::find(const std::string& key) {
  const auto it = index_.find(key);
  return it == index_.end() ? nullptr : &stats_[it->second];
}

ImportStat& ImportReport::insert(ImportStat stat) {
  index_.emplace(stat.key, stats_.size());
  stats_.push_back(std::move(stat));
  return stats_.back();
}

void ImportReport::count(stats::Id id, std::int64_t event) { ++counter(id, std::nullopt, std::nullopt, event).count; }

void ImportReport::count(stats::Id id, std::string_view suffix, std::int64_t event) {
  ++counter(id, suffix, std::nullopt, event).count;
}

void ImportReport::count(stats::Id id, stats::Detail detail, std::int64_t event) {
  ++counter(id, std::nullopt, detail.text, event).count;
}

void ImportReport::count_time(stats::Id id, TimeNs duration_ns, std::int64_t event) {
  add_time(counter(id, std::nullopt, std::nullopt, event), duration_ns);
}

void ImportReport::count_time(stats::Id id, std::string_view suffix, stats::Detail detail, TimeNs duration_ns,
                              std::int64_t event) {
  add_time(counter(id, suffix, detail.text, event), duration_ns);
}

void ImportReport::add(const ImportStat& stat) {
  ImportStat* found = find(stat.key);
  (found ? *found : insert({stat.key, stat.severity, stat.description, 0, kNone})).count += stat.count;
}

TimeNs ImportReport::total_ns(std::string_view key) const {
  auto it = index_.find(std::string(key));
  return it == index_.end() ? 0 : stats_[it->second].total_ns;
}

std::int64_t ImportReport::get(std::string_view key) const {
  auto it = index_.find(std::string(key));
  return it == index_.end() ? 0 : stats_[it->second].count;
}

}  // namespace daydream
