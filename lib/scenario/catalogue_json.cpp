// The scenario catalogue as JSON: what `daydream scenarios --json` prints and what
// daydream.scenarios() returns, from one writer.
#include <limits>

#include "daydream/scenario.hpp"
#include "report/json_writer.hpp"

namespace daydream {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// The default as a spec would give it: "auto" for a parameter the scenario works out itself,
/// the text of a text parameter, else the number in canonical units.
void write_default(JsonWriter& w, const ScenarioParam& p) {
  if (!p.automatic_means.empty()) w.value("auto");
  else if (p.kind == ParamKind::text) w.value(p.default_text);
  else w.number(p.default_value);
}

void write_param(JsonWriter& w, const ScenarioParam& p) {
  const bool text = p.kind == ParamKind::text;
  w.begin_object().key("name").value(p.name).key("kind").value(to_string(p.kind)).key("default");
  write_default(w, p);
  w.key("min").number(text ? -kInfinity : p.min);  // unbounded: null
  w.key("max").number(text ? kInfinity : p.max);
  w.key("min_exclusive").value(p.min_exclusive).key("unit").value(canonical_unit(p.kind));
  w.key("description").value(p.description).key("auto");
  if (p.automatic_means.empty()) w.null();
  else w.value(p.automatic_means);
  w.end_object();
}

}  // namespace

std::string scenarios_json(const ScenarioRegistry& registry) {
  JsonWriter w;
  w.begin_object().key("scenarios").begin_array();
  for (const auto& [name, s] : registry) {
    w.begin_object().key("name").value(name).key("summary").value(s.summary).key("params").begin_array();
    for (const auto& p : s.params) write_param(w, p);
    w.end_array().key("help").value(describe_scenario(s)).end_object();
  }
  return w.end_array().end_object().str();
}

}  // namespace daydream
