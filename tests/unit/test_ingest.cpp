// Ingest of both Kineto dialects into the trace model: kinds, lanes, exact nanoseconds.
#include <catch2/catch.hpp>

#include "common/text.hpp"
#include "daydream/ingest.hpp"
#include "unit/trace_builder.hpp"

using daydream::EventKind;
using daydream::LaneKind;
using daydream::test::KinetoJson;

namespace {

const daydream::TraceEvent& find(const daydream::Trace& trace, std::string_view name) {
  for (const auto& e : trace.events)
    if (trace.name_of(e) == name) return e;
  FAIL("no event named " << name);
  throw;
}

}  // namespace

TEST_CASE("microsecond tokens become exact nanoseconds", "[ingest]") {
  using daydream::text::microseconds_to_ns;
  CHECK(microseconds_to_ns("1712195495519695.8") == 1712195495519695800);
  CHECK(microseconds_to_ns("63.813") == 63813);
  CHECK(microseconds_to_ns("12") == 12000);
  CHECK(microseconds_to_ns("0.0004") == 0);
  CHECK(microseconds_to_ns("0.0005") == 1);
  CHECK(microseconds_to_ns("-3.5") == -3500);
  CHECK(microseconds_to_ns("1.5e3") == 1500000);
  CHECK(microseconds_to_ns("2E-3") == 2);
  CHECK(microseconds_to_ns("1.e2") == 100000);  // a form only the exponent path reads
  CHECK(microseconds_to_ns("12 \n") == 12000);
  CHECK_FALSE(microseconds_to_ns("99999999999999999999").has_value());  // overflow, no exponent
  // Eight digits at a time, then one by one: every split of the digits reads the same number.
  CHECK(microseconds_to_ns("12345678") == 12345678000);
  CHECK(microseconds_to_ns("123456789.25") == 123456789250);
  CHECK(microseconds_to_ns("1234567812345678.0005") == 1234567812345678001);
  CHECK(microseconds_to_ns("00000000000000000000000042") == 42000);
  CHECK_FALSE(microseconds_to_ns("1234567a").has_value());
  CHECK_FALSE(microseconds_to_ns("12345678/").has_value());
  CHECK_FALSE(microseconds_to_ns("1234:678").has_value());
  // The largest whole microseconds whose nanoseconds fit in 64 bits, and the first past them.
  CHECK(microseconds_to_ns("9223372036854774.999") == 9223372036854774999);
  CHECK_FALSE(microseconds_to_ns("9223372036854775").has_value());
  CHECK(microseconds_to_ns("-9223372036854774") == -9223372036854774000);
  CHECK_FALSE(microseconds_to_ns("1e").has_value());
  CHECK_FALSE(microseconds_to_ns("1.").has_value());
  CHECK_FALSE(microseconds_to_ns("abc").has_value());
  CHECK_FALSE(microseconds_to_ns("").has_value());
}

