// The catalogue of the import report (daydream/import_stats.hpp): a well-formed table, the report
// that counts by it, and docs/formats.md ("Import report") listing exactly its stats.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "daydream/import_stats.hpp"
#include "daydream/trace.hpp"

using namespace daydream;

namespace {

bool snake_case(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key)
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  return true;
}

/// The rows of the table under "## Import report" in docs/formats.md: the key cell (unquoted)
/// and the severity cell.
std::map<std::string, std::string> documented_stats() {
  std::ifstream in(DAYDREAM_DOCS_DIR "/formats.md");
  REQUIRE(in);
  std::map<std::string, std::string> rows;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## Import report";
    if (!inside || line.rfind("| `", 0) != 0) continue;
    const auto key_end = line.find("` |", 3);
    REQUIRE(key_end != std::string::npos);
    const auto severity_end = line.find(" |", key_end + 3);
    const std::string key = line.substr(3, key_end - 3);
    CHECK(rows.count(key) == 0);  // each stat once
    rows[key] = line.substr(key_end + 4, severity_end - key_end - 4);
  }
  return rows;
}

}  // namespace

TEST_CASE("the catalogue: ids in order, unique snake_case keys, descriptions, suffixes and slots", "[ingest][report]") {
  std::set<std::string_view> keys;
  for (std::size_t i = 0; i < stats::kNumStats; ++i) {
    const stats::Stat& s = stats::catalogue()[i];
    INFO(s.key);
    CHECK(s.id == i);
    CHECK(snake_case(s.key));
    CHECK(keys.insert(s.key).second);
    CHECK_FALSE(s.description.empty());
    CHECK(s.suffix.find(':') == std::string_view::npos);  // the key ends at the first ':'
    // At most one slot, closed.
    const auto open = s.description.find('{');
    if (open != std::string_view::npos) {
      CHECK(s.description.find('}', open) != std::string_view::npos);
      CHECK(s.description.find('{', open + 1) == std::string_view::npos);
    }
  }
  CHECK(stats::stat(stats::cycle_edges_dropped).key == "cycle_edges_dropped");
  CHECK(stats::stat(stats::unsupported_phase).pattern() == "unsupported_phase:<ph>");
}

TEST_CASE("docs/formats.md lists every stat of the catalogue, and no other", "[ingest][report][docs]") {
  std::map<std::string, std::string> catalogue;
  for (const stats::Stat& s : stats::catalogue()) catalogue[s.pattern()] = std::string(to_string(s.severity));
  const auto documented = documented_stats();
  for (const auto& [key, severity] : catalogue) {
    INFO("catalogue stat " << key << " in docs/formats.md, \"Import report\"");
    const auto row = documented.find(key);
    CHECK(row != documented.end());
    if (row != documented.end()) CHECK(row->second == severity);
  }
  for (const auto& [key, severity] : documented) {
    INFO("docs/formats.md lists " << key);
    CHECK(catalogue.count(key) == 1);
  }
}

TEST_CASE("ImportReport counts by the catalogue: keyed stats, details, misuse, merging", "[ingest][report]") {
  ImportReport r;
  r.count(stats::unsupported_phase, "B", 4);
  r.count(stats::unsupported_phase, "E", 5);
  r.count(stats::unsupported_phase, "B", 6);
  r.count(stats::cycle_edges_dropped, stats::Detail{"first edge"}, 8);
  r.count(stats::cycle_edges_dropped, stats::Detail{"second edge"}, 9);
  REQUIRE(r.stats().size() == 3);
  CHECK(r.get("unsupported_phase:B") == 2);
  CHECK(r.stats()[0].first_event == 4);
  CHECK(r.stats()[0].severity == Severity::data_loss);
  CHECK(r.get("unsupported_phase:E") == 1);
  // The first occurrence's detail fills the slot.
  CHECK(r.stats()[2].description == "edges removed to break a cycle the rules closed (first: first edge)");
  CHECK(r.get("cycle_edges_dropped") == 2);

  // A suffix or a detail where the catalogue has none, or none where it has one: a bug of the caller.
  CHECK_THROWS_AS(r.count(stats::unsupported_phase), std::logic_error);
  CHECK_THROWS_AS(r.count(stats::instant_events, "X"), std::logic_error);
  CHECK_THROWS_AS(r.count(stats::cycle_edges_dropped), std::logic_error);
  CHECK_THROWS_AS(r.count(stats::instant_events, stats::Detail{"x"}), std::logic_error);

  // Merging counts: another report's counters add up, its first events are not carried over.
  ImportReport job;
  job.count(stats::instant_events, 1);
  for (const ImportStat& s : r.stats()) job.add(s);
  job.add(r.stats()[0]);
  REQUIRE(job.stats().size() == 4);
  CHECK(job.get("unsupported_phase:B") == 4);
  CHECK(job.stats()[1].first_event == kNone);
  CHECK(job.stats()[3].description == r.stats()[2].description);

  // Counting on after a merge, and in a copy: still one counter per stat, each report its own.
  job.count(stats::cycle_edges_dropped, stats::Detail{"third edge"});
  job.count(stats::instant_events);
  CHECK(job.get("cycle_edges_dropped") == 3);
  ImportReport copy = job;
  copy.count(stats::instant_events);
  CHECK(copy.get("instant_events") == 3);
  CHECK(job.get("instant_events") == 2);
  CHECK(copy.stats().size() == job.stats().size());
}
