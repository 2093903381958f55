#pragma once
/// @file report/chrome_trace.hpp
/// @brief Simulated timelines as a Chrome trace (Perfetto, chrome://tracing): `daydream predict
/// --perfetto`.

#include <string>
#include <vector>

#include "daydream/graph.hpp"
#include "daydream/simulate.hpp"

namespace daydream {

/// One timeline for write_chrome_trace: a graph and its simulation, shown as one process.
struct Timeline {
  std::string label;  ///< "baseline", "predicted: amp"
  const Graph* graph = nullptr;
  const SimulationResult* result = nullptr;
};

/// Writes the timelines as a Chrome trace JSON (opens in Perfetto and chrome://tracing): one
/// process per timeline, one thread per unit, one complete event per task (args: id, kind,
/// phase, layer, critical). Deterministic. Throws Error when the file cannot be written.
void write_chrome_trace(const std::string& path, const std::vector<Timeline>& timelines);

}  // namespace daydream
