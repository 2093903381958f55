// The scenario registry, parameter checking (units, ranges) and ScenarioParams.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <initializer_list>

#include "common/checked.hpp"
#include "daydream/error.hpp"
#include "daydream/scenario.hpp"

namespace daydream {

std::string_view to_string(ParamKind kind) {
  switch (kind) {
    case ParamKind::number: return "number";
    case ParamKind::integer: return "integer";
    case ParamKind::bandwidth: return "bandwidth";
    case ParamKind::bytes: return "bytes";
    case ParamKind::duration: return "duration";
    case ParamKind::text: return "text";
  }
  return "?";
}

// --- ScenarioParams ---

double ScenarioParams::number(std::string_view name) const {
  const auto it = numbers_.find(name);
  if (it == numbers_.end()) throw Error(fmt::format("scenario parameter '{}' is not defined", name));
  return it->second;
}

std::int64_t ScenarioParams::integer(std::string_view name) const {
  const double value = number(name);
  const auto rounded = checked::round_integer(value);
  if (!rounded) throw Error(fmt::format("scenario parameter '{}' = {:g} is not a whole number daydream can hold", name, value));
  return *rounded;
}

const std::string& ScenarioParams::text(std::string_view name) const {
  const auto it = texts_.find(name);
  if (it == texts_.end()) throw Error(fmt::format("scenario parameter '{}' is not a defined text parameter", name));
  return it->second;
}

bool ScenarioParams::given(std::string_view name) const {
  const auto it = given_.find(name);
  return it != given_.end() && it->second;
}

void ScenarioParams::set(const std::string& name, double value, bool given) {
  numbers_[name] = value;
  given_[name] = given;
}

void ScenarioParams::set_text(const std::string& name, std::string value, bool given) {
  texts_[name] = std::move(value);
  given_[name] = given;
}

// --- registry ---

namespace {

/// "10Gbps" -> (10, "gbps"); the unit is lower-cased.
std::pair<double, std::string> number_and_unit(std::string_view text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "inf" || lower == "infinity") return {std::numeric_limits<double>::infinity(), ""};
  double value = 0;
  const auto [end, ec] = std::from_chars(lower.data(), lower.data() + lower.size(), value);
  if (ec != std::errc() || end == lower.data()) throw std::invalid_argument("not a number");
  std::string unit(lower, static_cast<std::size_t>(end - lower.data()));
  if (unit.rfind("inf", 0) == 0) throw std::invalid_argument("not a number");
  return {value, unit};
}

double unit_factor(ParamKind kind, const std::string& unit) {
  struct Unit { const char* name; double factor; };
  static constexpr Unit bandwidth[] = {{"", 1e9 / 8}, {"gbps", 1e9 / 8}, {"gbit/s", 1e9 / 8}, {"mbps", 1e6 / 8},
                                       {"kbps", 1e3 / 8}, {"tbps", 1e12 / 8}, {"gb/s", 1e9}, {"mb/s", 1e6}, {"gib/s", 1073741824.0},
                                       {"b/s", 1}};
  static constexpr Unit bytes[] = {{"", 1}, {"b", 1}, {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9},
                                   {"tb", 1e12}, {"pb", 1e15}, {"kib", 0x1p10}, {"mib", 0x1p20}, {"gib", 0x1p30},
                                   {"tib", 0x1p40}, {"pib", 0x1p50}};
  static constexpr Unit duration[] = {{"", 1e3}, {"us", 1e3}, {"ns", 1}, {"ms", 1e6}, {"s", 1e9}};
  static constexpr Unit none[] = {{"", 1}, {"x", 1}};
  auto find = [&](const auto& table) {
    for (const auto& u : table)
      if (unit == u.name) return u.factor;
    throw std::invalid_argument("unknown unit");
  };
  switch (kind) {
    case ParamKind::bandwidth: return find(bandwidth);
    case ParamKind::bytes: return find(bytes);
    case ParamKind::duration: return find(duration);
    default: return find(none);
  }
}

std::string unit_help(ParamKind kind) {
  switch (kind) {
    case ParamKind::bandwidth: return "e.g. 10Gbps, 100Mbps, 12GB/s, 12.5e9B/s (a bare number is Gbps)";
    case ParamKind::bytes: return "e.g. 25MB, 4MiB, 512KB (a bare number is bytes)";
    case ParamKind::duration: return "e.g. 5us, 1.5ms, 200ns (a bare number is us)";
    case ParamKind::integer: return "a whole number";
    case ParamKind::text: return "a word";
    default: return "a number";
  }
}

/// `value` in the largest of `units` (name, size; largest first) it reaches, "{:g}" and the name
/// with no space, as specs write values (so a listed default can be pasted back).
template <std::size_t N>
std::string in_unit(double value, const std::pair<const char*, double> (&units)[N]) {
  for (const auto& [name, size] : units)
    if (std::abs(value) >= size || size == units[N - 1].second) return fmt::format("{:g}{}", value / size, name);
  return fmt::format("{:g}", value);
}

/// A value in human units: bandwidths in bits per second, sizes in binary units where they are
/// whole ones (25MiB) else decimal ones, durations from ns to s.
std::string show(const ScenarioParam& p, double value) {
  static constexpr std::pair<const char*, double> bits[] = {
      {"Tbps", 1e12 / 8}, {"Gbps", 1e9 / 8}, {"Mbps", 1e6 / 8}, {"kbps", 1e3 / 8}};
  static constexpr std::pair<const char*, double> binary[] = {
      {"PiB", 0x1p50}, {"TiB", 0x1p40}, {"GiB", 0x1p30}, {"MiB", 0x1p20}, {"KiB", 0x1p10}, {"B", 1}};
  static constexpr std::pair<const char*, double> decimal[] = {{"PB", 1e15}, {"TB", 1e12}, {"GB", 1e9},
                                                               {"MB", 1e6},  {"KB", 1e3},  {"B", 1}};
  static constexpr std::pair<const char*, double> times[] = {{"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}};
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  switch (p.kind) {
    case ParamKind::bandwidth: return value == 0 ? "0Gbps" : in_unit(value, bits);
    case ParamKind::bytes:
      return value >= 1024 && std::fmod(value, 1024.0) == 0 ? in_unit(value, binary) : in_unit(value, decimal);
    case ParamKind::duration: return in_unit(value, times);
    case ParamKind::integer: return fmt::format("{:.0f}", value);
    default: return fmt::format("{:g}", value);
  }
}

std::string range_text(const ScenarioParam& p) {
  const bool low = std::isfinite(p.min), high = std::isfinite(p.max);
  if (!low && !high) return "any";
  if (low && !high) return (p.min_exclusive ? "> " : ">= ") + show(p, p.min);
  if (!low) return "<= " + show(p, p.max);
  return fmt::format("{}{}..{}", p.min_exclusive ? "> " : "", show(p, p.min), show(p, p.max));
}

std::string default_text(const ScenarioParam& p) {
  if (!p.automatic_means.empty()) return "auto: " + p.automatic_means;
  if (p.kind == ParamKind::text) return p.default_text.empty() ? "none" : p.default_text;
  return show(p, p.default_value);
}

std::string param_list(const Scenario& s) {
  if (s.params.empty()) return "(none)";
  std::string list;
  for (const auto& p : s.params)
    list += fmt::format("\n  {} ({}, {}; default {})", p.name, to_string(p.kind), range_text(p), default_text(p));
  return list;
}

double parse_value(const Scenario& s, const ScenarioParam& p, const std::string& text) {
  double value = 0;
  try {
    const auto [number, unit] = number_and_unit(text);
    value = number * unit_factor(p.kind, unit);
  } catch (const std::invalid_argument&) {
    throw Error(fmt::format("scenario '{}': parameter '{}' = '{}' is not a valid {} ({})", s.name, p.name, text,
                            to_string(p.kind), unit_help(p.kind)));
  }
  const bool integral = p.kind != ParamKind::integer || (std::isfinite(value) && value == std::floor(value));
  const bool in_range = !std::isnan(value) && (p.min_exclusive ? value > p.min : value >= p.min) && value <= p.max;
  if (!integral || !in_range)
    throw Error(fmt::format("scenario '{}': parameter '{}' = '{}' is out of range (valid: {}{})", s.name, p.name, text,
                            range_text(p), p.kind == ParamKind::integer ? ", whole numbers" : ""));
  return value;
}

/// Narrows a parameter's range to what the models can hold: durations to one day (the longest a
/// task may last), sizes and whole numbers to 2^53 (exact in a double, far past any real count).
void cap_range(ScenarioParam& p) {
  const double limit = p.kind == ParamKind::duration ? static_cast<double>(kMaxTaskDurationNs)
                       : p.kind == ParamKind::bytes || p.kind == ParamKind::integer ? 0x1p53
                                                                                    : INFINITY;
  p.max = std::min(p.max, limit);
  p.min = std::max(p.min, -limit);
}

}  // namespace

namespace {

void check_split(const std::string& name, const std::vector<ScenarioParam>& params, const ScenarioSplit& split) {
  if (!split.restructure || !split.retime)
    throw Error(fmt::format("scenario '{}': a split needs both restructure and retime", name));
  if (!split.prepare != !split.complete)
    throw Error(fmt::format("scenario '{}': a split restructures in two parts with both prepare and complete", name));
  const auto check_names = [&](const std::vector<std::string>& names, std::string_view what) {
    for (const std::string& named : names)
      if (std::none_of(params.begin(), params.end(), [&](const ScenarioParam& p) { return p.name == named; }))
        throw Error(fmt::format("scenario '{}': {} parameter '{}' is not one of its parameters", name, what, named));
  };
  check_names(split.retimed, "retimed");
  check_names(split.completed, "completed");
}

/// Every parameter's name and whether it was given, and the values of those not in `skipped`.
std::string key_of(const Scenario& scenario, const ScenarioParams& params,
                   std::initializer_list<const std::vector<std::string>*> skipped) {
  std::string key = scenario.name;
  for (const ScenarioParam& p : scenario.params) {
    key += fmt::format("\n{}{}", p.name, params.given(p.name) ? "!" : "");  // given or defaulted
    if (std::any_of(skipped.begin(), skipped.end(), [&](const std::vector<std::string>* names) {
          return std::find(names->begin(), names->end(), p.name) != names->end();
        }))
      continue;
    if (p.kind == ParamKind::text) key += fmt::format("={}:{}", params.text(p.name).size(), params.text(p.name));
    else key += fmt::format("={:a}", params.number(p.name));  // every bit of the value
  }
  return key;
}

}  // namespace

void ScenarioRegistry::add(Scenario scenario) {
  if (!scenario.apply) throw Error(fmt::format("scenario '{}' has no apply function", scenario.name));
  if (scenario.split) check_split(scenario.name, scenario.params, *scenario.split);
  for (ScenarioParam& p : scenario.params) cap_range(p);
  const std::string name = scenario.name;
  scenarios_.insert_or_assign(name, std::move(scenario));
}

const Scenario& ScenarioRegistry::find(std::string_view name) const {
  const auto it = scenarios_.find(name);
  if (it == scenarios_.end()) throw Error(fmt::format("unknown scenario '{}' (valid: {})", name, names()));
  return it->second;
}

std::string ScenarioRegistry::names() const {
  std::string list;
  for (const auto& [name, s] : scenarios_) list += (list.empty() ? "" : ", ") + name;
  return list;
}

ScenarioOutcome ScenarioRegistry::apply(Graph& graph, const ScenarioSpec& spec) const {
  return apply_with(spec, [&](const Scenario& scenario, const ScenarioParams& params) {
    return scenario.apply(graph, params);
  });
}

ScenarioOutcome ScenarioRegistry::apply_with(
    const ScenarioSpec& spec, const std::function<ScenarioOutcome(const Scenario&, const ScenarioParams&)>& run) const {
  const Scenario& scenario = find(spec.name);
  const ScenarioParams params = resolve_params(scenario, spec);
  try {
    return run(scenario, params);
  } catch (const Error& e) {
    throw Error(fmt::format("scenario '{}': {}", scenario.name, e.what()));
  }
}

namespace {

/// The parameter of `scenario` named `name`, or nullptr.
const ScenarioParam* find_param(const Scenario& scenario, std::string_view name) {
  const auto it = std::find_if(scenario.params.begin(), scenario.params.end(), [&](const auto& p) { return p.name == name; });
  return it == scenario.params.end() ? nullptr : &*it;
}

}  // namespace

ScenarioParams resolve_params(const Scenario& scenario, const ScenarioSpec& spec) {
  ScenarioParams params;
  for (const auto& p : scenario.params) {
    if (p.kind == ParamKind::text) params.set_text(p.name, p.default_text, false);
    else params.set(p.name, p.default_value, false);
  }
  for (const auto& [key, value] : spec.args) {
    const ScenarioParam* param = find_param(scenario, key);
    if (!param)
      throw Error(fmt::format("scenario '{}' has no parameter '{}'; its parameters:{}", scenario.name, key,
                              param_list(scenario)));
    if (!param->automatic_means.empty() && value == "auto") continue;  // as if not given
    if (param->kind == ParamKind::text) params.set_text(key, value, true);
    else params.set(key, parse_value(scenario, *param, value), true);
  }
  return params;
}

Scenario split_scenario(std::string name, std::string summary, std::vector<ScenarioParam> params, ScenarioSplit split) {
  if (split.prepare && split.complete && !split.restructure)
    split.restructure = [prepare = split.prepare, complete = split.complete](Graph& graph, const ScenarioParams& values) {
      const std::any prepared = prepare(graph, values);
      return complete(graph, values, prepared);
    };
  check_split(name, params, split);
  auto parts = std::make_shared<const ScenarioSplit>(std::move(split));
  auto apply = [parts](Graph& graph, const ScenarioParams& values) {
    const std::any plan = parts->restructure(graph, values);
    return parts->retime(graph, values, plan);
  };
  return {std::move(name), std::move(summary), std::move(params), std::move(apply), std::move(parts)};
}

std::string restructure_key(const Scenario& scenario, const ScenarioParams& params) {
  const std::vector<std::string> none;
  return key_of(scenario, params, {scenario.split ? &scenario.split->retimed : &none});
}

std::string prepare_key(const Scenario& scenario, const ScenarioParams& params) {
  if (!scenario.split) return restructure_key(scenario, params);
  return key_of(scenario, params, {&scenario.split->retimed, &scenario.split->completed});
}

ScenarioOutcome apply_scenario(Graph& graph, const ScenarioSpec& spec, const ScenarioRegistry& registry) {
  return registry.apply(graph, spec);
}

std::string describe_scenario(const Scenario& scenario) {
  return fmt::format("{}: {}\n parameters:{}", scenario.name, scenario.summary, param_list(scenario));
}

std::string_view canonical_unit(ParamKind kind) {
  switch (kind) {
    case ParamKind::bandwidth: return "bytes/s";
    case ParamKind::bytes: return "bytes";
    case ParamKind::duration: return "ns";
    default: return "";
  }
}

std::string parameter_column(const ScenarioParam& param) {
  switch (param.kind) {
    case ParamKind::bandwidth: return param.name + "_bytes_per_s";
    case ParamKind::bytes: return param.name + "_bytes";
    case ParamKind::duration: return param.name + "_ns";
    default: return param.name;
  }
}

std::vector<GivenParameter> given_parameters(const Scenario& scenario, const ScenarioSpec& spec) {
  const ScenarioParams params = resolve_params(scenario, spec);
  std::vector<GivenParameter> given;
  for (const auto& [key, value] : spec.args) {
    const ScenarioParam& param = *find_param(scenario, key);  // resolve_params found every key
    GivenParameter out{parameter_column(param), param.kind, std::nullopt, ""};
    if (param.kind == ParamKind::text) out.text = params.text(key);
    else if (params.given(key)) out.number = params.number(key);  // not given: "auto"
    given.push_back(std::move(out));
  }
  return given;
}

ParameterTable parameter_table(const std::vector<ScenarioSpec>& specs, const ScenarioRegistry& registry,
                               const std::vector<std::string>& reserved) {
  std::vector<std::vector<GivenParameter>> given;
  ParameterTable table;
  std::map<std::string, std::size_t, std::less<>> column_of;  // column as GivenParameter names it -> index
  for (const ScenarioSpec& spec : specs) {
    given.push_back(given_parameters(registry.find(spec.name), spec));
    for (const GivenParameter& argument : given.back()) {
      if (column_of.count(argument.column)) continue;
      column_of.emplace(argument.column, table.columns.size());
      const bool clash = std::find(reserved.begin(), reserved.end(), argument.column) != reserved.end();
      table.columns.push_back(clash ? "param_" + argument.column : argument.column);
    }
  }
  for (auto& arguments : given) {
    auto& row = table.cells.emplace_back(table.columns.size());
    for (auto& argument : arguments) row[column_of.at(argument.column)] = std::move(argument);
  }
  return table;
}

}  // namespace daydream
