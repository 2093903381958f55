// Streaming ingest (ingest/kineto/event_stream.hpp): the same Trace as reading the whole file, at
// any block and batch size, plain or gzip (one member or several); clear errors for documents that
// end early or carry more after their end.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "daydream/error.hpp"
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "ingest/input_stream.hpp"
#include "ingest/kineto/kineto_reader.hpp"
#include "unit/gzip_helpers.hpp"
#include "unit/shared_traces.hpp"
#include "unit/trace_compare.hpp"

using namespace daydream;
using test::gzip_member;

namespace {

std::filesystem::path write_file(const std::string& name, const std::string& bytes) {
  const auto path = std::filesystem::temp_directory_path() / ("daydream_stream_" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

Trace streamed(const std::filesystem::path& path, StreamLimits limits) {
  InputStream in(path);
  return stream_kineto_json(in, limits);
}

const std::vector<StreamLimits> kLimits = {{1, 1}, {7, 100}, {4099, 1000}, {65536, 300'000}, {}};

// Strings holding brackets, commas, colons, escaped quotes and backslashes; members before and
// after the events; an event split anywhere by the small blocks.
const std::string kTricky = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU \"A\" [x], {y}", "numSms": 80}],
 "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm \\ [\"]}{", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"External id": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 11, "dur": 2, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm, \"tiled\" ]]", "pid": 0, "tid": 7, "ts": 14, "dur": 3, "args": {"stream": 7, "correlation": 7, "device": 0}},
  {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main: \"py\""}}
 ],
 "distributedInfo": {"rank": 0, "world_size": 1}, "traceName": "a,b]c"}
)";

}  // namespace

TEST_CASE("stream ingest: tricky strings and members give the whole-file Trace at any block size", "[ingest][stream]") {
  const auto plain = write_file("tricky.json", kTricky);
  const Trace whole = parse_kineto_json(kTricky, plain.string());
  REQUIRE(whole.events.size() == 3);  // the metadata event names a thread, it is no event
  for (const StreamLimits& limits : kLimits) {
    CAPTURE(limits.block, limits.batch);
    const Trace stream = streamed(plain, limits);
    test::require_same_trace(whole, stream);
    CHECK(stream.metadata.devices == std::vector<std::string>{"GPU \"A\" [x], {y}"});
    CHECK(stream.metadata.world_size == 1);
  }
  // The same text as a top-level array of events (no members), and split over two gzip members.
  const std::string array = kTricky.substr(kTricky.find("[\n"), kTricky.find("],\n \"distributedInfo") - kTricky.find("[\n") + 1);
  const auto array_file = write_file("array.json", array);
  test::require_same_trace(parse_kineto_json(array, array_file.string()), streamed(array_file, {5, 10}));
  const auto two_members = write_file("tricky.json.gz", gzip_member(kTricky.substr(0, 333)) + gzip_member(kTricky.substr(333)));
  test::require_same_trace(whole, streamed(two_members, {3, 50}));
  for (const auto& path : {plain, array_file, two_members}) std::filesystem::remove(path);
}

TEST_CASE("stream ingest: every Kineto trace in ../shared gives the whole-file Trace", "[ingest][stream][real]") {
  SKIP_WITHOUT_SHARED_TRACES();
  std::size_t compared = 0;
  for (const char* folder : {"resnet50-v100-dataloader/workers0", "ddp-resnet-v100-rank0", "ddp-convnet-a100-nccl",
                             "cuda-sync-small", "dlrm-v100-8ranks/kineto", "resnet-2080ti-sgd/resnet_kineto.json.gz"}) {
    for (const auto& path : test::traces_at(folder)) {
      CAPTURE(path.string());
      const Trace whole = load_trace(path);  // these are small: read whole
      test::require_same_trace(whole, streamed(path, {4099, 100'000}));
      ++compared;
    }
  }
  CHECK(compared >= 14);
}

TEST_CASE("stream ingest: documents that end early or go on after their end are refused, naming the file",
          "[ingest][stream][bad]") {
  const auto refused = [](const std::string& name, const std::string& bytes, const std::string& expected) {
    const auto path = write_file(name, bytes);
    CAPTURE(name);
    for (const StreamLimits& limits : {StreamLimits{3, 10}, StreamLimits{}}) {
      try {
        streamed(path, limits);
        FAIL("accepted " << name);
      } catch (const Error& e) {
        CHECK_THAT(e.what(), Catch::Contains(path.string()) && Catch::Contains(expected));
      }
    }
    std::filesystem::remove(path);
  };
  refused("cut.json", kTricky.substr(0, kTricky.size() / 2), "truncated JSON");
  refused("cut_in_string.json", R"({"traceEvents": [{"name": "ab)", "truncated JSON");
  refused("after.json", kTricky + " {}", "text after the end");
  refused("blank.json", "  \n ", "empty document");
  refused("scalar.json", "42", "not a JSON object or array");
  refused("extra_close.json", R"({"traceEvents": []}})", "unbalanced brackets");
  refused("bad_event.json", R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1}, {"ph": tru}]})",
          "event #1");
  refused("no_events.json", R"({"schemaVersion": 1})", "traceEvents");
  refused("cut.json.gz", gzip_member(kTricky).substr(0, 100), "corrupt or truncated gzip stream");
  refused("garbage_after_member.json.gz", gzip_member(kTricky) + "garbage!", "corrupt or truncated gzip stream");
}

TEST_CASE("stream ingest: the Kineto reader's read_stream, which load_trace calls for a large file, gives the whole-file Trace",
          "[ingest][stream]") {
  const auto path = write_file("tricky_reader.json.gz", gzip_member(kTricky));
  InputStream in(path);
  const std::optional<Trace> via_reader = KinetoJsonReader().read_stream(in);
  REQUIRE(via_reader.has_value());
  test::require_same_trace(load_trace(path), *via_reader);
  std::filesystem::remove(path);
}

TEST_CASE("stream ingest: load_trace streams only large JSON files", "[ingest][stream]") {
  const auto small = write_file("small.json", kTricky);
  CHECK_FALSE(worth_streaming(small));
  std::filesystem::remove(small);
  CHECK_FALSE(worth_streaming("/no/such/file.json"));
}
