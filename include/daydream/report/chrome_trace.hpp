#pragma once
/// @file report/chrome_trace.hpp
/// @brief Simulated timelines as a Chrome trace (Perfetto, chrome://tracing): `daydream predict
/// --perfetto`, daydream.write_timeline.

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

struct ChromeTraceOptions {
  /// With two or more timelines of the same number of iterations: shift each iteration of each
  /// timeline so that iteration k starts at the same time in all of them (docs/cli.md, "--perfetto").
  bool align_iterations = true;
};

/// Writes the timelines as a Chrome trace JSON (opens in Perfetto and chrome://tracing), gzip
/// compressed when `path` ends in ".gz". One process per timeline: a track of its iterations, a
/// track of its critical path, then one thread per unit. CPU threads keep the trace's operator
/// nesting (each operator and annotation one slice around its CUDA calls); GPU tasks and calls are
/// slices with their original args (correlation, stream, bytes, grid and block, input shapes);
/// a flow arrow joins each launch call to its GPU task. Deterministic. Throws Error when a
/// timeline has no simulation of its graph or the file cannot be written.
void write_chrome_trace(const std::string& path, const std::vector<Timeline>& timelines,
                        const ChromeTraceOptions& options = {});

}  // namespace daydream
