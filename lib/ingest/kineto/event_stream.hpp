#pragma once
// Streaming a Chrome-trace JSON document: the decoded text passes through one buffer in blocks,
// and a scanner that only follows strings and nesting (no parsing) cuts it into batches of whole
// events, which simdjson then parses one batch at a time. Peak memory is a block plus a batch,
// not the file.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "ingest/input_stream.hpp"

namespace daydream {

struct StreamLimits {
  std::size_t block = std::size_t{8} << 20;   ///< decoded bytes read at a time
  std::size_t batch = std::size_t{16} << 20;  ///< events handed over once they reach this many bytes
};

/// What split_trace_events leaves for the parser besides the events.
struct StreamedDocument {
  std::string members;       ///< the other top-level members, as one JSON object text ("{}": none)
  bool has_events = false;   ///< a `traceEvents` array (or a top-level array) was there
};

/// Runs through the document of `in`, calling on_events(text) for each batch of events: the
/// elements of the top-level `traceEvents` array (or of a top-level array), in order, as one JSON
/// array text whose buffer keeps at least kInputPadding readable bytes after it. Throws Error
/// naming the file for a document that ends early, is no object or array, or has text after its
/// end; what lies inside an event or member is left for the JSON parser to check.
StreamedDocument split_trace_events(InputStream& in, const StreamLimits& limits,
                                    const std::function<void(std::string_view events)>& on_events);

}  // namespace daydream
