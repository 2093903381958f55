// Kineto events parsed in batches (ingest/kineto/event_batches.hpp): where the events open, where
// an event seems to end, and batches that give the Trace of the one-piece parse at every batch
// size, in memory, from a stream, or from a buffer being filled, or give way to it where a cut
// does not parse.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "daydream/error.hpp"
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "ingest/input_stream.hpp"
#include "ingest/kineto/kineto_reader.hpp"
#include "unit/gzip_helpers.hpp"
#include "unit/shared_traces.hpp"
#include "unit/trace_compare.hpp"

using namespace daydream;
using kineto::EventsArray;

namespace {

using Found = EventsArray::Found;

/// Both ways of reading batches: on the parse's thread, and on two threads (batch_reading.hpp).
constexpr BatchThreads kThreads[] = {BatchThreads::one, BatchThreads::two};

/// The batch parse of `json` held in memory.
std::optional<Trace> in_batches(const std::string& json, std::size_t batch_bytes,
                                BatchThreads threads = BatchThreads::automatic) {
  kineto::MemoryWindow window(json);
  return parse_kineto_batches(window, "<memory>", batch_bytes, json.size(), threads);
}

/// The same from a file, read `block` bytes at a time (on one thread: the window moves its text).
std::optional<Trace> streamed_in_batches(const std::filesystem::path& path, std::size_t block, std::size_t batch_bytes) {
  InputStream in(path);
  std::optional<Trace> trace;
  {
    kineto::StreamWindow window(in, block);
    trace = parse_kineto_batches(window, "<memory>", batch_bytes, in.size_hint());
  }
  if (trace) trace->bytes_read = in.decoded_bytes();  // as the reader counts a stream
  return trace;
}

/// The same from a small file, filled `step` bytes at a time into one buffer sized for `expected`.
std::optional<Trace> filled_in_batches(const std::filesystem::path& path, std::size_t expected, std::size_t step,
                                       std::size_t batch_bytes, BatchThreads threads = BatchThreads::automatic) {
  InputStream in(path);
  std::optional<Trace> trace;
  {
    kineto::FillingWindow window(in, expected, step);
    trace = parse_kineto_batches(window, "<memory>", batch_bytes, in.size_hint(), threads);
  }
  if (trace) trace->bytes_read = in.decoded_bytes();
  return trace;
}

std::filesystem::path write_file(const std::string& name, const std::string& bytes) {
  const auto path = std::filesystem::temp_directory_path() / ("daydream_batches_" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// Members before and after the events; strings that hold brackets, escaped quotes, and the very
// text between two events ("}, {"), which a cut can fall inside.
const std::string kDocument = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU \"A\" [x], {y}", "numSms": 80}, {"id": 1, "name": "B"}],
 "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm \\ [\"]}{", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"External id": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "a},  {b}, {c", "pid": 1, "tid": 1, "ts": 16, "dur": 1},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 11, "dur": 2, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm, \"tiled\" ]]", "pid": 0, "tid": 7, "ts": 14, "dur": 3, "args": {"stream": 7, "correlation": 7, "device": 0}},
  {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main: \"py\""}}
 ],
 "distributedInfo": {"rank": 0, "world_size": 1}, "traceName": "a,b]c}, {d"}
)";

}  // namespace

