#pragma once
// Every field of two simulator tables (graph/graph_storage.hpp EdgeTable), for the tests of
// tables patched, reused or frozen against one built from every row.

#include <catch2/catch.hpp>

#include "graph/graph_storage.hpp"

namespace daydream::test {

inline void check_same_table(const EdgeTable& a, const EdgeTable& b) {
  CHECK(a.first == b.first);
  CHECK(a.target == b.target);
  CHECK(a.delay_ns == b.delay_ns);
  CHECK(a.start_to_start == b.start_to_start);
  CHECK(a.kind == b.kind);
  CHECK(a.in_first == b.in_first);
  REQUIRE(a.in_edges.size() == b.in_edges.size());
  for (std::size_t i = 0; i < a.in_edges.size(); ++i) {
    INFO("in-edge " << i);
    CHECK(a.in_edges[i].source == b.in_edges[i].source);
    CHECK(a.in_edges[i].delay_ns == b.in_edges[i].delay_ns);
    CHECK(a.in_edges[i].start_to_start == b.in_edges[i].start_to_start);
    CHECK(a.in_edges[i].kind == b.in_edges[i].kind);
  }
  CHECK(a.topological == b.topological);
  CHECK(a.first_unusable_delay == b.first_unusable_delay);
  CHECK(a.unchained_units == b.unchained_units);
  CHECK(a.launches == b.launches);
  CHECK(a.launching_units == b.launching_units);
}

}  // namespace daydream::test
