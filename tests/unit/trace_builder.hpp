#pragma once
// Writes small Kineto Chrome-trace JSON documents for tests, in the modern dialect
// (cpu_op/cuda_runtime/kernel, integer stream tids) or the legacy PyTorch 1.8/1.9 one
// (Operator/Runtime/Kernel, "stream 7" tids, "external id"). Times are in microseconds.

#include <cstdint>
#include <string>
#include <vector>

namespace daydream::test {

/// A kernel's launch configuration, as Kineto writes it in the kernel's args.
struct LaunchArgs {
  int grid = 1;             ///< blocks (gridX; gridY = gridZ = 1)
  int block = 128;          ///< threads per block (blockX)
  int registers = 32;       ///< registers per thread
  int shared_memory = 0;    ///< bytes per block
};

/// The `deviceProperties` entry of a GPU like a V100 (80 SMs, 2048 threads, 64K registers and
/// 96 KiB of shared memory per SM, compute capability 7.0).
std::string v100_properties();

class KinetoJson {
 public:
  explicit KinetoJson(bool legacy = false) : legacy_(legacy) {}

  KinetoJson& cpu_op(std::string name, double ts, double dur, int tid = 1);
  /// A cpu_op with args (the inside of the args object: R"("Input Dims": [[2, 3]])").
  KinetoJson& cpu_op(std::string name, double ts, double dur, int tid, const std::string& args);
  KinetoJson& annotation(std::string name, double ts, double dur, int tid = 1);  // ProfilerStep#N etc.
  KinetoJson& runtime(std::string name, double ts, double dur, std::int64_t correlation, int tid = 1);
  KinetoJson& kernel(std::string name, double ts, double dur, std::int64_t correlation, int stream = 7);
  /// A kernel whose args record its launch configuration.
  KinetoJson& kernel(std::string name, double ts, double dur, std::int64_t correlation, int stream,
                     const LaunchArgs& launch);
  KinetoJson& memcpy(std::string name, double ts, double dur, std::int64_t correlation, int stream = 7,
                     std::int64_t bytes = 4096);
  /// A modern `cuda_sync` record. stream/wait_on_stream/record_correlation: -1 when absent.
  KinetoJson& cuda_sync(std::string kind, double ts, double dur, std::int64_t correlation, int stream,
                        int wait_on_stream = -1, std::int64_t record_correlation = -1);
  /// Any raw event object (for bad-input tests).
  KinetoJson& raw(std::string event_json);
  /// The header's `deviceProperties` entry (default: `{"id": 0, "name": "Test GPU"}`).
  KinetoJson& device(std::string properties_json);

  std::string str() const;

 private:
  KinetoJson& complete(const std::string& cat, const std::string& name, double ts, double dur, const std::string& pid,
                       const std::string& tid, const std::string& args);
  bool legacy_;
  std::vector<std::string> events_;
  std::string device_ = R"({"id": 0, "name": "Test GPU"})";
};

}  // namespace daydream::test