TEST_CASE("event batches: the events array opens at the top level only", "[ingest][batches]") {
  const auto open_of = [](std::string_view json) {
    const EventsArray events = kineto::find_events_array(json);
    REQUIRE(events.found == Found::yes);
    return events.open;
  };
  CHECK(open_of("  [{}]") == 2);
  CHECK(open_of(R"({"traceEvents": [])") == 16);
  // A "traceEvents" inside another member, in a string, or as a key's escaped text is passed by.
  const std::string nested = R"({"a": {"traceEvents": [1]}, "b": "\"traceEvents\": [", "c": [1, "x"], "d": -1.5e3, "traceEvents": [)";
  CHECK(open_of(nested) == nested.size() - 1);
  CHECK(open_of(kDocument) == kDocument.find("[\n  {"));
  // Text that ends on the way may still lead there; text that leads elsewhere never does.
  for (const char* unfinished : {"", " {", R"({"schemaVersion")", R"({"schemaVersion": 1)", R"({"a": "x\")", R"({"a": [{"b": 1}, )"})
    CHECK(kineto::find_events_array(unfinished).found == Found::not_yet);
  for (const char* none : {"42", R"({"schemaVersion": 1})", R"({"traceEvents": {}})", R"({"a" 1})", R"({"a": 1 "b": 2})", "{1: 2}"})
    CHECK(kineto::find_events_array(none).found == Found::no);
}

TEST_CASE("event batches: a cut is a ',' between a '}' and a '{', at or after where it is asked", "[ingest][batches]") {
  const std::string json = "[{\"a\": {}},\n  {\"b\": 1} , {\"c\": [{}, {}]}]";
  const std::size_t first = json.find(",\n");
  CHECK(kineto::find_event_boundary(json, 0) == first);
  CHECK(kineto::find_event_boundary(json, first) == first);
  const std::size_t second = json.find(" , ") + 1;
  CHECK(kineto::find_event_boundary(json, first + 1) == second);
  // The last looks the same from outside, inside an event: only the batch's parse tells them apart.
  CHECK(kineto::find_event_boundary(json, second + 1) == json.find("}, {}") + 1);
  CHECK(kineto::find_event_boundary(json, json.find("}, {}") + 2) == std::string::npos);
  CHECK(kineto::find_event_boundary(json, json.size() + 5) == std::string::npos);
}

