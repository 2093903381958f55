#pragma once
// Reader for the PyTorch profiler (Kineto) Chrome-trace JSON, legacy (PyTorch 1.8/1.9:
// `Operator`/`Runtime`/`Kernel`, flows `async`) and modern (`cpu_op`/`cuda_runtime`/`kernel`,
// flows `ac2g`, `fwdbwd`). See docs/formats.md.

#include <cstdint>
#include <optional>
#include <string>

#include "daydream/ingest.hpp"
#include "ingest/kineto/event_batches.hpp"
#include "ingest/kineto/event_stream.hpp"

namespace daydream {

class KinetoJsonReader final : public TraceReader {
 public:
  std::string_view format() const override { return "kineto-json"; }
  bool can_read(const InputFile& file) const override;
  Trace read(const InputFile& file) const override;
  std::optional<Trace> read_stream(InputStream& in) const override;
  bool streams_small_files() const override { return true; }
};

/// A Kineto trace read from a stream (the whole document never in memory): the same Trace as
/// KinetoJsonReader::read of the decoded file. Throws Error (file, event index, field).
Trace stream_kineto_json(InputStream& in, const StreamLimits& limits = {});

/// Where a document's batches are read (batch_reading.hpp): on two threads where the machine has
/// two and the document holds two batches or more (`automatic`), or as tests choose.
enum class BatchThreads : std::uint8_t { automatic, one, two };

/// A Kineto document parsed with its events cut into batches of about `batch_bytes`
/// (event_batches.hpp), as KinetoJsonReader reads and streams (tests choose small batches); its
/// bytes_read is `total_bytes`. nullopt where no cut parses: the reader then parses the document
/// in one piece, or streams it through the scanner.
std::optional<Trace> parse_kineto_batches(kineto::TextWindow& window, const std::string& name, std::size_t batch_bytes,
                                          std::uint64_t total_bytes, BatchThreads threads = BatchThreads::automatic);

/// A Kineto document parsed in one piece (simdjson's index over all of it): the Trace the batches
/// must give, and what names the problems of a document they do not parse.
Trace parse_kineto_whole(std::string json, const std::string& name);

}  // namespace daydream
