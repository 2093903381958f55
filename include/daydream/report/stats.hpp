#pragma once
/// @file stats.hpp
/// @brief What a trace and its graph hold: task counts by kind, edge counts by type, the
/// calibrated latencies and the import report (`daydream stats`); the catalogue of the import
/// report (`daydream stats --catalogue`).

#include <array>
#include <string>
#include <vector>

#include "daydream/graph.hpp"

namespace daydream {

struct GraphStats {
  std::string trace;
  std::string format;
  std::int64_t events = 0;
  std::uint64_t bytes = 0;
  std::int64_t iterations = 0;
  std::array<std::int64_t, kTaskKindCount> tasks_by_kind{};
  std::array<std::int64_t, kEdgeTypeCount> edges_by_type{};
  std::int64_t inferred_edges = 0;
  std::int64_t cpu_threads = 0, gpu_streams = 0, comm_channels = 0;
  Calibration calibration;
  std::vector<ImportStat> report;
};

GraphStats make_stats(const Trace& trace, const Graph& graph);
std::string to_json(const GraphStats& stats);
/// Every stat the import report may hold (daydream/import_stats.hpp) as one JSON object:
/// {"catalogue": [{"key", "keyed", "suffix", "severity", "stage", "description"}, ...]}.
std::string catalogue_json();

}  // namespace daydream