TEST_CASE("event batches: every batch size gives the one-piece Trace, in memory and streamed", "[ingest][batches]") {
  const Trace whole = parse_kineto_whole(kDocument, "<memory>");
  REQUIRE(whole.events.size() == 4);
  for (std::size_t batch = 1; batch <= kDocument.size() + 1; ++batch) {
    for (const BatchThreads threads : kThreads) {
      CAPTURE(batch, threads == BatchThreads::two);
      const std::optional<Trace> batched = in_batches(kDocument, batch, threads);
      REQUIRE(batched.has_value());  // a cut inside a name's "}, {" is refused, and the next one taken
      test::require_same_trace(whole, *batched);
      CHECK(batched->bytes_read == kDocument.size());
    }
  }
  // From a stream, in blocks that end anywhere, plain or in two gzip members.
  const auto plain = write_file("document.json", kDocument);
  const auto two_members = write_file("document.json.gz", test::gzip_member(kDocument.substr(0, 301)) +
                                                              test::gzip_member(kDocument.substr(301)));
  for (const auto& path : {plain, two_members}) {
    for (std::size_t block : {1, 7, 64, 4096}) {
      for (std::size_t batch : {1, 50, 300, 100'000}) {
        CAPTURE(path.string(), block, batch);
        const std::optional<Trace> streamed = streamed_in_batches(path, block, batch);
        REQUIRE(streamed.has_value());
        test::require_same_trace(whole, *streamed);
        // One buffer filled as the parse goes: sized right, too small (it grows), or unsized.
        for (std::size_t expected : {kDocument.size(), kDocument.size() / 3, std::size_t{0}}) {
          for (const BatchThreads threads : kThreads) {
            CAPTURE(expected, threads == BatchThreads::two);
            const std::optional<Trace> filled = filled_in_batches(path, expected, block, batch, threads);
            REQUIRE(filled.has_value());
            test::require_same_trace(whole, *filled);
          }
        }
      }
    }
    std::filesystem::remove(path);
  }
  // A top-level array of events, without members.
  const std::size_t open = kDocument.find("[\n  {"), close = kDocument.find("\n ],");
  const std::string array = kDocument.substr(open, close - open) + "]";
  const Trace whole_array = parse_kineto_whole(array, "<memory>");
  for (std::size_t batch : {1, 100, 1000}) {
    for (const BatchThreads threads : kThreads) test::require_same_trace(whole_array, in_batches(array, batch, threads).value());
  }
}

TEST_CASE("event batches: what no cut parses is left to the one-piece parse, which names the problem",
          "[ingest][batches][bad]") {
  // An event whose args hold the text between two events outside strings, cut there at every try.
  std::string nested = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"x": [)";
  for (int i = 0; i < 40; ++i) nested += "{}, ";
  nested += R"({}]}}]})";
  for (const BatchThreads threads : kThreads) {
    CHECK_FALSE(in_batches(nested, 1, threads).has_value());
    CHECK(in_batches(nested, nested.size(), threads).has_value());  // no cut asked: one batch
  }
  CHECK(parse_kineto_json(nested).events.size() == 1);   // the reader parses it whole instead
  // Malformed documents: nothing from the batches; the one-piece parse's error names the event.
  const std::string bad_event = R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1}, {"ph": tru}]})";
  for (const std::string& bad : {bad_event, kDocument.substr(0, kDocument.size() / 2), kDocument + " {}",
                                 std::string(R"({"schemaVersion": 1})"), std::string("  ")}) {
    CAPTURE(bad);
    for (std::size_t batch : {1, 64, 100'000}) {
      for (const BatchThreads threads : kThreads) CHECK_FALSE(in_batches(bad, batch, threads).has_value());
    }
  }
  // A gzip stream cut short or followed by garbage: the filling window gives way, and load_trace's
  // whole-file path names the problem.
  for (const auto& [name, bytes] : {std::pair{"cut.json.gz", test::gzip_member(kDocument).substr(0, 200)},
                                    std::pair{"garbage.json.gz", test::gzip_member(kDocument) + "garbage!"}}) {
    const auto path = write_file(name, bytes);
    CAPTURE(name);
    for (const BatchThreads threads : kThreads) CHECK_FALSE(filled_in_batches(path, kDocument.size(), 64, 100, threads).has_value());
    CHECK_THROWS_WITH(load_trace(path), Catch::Contains(path.string()) && Catch::Contains("corrupt or truncated gzip stream"));
    std::filesystem::remove(path);
  }
  try {
    parse_kineto_json(bad_event, "bad.json");
    FAIL("accepted a malformed event");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("bad.json") && Catch::Contains("event #1"));
  }
}

TEST_CASE("event batches: every Kineto trace in ../shared gives the one-piece Trace in small batches",
          "[ingest][batches][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  std::size_t compared = 0;
  for (const char* folder : {"resnet50-v100-dataloader/workers0", "ddp-resnet-v100-rank0", "ddp-convnet-a100-nccl",
                             "cuda-sync-small", "dlrm-v100-8ranks/kineto", "resnet-2080ti-sgd/resnet_kineto.json.gz"}) {
    for (const auto& path : test::traces_at(folder)) {
      CAPTURE(path.string());
      InputFile file = read_input_file(path);
      const Trace whole = parse_kineto_whole(file.contents, "<memory>");
      for (const BatchThreads threads : kThreads) {
        const std::optional<Trace> batched = in_batches(file.contents, 4096, threads);
        REQUIRE(batched.has_value());
        test::require_same_trace(whole, *batched);
      }
      const std::optional<Trace> streamed = streamed_in_batches(path, 100'000, 65536);
      REQUIRE(streamed.has_value());
      test::require_same_trace(whole, *streamed);
      for (const BatchThreads threads : kThreads) {
        // Sized right, and too small: batches in flight keep reading the buffer the text outgrew.
        for (const std::size_t expected : {file.contents.size(), file.contents.size() / 5}) {
          const std::optional<Trace> filled = filled_in_batches(path, expected, 100'000, 65536, threads);
          REQUIRE(filled.has_value());
          test::require_same_trace(whole, *filled);
        }
      }
      ++compared;
    }
  }
  CHECK(compared >= 14);
}
