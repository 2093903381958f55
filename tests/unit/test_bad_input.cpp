// Bad input: every malformed file or event must raise daydream::Error naming the file (and,
// where it applies, the event index and the field), never crash; harmless oddities are counted
// in the import report instead of failing.
#include <catch2/catch.hpp>

#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "daydream/error.hpp"
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/simulate.hpp"
#include "unit/trace_builder.hpp"

namespace {

using daydream::Error;
using daydream::test::KinetoJson;

const std::filesystem::path kBad = std::filesystem::path(DAYDREAM_TEST_DATA) / "bad";

// Runs `action`, which must throw daydream::Error (any other exception or none fails the test).
std::optional<Error> error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e;
  } catch (const std::exception& e) {
    FAIL("expected daydream::Error, got another exception: " << e.what());
  } catch (...) {
    FAIL("expected daydream::Error, got a non-std exception");
  }
  FAIL("expected daydream::Error, nothing was thrown");
  return std::nullopt;
}

std::optional<Error> load_error(const std::filesystem::path& path) {
  return error_of([&] { (void)daydream::load_trace(path); });
}

std::optional<Error> parse_error(const std::string& json, const std::string& name) {
  return error_of([&] { (void)daydream::parse_kineto_json(json, name); });
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The message without its leading "file: " (so that a word in the file name proves nothing).
std::string problem_of(const Error& e) {
  std::string message = e.what();
  const std::string prefix = e.file() + ": ";
  if (!e.file().empty() && message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
  return message;
}

// The message names the file; no event or field is claimed for whole-file problems.
void check_file_error(const Error& e, const std::filesystem::path& path) {
  INFO("message: " << e.what());
  CHECK(e.file() == path.string());
  CHECK(contains(e.what(), path.string()));
  CHECK(e.event_index() == Error::kNoEvent);
}

// The message names the file, the event index and the field.
void check_event_error(const Error& e, const std::string& file, std::int64_t index, const std::string& field) {
  INFO("message: " << e.what());
  CHECK(e.file() == file);
  CHECK(contains(e.what(), file));
  CHECK(e.event_index() == index);
  CHECK(contains(e.what(), "event #" + std::to_string(index)));
  CHECK(e.field() == field);
  if (!field.empty()) CHECK(contains(e.what(), "\"" + field + "\""));
}

// An error about the document as a whole: it names the file and the field, and no event.
void check_document_error(const Error& e, const std::string& file, const std::string& field) {
  INFO("message: " << e.what());
  CHECK(e.file() == file);
  CHECK(contains(e.what(), file));
  CHECK(e.event_index() == Error::kNoEvent);
  CHECK(e.field() == field);
  CHECK(contains(e.what(), field));
}

// A valid little document: step annotation, launch call and its kernel (events 0..2).
KinetoJson valid_prefix() {
  KinetoJson json;
  json.annotation("ProfilerStep#1", 0, 100).runtime("cudaLaunchKernel", 10, 5, 1).kernel("k", 20, 30, 1);
  return json;
}

}  // namespace

// --- whole files -------------------------------------------------------------------------

TEST_CASE("bad input: the committed fixtures exist", "[bad_input]") {
  for (const char* name : {"truncated.json.gz", "corrupt_body.json.gz", "truncated.json", "garbage.json",
                           "not_json.txt", "empty.json", "empty.json.gz"}) {
    INFO(name);
    CHECK(std::filesystem::is_regular_file(kBad / name));
  }
}

TEST_CASE("bad input: truncated gzip", "[bad_input]") {
  const auto path = kBad / "truncated.json.gz";
  auto e = load_error(path);
  REQUIRE(e);
  check_file_error(*e, path);
  CHECK(contains(problem_of(*e), "gzip"));
  // read_input_file alone reports it too (the reader is never reached).
  auto raw = error_of([&] { (void)daydream::read_input_file(path); });
  REQUIRE(raw);
  CHECK(raw->file() == path.string());
}

TEST_CASE("bad input: gzip with a corrupt body", "[bad_input]") {
  const auto path = kBad / "corrupt_body.json.gz";
  auto e = load_error(path);
  REQUIRE(e);
  check_file_error(*e, path);
  CHECK(contains(problem_of(*e), "gzip"));
}

TEST_CASE("bad input: truncated JSON text", "[bad_input]") {
  const auto path = kBad / "truncated.json";
  auto e = load_error(path);
  REQUIRE(e);
  INFO("message: " << e->what());
  CHECK(e->file() == path.string());
  CHECK(contains(e->what(), path.string()));
  CHECK(contains(e->what(), "JSON"));
}

TEST_CASE("bad input: truncated JSON in memory, cut at every length", "[bad_input]") {
  // Cutting a valid document anywhere must give an Error (or, for cuts that happen to leave
  // valid JSON, nothing): never a crash or a foreign exception.
  const std::string full = valid_prefix().str();
  for (std::size_t cut = 0; cut + 3 < full.size(); ++cut) {
    const std::string part = full.substr(0, cut);
    try {
      (void)daydream::parse_kineto_json(part, "cut.json");
      FAIL("a document cut at byte " << cut << " parsed without error");
    } catch (const Error& e) {
      INFO("cut at byte " << cut << ": " << e.what());
      CHECK(e.file() == "cut.json");
      CHECK(contains(e.what(), "cut.json"));
    }
  }
}

TEST_CASE("bad input: garbage", "[bad_input]") {
  SECTION("JSON-looking garbage") {
    const auto path = kBad / "garbage.json";
    auto e = load_error(path);
    REQUIRE(e);
    CHECK(e->file() == path.string());
    CHECK(contains(e->what(), path.string()));
    CHECK(contains(e->what(), "invalid JSON"));
  }
  SECTION("plain text") {
    const auto path = kBad / "not_json.txt";
    auto e = load_error(path);
    REQUIRE(e);
    check_file_error(*e, path);
  }
  SECTION("binary bytes in memory") {
    static const char kBinary[] = "{\"traceEvents\": [\x01\xff\xfe\x00]}";
    auto e = parse_error(std::string(kBinary, sizeof kBinary - 1), "binary.json");
    REQUIRE(e);
    CHECK(e->file() == "binary.json");
    CHECK(contains(e->what(), "binary.json"));
  }
}

TEST_CASE("bad input: missing file", "[bad_input]") {
  const auto path = kBad / "no_such_file.json.gz";
  REQUIRE_FALSE(std::filesystem::exists(path));
  auto e = load_error(path);
  REQUIRE(e);
  check_file_error(*e, path);
  CHECK(contains(problem_of(*e), "no such file"));
}

TEST_CASE("bad input: a directory is not a trace", "[bad_input]") {
  auto e = load_error(kBad);
  REQUIRE(e);
  check_file_error(*e, kBad);
}

TEST_CASE("bad input: empty file", "[bad_input]") {
  for (const char* name : {"empty.json", "empty.json.gz"}) {
    const auto path = kBad / name;
    auto e = load_error(path);
    REQUIRE(e);
    check_file_error(*e, path);
    CHECK(contains(problem_of(*e), "empty"));
  }
  auto e = parse_error("", "empty-in-memory.json");
  REQUIRE(e);
  CHECK(e->file() == "empty-in-memory.json");
  CHECK(contains(e->what(), "empty-in-memory.json"));
  CHECK(contains(problem_of(*e), "empty"));
}

// --- document structure ------------------------------------------------------------------

TEST_CASE("bad input: missing traceEvents", "[bad_input]") {
  for (const char* json : {R"({"schemaVersion": 1, "deviceProperties": []})", "{}"}) {
    INFO(json);
    auto e = parse_error(json, "no_events.json");
    REQUIRE(e);
    check_document_error(*e, "no_events.json", "traceEvents");
  }
}

TEST_CASE("bad input: traceEvents is not an array", "[bad_input]") {
  for (const char* json : {R"({"traceEvents": {"ph": "X"}})", R"({"traceEvents": 42})", R"({"traceEvents": "x"})"}) {
    INFO(json);
    auto e = parse_error(json, "events_not_array.json");
    REQUIRE(e);
    check_document_error(*e, "events_not_array.json", "traceEvents");
  }
}

TEST_CASE("bad input: an event that is not an object", "[bad_input]") {
  for (const char* item : {"42", "\"kernel\"", "[1, 2]", "null"}) {
    INFO(item);
    auto e = parse_error(valid_prefix().raw(item).str(), "not_object.json");
    REQUIRE(e);
    check_event_error(*e, "not_object.json", 3, "");
    CHECK(contains(e->what(), "not a JSON object"));
  }
}

// --- events ------------------------------------------------------------------------------

TEST_CASE("bad input: a kernel without stream", "[bad_input]") {
  // No args.stream and no tid: the kernel cannot be put on a stream.
  const auto json =
      valid_prefix()
          .raw(R"({"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "ts": 60, "dur": 5, "args": {"device": 0, "correlation": 2}})")
          .str();
  auto e = parse_error(json, "no_stream.json");
  REQUIRE(e);
  check_event_error(*e, "no_stream.json", 3, "args.stream");

  // A kernel with a tid but no args.stream is fine (the tid names the stream).
  const auto ok =
      valid_prefix()
          .raw(R"({"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 60, "dur": 5, "args": {"device": 0, "correlation": 2}})")
          .str();
  CHECK_NOTHROW(daydream::parse_kineto_json(ok, "tid_stream.json"));
}

