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

#include "daydream/graph.hpp"

namespace daydream {

/// Applies a layer file to a graph. Returns the number of tasks that received a layer. Throws
/// Error naming the file, the entry index and the field for malformed input.
std::size_t apply_layer_file(Graph& graph, const std::filesystem::path& path);

}  // namespace daydream
