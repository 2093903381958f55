// The reader registry: adding a trace format adds one line here.
#include "ingest/clock_alignment.hpp"
#include <optional>
#include <string_view>

#include "daydream/error.hpp"
#include "daydream/ingest.hpp"
#include "ingest/input_stream.hpp"
#include "ingest/kineto/kineto_reader.hpp"
#if DAYDREAM_HAVE_NSYS
#include "ingest/nsys/nsys_reader.hpp"
#endif

namespace daydream {

const std::vector<std::unique_ptr<TraceReader>>& trace_readers() {
  static const std::vector<std::unique_ptr<TraceReader>> readers = [] {
    std::vector<std::unique_ptr<TraceReader>> list;
    list.push_back(std::make_unique<KinetoJsonReader>());
#if DAYDREAM_HAVE_NSYS  // DAYDREAM_WITH_NSYS=OFF builds without SQLite
    list.push_back(std::make_unique<NsysSqliteReader>());
#endif
    return list;
  }();
  return readers;
}

namespace {

enum class Streamed { no, kineto, nsys };

// What a large file's decoded bytes start with: a JSON object or array after white space (Kineto),
// or the SQLite magic (an Nsight export).
Streamed streamed_format(const std::filesystem::path& path) {
  InputStream in(path);
  char head[4096];
  const std::size_t n = in.read(head, sizeof head);
  if (std::string_view(head, n).substr(0, 16) == std::string_view("SQLite format 3\0", 16)) return Streamed::nsys;
  for (std::size_t i = 0; i < n; ++i) {
    if (head[i] == '{' || head[i] == '[') return Streamed::kineto;
    if (head[i] != ' ' && head[i] != '\n' && head[i] != '\r' && head[i] != '\t') return Streamed::no;
  }
  return Streamed::no;
}

// A large trace, read without ever holding the file in memory; nullopt for the whole-file path.
std::optional<Trace> load_streaming(const std::filesystem::path& path) {
  if (!worth_streaming(path)) return std::nullopt;
  const Streamed format = streamed_format(path);
  if (format == Streamed::no) return std::nullopt;
  InputStream in(path);
#if DAYDREAM_HAVE_NSYS
  if (format == Streamed::nsys) return read_nsys_stream(in);
#else
  if (format == Streamed::nsys) return std::nullopt;  // the whole-file path names what this build lacks
#endif
  return stream_kineto_json(in);
}

Trace checked(Trace trace) {
  align_gpu_clocks(trace);
  check_trace_times(trace);
  return trace;
}

}  // namespace

Trace load_trace(const std::filesystem::path& path) {
  if (auto streamed = load_streaming(path)) return checked(std::move(*streamed));
  const InputFile file = read_input_file(path);
  for (const auto& reader : trace_readers()) {
    if (!reader->can_read(file)) continue;
    return checked(reader->read(file));
  }
#if DAYDREAM_HAVE_NSYS
  throw Error(path.string(), Error::kNoEvent, "", "unrecognised trace format (expected Kineto Chrome-trace JSON or an Nsight Systems SQLite export)");
#else
  throw Error(path.string(), Error::kNoEvent, "", "unrecognised trace format (expected Kineto Chrome-trace JSON; this build reads no Nsight Systems SQLite export: DAYDREAM_WITH_NSYS=OFF)");
#endif
}

}  // namespace daydream
