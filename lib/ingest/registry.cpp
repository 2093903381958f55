// The reader registry: adding a trace format adds one line here.
#include "ingest/clock_alignment.hpp"
#include "daydream/error.hpp"
#include "daydream/ingest.hpp"
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

Trace load_trace(const std::filesystem::path& path) {
  const InputFile file = read_input_file(path);
  for (const auto& reader : trace_readers()) {
    if (!reader->can_read(file)) continue;
    Trace trace = reader->read(file);
    align_gpu_clocks(trace);
    check_trace_times(trace);
    return trace;
  }
#if DAYDREAM_HAVE_NSYS
  throw Error(path.string(), Error::kNoEvent, "", "unrecognised trace format (expected Kineto Chrome-trace JSON or an Nsight Systems SQLite export)");
#else
  throw Error(path.string(), Error::kNoEvent, "", "unrecognised trace format (expected Kineto Chrome-trace JSON; this build reads no Nsight Systems SQLite export: DAYDREAM_WITH_NSYS=OFF)");
#endif
}

}  // namespace daydream
