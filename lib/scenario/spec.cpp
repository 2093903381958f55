// Scenario specs ("name:key=value,..."), grids ("key=a|b") and scenario files.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <fstream>

#include "common/text.hpp"
#include "daydream/error.hpp"
#include "daydream/scenario.hpp"

namespace daydream {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (std::size_t begin = 0;;) {
    const auto cut = s.find(sep, begin);
    parts.push_back(trim(s.substr(begin, cut == std::string_view::npos ? std::string_view::npos : cut - begin)));
    if (cut == std::string_view::npos) return parts;
    begin = cut + 1;
  }
}

bool valid_word(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

}  // namespace

std::string ScenarioSpec::text() const {
  std::string out = name;
  for (std::size_t i = 0; i < args.size(); ++i) out += (i == 0 ? ":" : ",") + args[i].first + "=" + args[i].second;
  return out;
}

ScenarioSpec parse_scenario_spec(std::string_view text) {
  const std::string_view whole = trim(text);
  const auto colon = whole.find(':');
  ScenarioSpec spec;
  spec.name = std::string(trim(whole.substr(0, colon)));
  if (!valid_word(spec.name))
    throw Error(fmt::format("scenario spec '{}': expected name or name:key=value,... (name: letters, digits, _)", whole));
  if (colon == std::string_view::npos) return spec;
  const auto rest = whole.substr(colon + 1);
  if (trim(rest).empty()) return spec;
  for (std::string_view arg : split(rest, ',')) {
    const auto eq = arg.find('=');
    const auto key = trim(arg.substr(0, eq));
    if (eq == std::string_view::npos || !valid_word(key))  // an empty value is an empty text (amp:exclude=)
      throw Error(fmt::format("scenario spec '{}': argument '{}' is not key=value", whole, arg));
    for (const auto& [k, v] : spec.args)
      if (k == key) throw Error(fmt::format("scenario spec '{}': parameter '{}' given twice", whole, key));
    spec.args.emplace_back(std::string(key), std::string(trim(arg.substr(eq + 1))));
  }
  return spec;
}

std::vector<ScenarioSpec> expand_scenario_grid(std::string_view text, std::size_t max_specs) {
  const ScenarioSpec grid = parse_scenario_spec(text);
  // Counted before anything is built, saturating at one past max_specs (no product overflows).
  const std::size_t cap = max_specs == SIZE_MAX ? max_specs : max_specs + 1;
  std::size_t combinations = 1;
  for (const auto& arg : grid.args) {
    const std::size_t n = split(arg.second, '|').size();  // at least 1
    combinations = combinations > cap / n ? cap : std::min(combinations * n, cap);
  }
  if (combinations > max_specs)
    throw Error(fmt::format("scenario spec '{}': the grid has more than {} combinations, more than the sweep may "
                            "still expand (--max-specs or sweep(max_specs=), 100000 specs in all by default)",
                            trim(text), max_specs));
  std::vector<ScenarioSpec> out{ScenarioSpec{grid.name, {}}};
  for (const auto& [key, values] : grid.args) {
    std::vector<ScenarioSpec> next;
    const auto alternatives = split(values, '|');
    for (const auto& partial : out)
      for (std::string_view value : alternatives) {
        if (value.empty()) throw Error(fmt::format("scenario spec '{}': empty alternative in '{}'", trim(text), values));
        ScenarioSpec s = partial;
        s.args.emplace_back(key, std::string(value));
        next.push_back(std::move(s));
      }
    out = std::move(next);
  }
  return out;
}

std::vector<ScenarioSpec> read_scenario_file(const std::string& path, std::size_t max_specs) {
  std::ifstream in(path);
  if (!in) throw Error(path, Error::kNoEvent, "", "cannot open the scenario file");
  std::vector<ScenarioSpec> specs;
  std::string line;
  for (std::int64_t number = 1; std::getline(in, line); ++number) {
    const auto content = trim(line);
    if (content.empty() || content.front() == '#') continue;
    try {
      for (auto& s : expand_scenario_grid(content, max_specs - specs.size())) specs.push_back(std::move(s));
    } catch (const Error& e) {
      throw Error(fmt::format("{}: line {}: {}", path, number, e.what()));
    }
  }
  if (specs.empty()) throw Error(path, Error::kNoEvent, "", "the scenario file lists no scenario");
  return specs;
}

}  // namespace daydream
