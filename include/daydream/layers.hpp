#pragma once
/// @file layers.hpp
/// @brief Per-layer timestamps from a JSON layer file (see docs/formats.md):
///
///     {"layers": [{"name": "layer1.0.conv1", "phase": "forward",
///                  "start_us": 1623142623460172.5, "end_us": 1623142623460300, "thread": 25738}, ...]}
///
/// Times are microseconds on the trace's clock; `thread` is the CPU thread id; `phase` is
/// optional ("forward", "backward", "update"). Each live CPU task on that thread whose recorded
/// start lies in [start, end) takes the innermost such layer (the latest to start); GPU tasks take
/// the layer and phase of their launch call. Tasks outside every range keep what they had.

#include <filesystem>
#include <string>
#include <vector>

#include "daydream/graph.hpp"

namespace daydream {

/// GPU and CPU time per layer and phase, and how much of the GPU time some layer accounts for.
struct LayerRow {
  std::string layer;  ///< layer path ("model/block/conv1"), truncated to the report's depth
  Phase phase = Phase::unknown;
  TimeNs gpu_ns = 0;  ///< kernels, copies, memsets and collectives
  TimeNs cpu_ns = 0;  ///< CPU segments and CUDA calls
  std::int64_t kernels = 0;
};

struct LayerReport {
  std::string trace;
  int depth = 0;  ///< 0: full layer paths
  std::vector<LayerRow> rows;  ///< by GPU time, then CPU time, then name (tasks without a layer excluded)
  TimeNs gpu_total_ns = 0, gpu_attributed_ns = 0;
  TimeNs cpu_total_ns = 0, cpu_attributed_ns = 0;
  double gpu_coverage() const;  ///< attributed / total GPU time (1 when there is none)
  double cpu_coverage() const;
};

/// Aggregates the recorded durations of live tasks by layer (cut to `depth` path components
/// when depth > 0) and phase.
LayerReport make_layer_report(const Graph& graph, int depth = 0);
std::string to_json(const LayerReport& report);

/// Applies a layer file to a graph. Returns the number of tasks that received a layer. Throws
/// Error naming the file, the entry index and the field for malformed input.
std::size_t apply_layer_file(Graph& graph, const std::filesystem::path& path);

}  // namespace daydream
