// Names of the trace model's enums and the import report's counters.
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

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::info: return "info";
    case Severity::error: return "error";
    case Severity::data_loss: return "data_loss";
  }
  return "?";
}

void ImportReport::count(std::string_view key, Severity severity, std::string_view description,
                         std::int64_t event, std::int64_t n) {
  auto [it, inserted] = index_.try_emplace(std::string(key), stats_.size());
  if (inserted) stats_.push_back({std::string(key), severity, std::string(description), 0, event});
  stats_[it->second].count += n;
}

void ImportReport::count_time(std::string_view key, Severity severity, std::string_view description,
                              TimeNs duration_ns, std::int64_t event) {
  count(key, severity, description, event);
  stats_[index_.find(std::string(key))->second].total_ns += duration_ns;
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
