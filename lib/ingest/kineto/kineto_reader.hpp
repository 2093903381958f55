#pragma once
// Reader for the PyTorch profiler (Kineto) Chrome-trace JSON, legacy (PyTorch 1.8/1.9:
// `Operator`/`Runtime`/`Kernel`, flows `async`) and modern (`cpu_op`/`cuda_runtime`/`kernel`,
// flows `ac2g`, `fwdbwd`). See docs/formats.md.

#include "daydream/ingest.hpp"
#include "ingest/kineto/event_stream.hpp"

namespace daydream {

class KinetoJsonReader final : public TraceReader {
 public:
  std::string_view format() const override { return "kineto-json"; }
  bool can_read(const InputFile& file) const override;
  Trace read(const InputFile& file) const override;
  std::optional<Trace> read_stream(InputStream& in) const override;
};

/// A Kineto trace read from a stream (the whole document never in memory): the same Trace as
/// KinetoJsonReader::read of the decoded file. Throws Error (file, event index, field).
Trace stream_kineto_json(InputStream& in, const StreamLimits& limits = {});

}  // namespace daydream
