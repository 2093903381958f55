#pragma once
/// @file ingest.hpp
/// @brief Reading traces: one reader per format behind one interface, chosen by a registry.
///
/// @code
///   daydream::Trace trace = daydream::load_trace("worker0.pt.trace.json.gz");
///   for (const auto& stat : trace.report.stats()) std::cout << stat.key << " " << stat.count << "\n";
/// @endcode

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daydream/trace.hpp"

namespace daydream {

/// The bytes of one input file, already decompressed (gzip is detected by its magic number).
struct InputFile {
  std::filesystem::path path;
  std::string contents;  ///< decoded bytes; readers may rely on SIMDJSON_PADDING spare capacity
};

/// The most bytes daydream reads from one file, after inflating (16 GiB; docs/formats.md, "Sizes
/// daydream accepts"). A gzip stream is inflated into a buffer that grows only as the data really
/// inflates: its trailer's size is believed no further than deflate's 1032:1 ratio allows.
inline constexpr std::size_t kMaxDecodedBytes = std::size_t{16} << 30;

/// Reads a file into memory, inflating gzip. Throws Error naming the file when it is missing,
/// unreadable, a truncated/corrupt gzip stream, or larger than kMaxDecodedBytes.
InputFile read_input_file(const std::filesystem::path& path);

class InputStream;  // a file's decoded bytes in blocks (lib/ingest/input_stream.hpp)

/// One trace format. Adding a format means one new reader and one line in the registry.
class TraceReader {
 public:
  virtual ~TraceReader() = default;
  /// Short name for messages ("kineto-json").
  virtual std::string_view format() const = 0;
  /// Whether this reader recognises the (decoded) file; must be cheap.
  virtual bool can_read(const InputFile& file) const = 0;
  /// Parses the whole file. Throws Error (file, event index, field) on malformed input.
  virtual Trace read(const InputFile& file) const = 0;
  /// The same Trace as read(), from a stream of the file's decoded bytes, so that a multi-GB
  /// trace never sits whole in memory; nullopt where the format has no streaming reader.
  virtual std::optional<Trace> read_stream(InputStream& /*in*/) const { return std::nullopt; }
  /// Whether a file too small to need streaming is streamed all the same, read (and inflated) on
  /// a second thread while the first parses (load_trace then reads it whole where read_stream
  /// gives nullopt, or where streaming it fails).
  virtual bool streams_small_files() const { return false; }
};

/// All readers, in the order they are tried.
const std::vector<std::unique_ptr<TraceReader>>& trace_readers();

/// Reads any supported trace (Kineto Chrome-trace JSON, plain or gzip-compressed).
Trace load_trace(const std::filesystem::path& path);

/// Parses a Kineto Chrome-trace JSON document held in memory (used by tests and tools).
Trace parse_kineto_json(std::string json, const std::string& name = "<memory>");

}  // namespace daydream
