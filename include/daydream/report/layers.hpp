#pragma once
/// @file report/layers.hpp
/// @brief `daydream layers`: GPU and CPU time per layer and phase of a graph whose tasks carry
/// layers (from the trace's marks or a layer file, daydream/layers.hpp).

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

}  // namespace daydream