TEST_CASE("modern Kineto events map to kinds, lanes and nanosecond times", "[ingest]") {
  const auto json = KinetoJson()
                        .annotation("ProfilerStep#1", 1000.5, 100)
                        .cpu_op("aten::mm", 1010.25, 30)
                        .runtime("cudaLaunchKernel", 1020, 5.125, 42)
                        .kernel("sgemm", 1030, 10, 42, 7)
                        .memcpy("Memcpy DtoH (Device -> Pageable)", 1050, 2, 43, 20)
                        .cuda_sync("Event Sync", 1060, 1, 44, -1, 20, 41)
                        .str();
  const auto trace = daydream::parse_kineto_json(json, "modern.json");
  REQUIRE(trace.events.size() == 6);
  CHECK(trace.metadata.format == "kineto-json");
  CHECK(trace.metadata.devices == std::vector<std::string>{"Test GPU"});
  CHECK(find(trace, "ProfilerStep#1").kind == EventKind::user_annotation);
  CHECK(find(trace, "ProfilerStep#1").start_ns == 1000500);
  CHECK(find(trace, "aten::mm").start_ns == 1010250);
  const auto& launch = find(trace, "cudaLaunchKernel");
  CHECK(launch.kind == EventKind::runtime);
  CHECK(launch.duration_ns == 5125);
  CHECK(launch.correlation == 42);
  const auto& kernel = find(trace, "sgemm");
  CHECK(kernel.kind == EventKind::kernel);
  CHECK(trace.lanes[kernel.lane].kind == LaneKind::gpu_stream);
  CHECK(trace.lanes[kernel.lane].thread == 7);
  CHECK(trace.lanes[kernel.lane].name == "GPU 0 stream 7");
  CHECK(trace.lanes[find(trace, "Memcpy DtoH (Device -> Pageable)").lane].thread == 20);
  CHECK(find(trace, "Memcpy DtoH (Device -> Pageable)").bytes == 4096);
  const auto& sync = find(trace, "Event Sync");
  CHECK(sync.kind == EventKind::cuda_sync);
  CHECK(sync.sync_kind == daydream::SyncKind::event_sync);
  CHECK(sync.wait_on_stream == 20);
  CHECK(sync.wait_record_correlation == 41);
  CHECK(trace.lanes[launch.lane].kind == LaneKind::cpu_thread);
  CHECK(trace.lanes[launch.lane].process == 100);
  CHECK(trace.lanes[launch.lane].thread == 1);
}

TEST_CASE("legacy PyTorch 1.8/1.9 events read like modern ones", "[ingest]") {
  const auto json = KinetoJson(/*legacy=*/true)
                        .annotation("ProfilerStep#3", 0, 100)
                        .runtime("cudaLaunchKernel", 10, 5, 7)
                        .kernel("volta_sgemm", 20, 30, 7, 7)
                        .str();
  const auto trace = daydream::parse_kineto_json(json, "legacy.json");
  CHECK(trace.metadata.format == "kineto-json-legacy");
  CHECK(find(trace, "ProfilerStep#3").kind == EventKind::cpu_op);  // legacy writes steps as Operator
  const auto& kernel = find(trace, "volta_sgemm");
  CHECK(kernel.kind == EventKind::kernel);
  CHECK(trace.lanes[kernel.lane].thread == 7);  // from "stream 7" and args.stream
  CHECK(find(trace, "cudaLaunchKernel").external_id == 7);  // legacy "external id"
  CHECK(trace.lanes[find(trace, "cudaLaunchKernel").lane].thread == 1);  // tid "1" as a string
}

TEST_CASE("a bare event list, flows, metadata and collectives", "[ingest]") {
  const std::string json = R"([
    {"ph": "M", "name": "thread_name", "pid": 5, "tid": 9, "args": {"name": "autograd thread"}},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 5, "tid": 9, "ts": 1, "dur": 2,
     "args": {"Collective name": "all_reduce", "In msg nelems": 1024, "Out msg nelems": 1024, "Group size": 8,
              "dtype": "Float", "Process Group Name": "0"}},
    {"ph": "s", "cat": "fwdbwd", "name": "fwdbwd", "id": 3, "pid": 5, "tid": 9, "ts": 1},
    {"ph": "f", "cat": "fwdbwd", "name": "fwdbwd", "id": 3, "pid": 5, "tid": 9, "ts": 2, "bp": "e"},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 5, "tid": 9, "ts": 1}
  ])";
  const auto trace = daydream::parse_kineto_json(json, "list.json");
  REQUIRE(trace.events.size() == 1);
  CHECK(trace.lanes[trace.events[0].lane].name == "autograd thread");
  REQUIRE(trace.events[0].collective == 0);
  CHECK(trace.collectives[0].name == "all_reduce");
  CHECK(trace.collectives[0].in_elements == 1024);
  CHECK(trace.collectives[0].group_size == 8);
  REQUIRE(trace.flows.size() == 2);
  CHECK(trace.flows[0].is_start);
  CHECK_FALSE(trace.flows[1].is_start);
  CHECK(trace.strings[trace.flows[0].category] == "fwdbwd");
  CHECK(trace.report.get("instant_events") == 1);
}