TEST_CASE("bad input: a kernel without ts", "[bad_input]") {
  const auto json = valid_prefix()
                        .raw(R"({"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "dur": 5, "args": {"stream": 7}})")
                        .str();
  auto e = parse_error(json, "no_ts.json");
  REQUIRE(e);
  check_event_error(*e, "no_ts.json", 3, "ts");
  CHECK(contains(e->what(), "missing"));
}

TEST_CASE("bad input: a kernel without dur", "[bad_input]") {
  const auto json = valid_prefix()
                        .raw(R"({"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 60, "args": {"stream": 7}})")
                        .str();
  auto e = parse_error(json, "no_dur.json");
  REQUIRE(e);
  check_event_error(*e, "no_dur.json", 3, "dur");
  CHECK(contains(e->what(), "missing"));
}

TEST_CASE("bad input: a negative dur", "[bad_input]") {
  const auto json = valid_prefix()
                        .raw(R"({"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 60, "dur": -2.5, "args": {"stream": 7}})")
                        .str();
  auto e = parse_error(json, "negative_dur.json");
  REQUIRE(e);
  check_event_error(*e, "negative_dur.json", 3, "dur");
  CHECK(contains(e->what(), "-2.5"));

  // The same on a CPU operator, at another index.
  KinetoJson cpu;
  cpu.annotation("ProfilerStep#1", 0, 100).cpu_op("aten::add", 10, -1);
  auto e2 = parse_error(cpu.str(), "negative_cpu_dur.json");
  REQUIRE(e2);
  check_event_error(*e2, "negative_cpu_dur.json", 1, "dur");
}

