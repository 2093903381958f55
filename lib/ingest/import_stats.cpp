// The catalogue of the import report: the table of daydream/import_stats.hpp as data.
#include "daydream/import_stats.hpp"

namespace daydream {

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::info: return "info";
    case Severity::error: return "error";
    case Severity::data_loss: return "data_loss";
  }
  return "?";
}

namespace stats {

std::string_view to_string(Stage stage) {
  switch (stage) {
    case Stage::kineto: return "kineto";
    case Stage::nsys: return "nsys";
    case Stage::ingest: return "ingest";
    case Stage::graph: return "graph";
  }
  return "?";
}

const std::array<Stat, kNumStats>& catalogue() {
#define DAYDREAM_STAT_ROW(id, severity, stage, suffix, description) \
  Stat{id, #id, Severity::severity, Stage::stage, suffix, description},
  static constexpr std::array<Stat, kNumStats> kCatalogue{{DAYDREAM_IMPORT_STATS(DAYDREAM_STAT_ROW)}};
#undef DAYDREAM_STAT_ROW
  return kCatalogue;
}

std::string Stat::counter_key(std::string_view suffix_value) const {
  std::string out(key);
  if (keyed()) out.append(":").append(suffix_value);
  return out;
}

std::string Stat::describe(std::string_view detail) const {
  std::string out(description);
  const auto open = out.find('{');
  if (open != std::string::npos) out.replace(open, out.find('}', open) - open + 1, detail);
  return out;
}

std::string Stat::pattern() const { return counter_key(suffix); }

}  // namespace stats
}  // namespace daydream
