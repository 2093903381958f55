#pragma once
// The per-task fields that reports of a simulation read (graph/graph_storage.hpp ReportColumns):
// the critical path's category, the layer and the iteration of each task, as columns a base graph
// builds once and its copies share, so that a sweep's report of each what-if reads a few bytes a
// task instead of its 80-byte record.
#include <memory>

#include "daydream/graph.hpp"
#include "graph/graph_storage.hpp"

namespace daydream {

/// The columns of `graph`, built on first use (a pass over every task) and shared by its copies
/// until one of them changes a field they hold.
std::shared_ptr<const ReportColumns> report_columns(const Graph& graph);

/// Where the graph has built its columns already: those; else null (a one-shot report reads the
/// records it needs rather than building columns for every task).
std::shared_ptr<const ReportColumns> report_columns_if_built(const Graph& graph);

}  // namespace daydream