TEST_CASE("bad input: a non-numeric ts", "[bad_input]") {
  for (const char* ts : {R"("12.5")", "true", "null", "[1]", "{}"}) {
    INFO("ts: " << ts);
    const auto json = valid_prefix()
                          .raw(std::string(R"({"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": )") + ts +
                               R"(, "dur": 5, "args": {"stream": 7}})")
                          .str();
    auto e = parse_error(json, "text_ts.json");
    REQUIRE(e);
    check_event_error(*e, "text_ts.json", 3, "ts");
  }
}

TEST_CASE("bad input: other malformed event fields", "[bad_input]") {
  SECTION("a non-numeric dur") {
    auto e = parse_error(valid_prefix().raw(R"({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": "5"})").str(),
                         "text_dur.json");
    REQUIRE(e);
    check_event_error(*e, "text_dur.json", 3, "dur");
  }
  SECTION("a missing ph") {
    auto e = parse_error(valid_prefix().raw(R"({"cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 5})").str(),
                         "no_ph.json");
    REQUIRE(e);
    check_event_error(*e, "no_ph.json", 3, "ph");
  }
  SECTION("a ph that is not a string") {
    auto e = parse_error(valid_prefix().raw(R"({"ph": 88, "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 5})").str(),
                         "numeric_ph.json");
    REQUIRE(e);
    check_event_error(*e, "numeric_ph.json", 3, "ph");
  }
  SECTION("a CPU operator without tid") {
    auto e = parse_error(valid_prefix().raw(R"({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "ts": 1, "dur": 5})").str(),
                         "no_tid.json");
    REQUIRE(e);
    check_event_error(*e, "no_tid.json", 3, "tid");
  }
  SECTION("a kernel without name") {
    auto e = parse_error(valid_prefix().raw(R"({"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "ts": 60, "dur": 5})").str(),
                         "no_name.json");
    REQUIRE(e);
    check_event_error(*e, "no_name.json", 3, "name");
  }
  SECTION("a timestamp too large for nanoseconds") {
    auto e = parse_error(
        valid_prefix().raw(R"({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 99999999999999999999999, "dur": 5})").str(),
        "huge_ts.json");
    REQUIRE(e);
    check_event_error(*e, "huge_ts.json", 3, "ts");
  }
}

