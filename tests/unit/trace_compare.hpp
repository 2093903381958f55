#pragma once
// Two Traces of one document compared by what the rest of daydream reads from them: the graph
// built from each (tasks, edges, units, iterations: its fingerprint), the strings, the metadata,
// the import report and the byte count. For the ingest paths that must agree (whole file, stream,
// batches).
#include <catch2/catch.hpp>

#include "daydream/graph.hpp"
#include "daydream/trace.hpp"

namespace daydream::test {

inline void require_same_trace(const Trace& expected, const Trace& actual) {
  REQUIRE(actual.events.size() == expected.events.size());
  REQUIRE(actual.flows.size() == expected.flows.size());
  REQUIRE(actual.strings == expected.strings);
  CHECK(actual.bytes_read == expected.bytes_read);
  CHECK(actual.metadata.devices == expected.metadata.devices);
  CHECK(actual.metadata.rank == expected.metadata.rank);
  CHECK(actual.metadata.world_size == expected.metadata.world_size);
  CHECK(actual.metadata.format == expected.metadata.format);
  CHECK(actual.metadata.schema_version == expected.metadata.schema_version);
  CHECK(actual.report.stats().size() == expected.report.stats().size());
  CHECK(build_graph(actual).fingerprint() == build_graph(expected).fingerprint());
}

}  // namespace daydream::test
