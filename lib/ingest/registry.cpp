// The reader registry: adding a trace format adds one line here.
#include "ingest/clock_alignment.hpp"
#include <optional>
#include <string>

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

// The reader that recognises a file from its first 4 KiB decoded (as much as any can_read looks
// at), read from `in`, or null.
const TraceReader* reader_of_head(InputStream& in) {
  const std::filesystem::path& path = in.path();
  InputFile head{path, std::string(4096, '\0')};
  std::size_t n = 0;
  while (n < head.contents.size()) {
    const std::size_t got = in.read(head.contents.data() + n, head.contents.size() - n);
    if (got == 0) break;
    n += got;
  }
  head.contents.resize(n);
  for (const auto& reader : trace_readers())
    if (reader->can_read(head)) return reader.get();
  return nullptr;
}

// The trace `head` (a stream just opened) holds, read from the start by a stream of its own;
// nullopt where no reader streams it.
std::optional<Trace> stream_with(InputStream& head) {
  const TraceReader* reader = reader_of_head(head);
  if (!reader || (!head.large() && !reader->streams_small_files())) return std::nullopt;
  InputStream in(head.path());
  return reader->read_stream(in);
}

// A large trace (worth_streaming), read without ever holding the file in memory, or a small one
// its reader streams; nullopt for the whole-file path (which also names what it cannot read: a
// small file's problems, and a file that does not open, are left to it).
std::optional<Trace> load_streaming(const std::filesystem::path& path) {
  std::optional<InputStream> head;
  try {
    head.emplace(path);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (head->large()) return stream_with(*head);
  try {
    return stream_with(*head);
  } catch (const Error&) {
    return std::nullopt;
  }
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