// --- oddities that are not errors ----------------------------------------------------------

TEST_CASE("bad input: oddities are counted in the import report, not fatal", "[bad_input]") {
  auto json = valid_prefix();
  json.raw(R"({"ph": "X", "cat": "foo", "name": "mystery", "pid": 100, "tid": 1, "ts": 40, "dur": 3})")    // 3
      .raw(R"({"ph": "X", "cat": "foo", "name": "mystery2", "pid": 100, "tid": 1, "ts": 45, "dur": 3})")   // 4
      .raw(R"({"ph": "X", "name": "no category", "pid": 100, "tid": 1, "ts": 50, "dur": 1})")              // 5
      .raw(R"({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 100, "tid": 1, "ts": 41, "s": "t"})")  // 6
      .raw(R"({"ph": "I", "name": "marker", "pid": 100, "tid": 1, "ts": 42})")                              // 7
      .raw(R"({"ph": "B", "cat": "cpu_op", "name": "begin", "pid": 100, "tid": 1, "ts": 43})")              // 8
      .raw(R"({"ph": "s", "cat": "ac2g", "name": "flow", "pid": 100, "tid": 1, "ts": 11})")                 // 9: no id
      .raw(R"({"ph": "X", "cat": "cpu_op", "name": "empty op", "pid": 100, "tid": 1, "ts": 60, "dur": 0})") // 10
      .raw(R"({"ph": "M", "name": "thread_name", "pid": 100, "tid": 1, "args": {"name": "main"}})");        // 11
  daydream::Trace trace;
  REQUIRE_NOTHROW(trace = daydream::parse_kineto_json(json.str(), "odd.json"));
  const auto& report = trace.report;
  CHECK(report.get("unknown_category:foo") == 2);
  CHECK(report.get("unknown_category:(none)") == 1);
  CHECK(report.get("instant_events") == 2);
  CHECK(report.get("unsupported_phase:B") == 1);
  CHECK(report.get("flow_without_id_or_ts") == 1);
  CHECK(report.get("zero_duration_events") == 1);
  CHECK(report.get("never_counted_key") == 0);
  // The first occurrence is remembered by its file index.
  for (const auto& stat : report.stats()) {
    INFO(stat.key);
    if (stat.key == "unknown_category:foo") CHECK(stat.first_event == 3);
    if (stat.key == "instant_events") CHECK(stat.first_event == 6);
    if (stat.key == "unsupported_phase:B") CHECK(stat.first_event == 8);
  }
  // Only the modelled events are kept: annotation, runtime, kernel and the zero-length op.
  CHECK(trace.events.size() == 4);

  // The rest of the pipeline accepts the trace and carries the report along.
  const auto graph = daydream::build_graph(trace);
  CHECK(graph.report().get("unknown_category:foo") == 2);
  const auto result = daydream::simulate(graph);
  CHECK(result.makespan_ns > 0);
}

TEST_CASE("bad input: unknown top-level keys and args are ignored", "[bad_input]") {
  const std::string json =
      R"({"schemaVersion": 1, "someTool": {"nested": [1, 2, {"x": null}]}, "traceEvents": [
           {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 5,
            "args": {"weird": [1, {"a": "b"}], "stream": "not a number", "Input Dims": [[1, 2]]}}
         ], "displayTimeUnit": "ms", "baseTimeNanoseconds": 1700000000000000000})";
  daydream::Trace trace;
  REQUIRE_NOTHROW(trace = daydream::parse_kineto_json(json, "extra_keys.json"));
  CHECK(trace.events.size() == 1);
}
