#include "unit/trace_builder.hpp"

#include <fmt/format.h>

namespace daydream::test {
namespace {
constexpr int kPid = 100;
}

KinetoJson& KinetoJson::complete(const std::string& cat, const std::string& name, double ts, double dur,
                                 const std::string& pid, const std::string& tid, const std::string& args) {
  events_.push_back(fmt::format(R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{{}}}}})",
                                cat, name, pid, tid, ts, dur, args));
  return *this;
}

KinetoJson& KinetoJson::cpu_op(std::string name, double ts, double dur, int tid) {
  return complete(legacy_ ? "Operator" : "cpu_op", name, ts, dur, std::to_string(kPid),
                  legacy_ ? fmt::format("\"{}\"", tid) : std::to_string(tid), "");
}

KinetoJson& KinetoJson::cpu_op(std::string name, double ts, double dur, int tid, const std::string& args) {
  return complete(legacy_ ? "Operator" : "cpu_op", name, ts, dur, std::to_string(kPid),
                  legacy_ ? fmt::format("\"{}\"", tid) : std::to_string(tid), args);
}

KinetoJson& KinetoJson::annotation(std::string name, double ts, double dur, int tid) {
  return complete(legacy_ ? "Operator" : "user_annotation", name, ts, dur, std::to_string(kPid),
                  legacy_ ? fmt::format("\"{}\"", tid) : std::to_string(tid), "");
}

KinetoJson& KinetoJson::runtime(std::string name, double ts, double dur, std::int64_t correlation, int tid) {
  const auto args = fmt::format(R"("cbid": 211, "correlation": {}, "{}": {})", correlation,
                                legacy_ ? "external id" : "External id", correlation);
  return complete(legacy_ ? "Runtime" : "cuda_runtime", name, ts, dur, std::to_string(kPid),
                  legacy_ ? fmt::format("\"{}\"", tid) : std::to_string(tid), args);
}

KinetoJson& KinetoJson::kernel(std::string name, double ts, double dur, std::int64_t correlation, int stream) {
  const auto args = fmt::format(R"("device": 0, "stream": {}, "correlation": {})", stream, correlation);
  return complete(legacy_ ? "Kernel" : "kernel", name, ts, dur, "0",
                  legacy_ ? fmt::format("\"stream {}\"", stream) : std::to_string(stream), args);
}

KinetoJson& KinetoJson::kernel(std::string name, double ts, double dur, std::int64_t correlation, int stream,
                               const LaunchArgs& launch) {
  const auto args = fmt::format(
      R"("device": 0, "stream": {}, "correlation": {}, "registers per thread": {}, "shared memory": {}, )"
      R"("grid": [{}, 1, 1], "block": [{}, 1, 1])",
      stream, correlation, launch.registers, launch.shared_memory, launch.grid, launch.block);
  return complete(legacy_ ? "Kernel" : "kernel", name, ts, dur, "0",
                  legacy_ ? fmt::format("\"stream {}\"", stream) : std::to_string(stream), args);
}

std::string v100_properties() {
  return R"({"id": 0, "name": "Test V100", "computeMajor": 7, "computeMinor": 0, "maxThreadsPerBlock": 1024, )"
         R"("maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, )"
         R"("warpSize": 32, "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 98304, "numSms": 80})";
}

KinetoJson& KinetoJson::device(std::string properties_json) {
  device_ = std::move(properties_json);
  return *this;
}

KinetoJson& KinetoJson::memcpy(std::string name, double ts, double dur, std::int64_t correlation, int stream,
                               std::int64_t bytes) {
  const auto args =
      fmt::format(R"("device": 0, "stream": {}, "correlation": {}, "bytes": {})", stream, correlation, bytes);
  return complete(legacy_ ? "Memcpy" : "gpu_memcpy", name, ts, dur, "0",
                  legacy_ ? fmt::format("\"stream {}\"", stream) : std::to_string(stream), args);
}

KinetoJson& KinetoJson::cuda_sync(std::string kind, double ts, double dur, std::int64_t correlation, int stream,
                                  int wait_on_stream, std::int64_t record_correlation) {
  const auto args = fmt::format(
      R"("cuda_sync_kind": "{}", "stream": {}, "correlation": {}, "device": 0, "wait_on_stream": {}, "wait_on_cuda_event_record_corr_id": {})",
      kind, stream, correlation, wait_on_stream, record_correlation);
  return complete("cuda_sync", kind, ts, dur, "0", std::to_string(stream), args);
}

KinetoJson& KinetoJson::raw(std::string event_json) {
  events_.push_back(std::move(event_json));
  return *this;
}

std::string KinetoJson::str() const {
  std::string out = R"({"schemaVersion": 1, "deviceProperties": [)" + device_ + R"(], "traceEvents": [)";
  for (std::size_t i = 0; i < events_.size(); ++i) out += (i ? ",\n" : "\n") + events_[i];
  return out + "\n]}\n";
}

}  // namespace daydream::test
