#pragma once
/// @file scenario.hpp
/// @brief Named what-if scenarios ("amp", "ddp:machines=4,gpus=2,bandwidth=10Gbps", ...): each is a
/// short script over the transformation primitives with typed, range-checked parameters.
///
/// A scenario changes a copy of the graph the way the optimization would; predict.hpp simulates
/// it. The library's scenarios live in `scenarios/` (one file each, docs/scenarios.md) and are
/// listed by builtin_scenarios(); users add their own to a copy (ScenarioRegistry).
///
/// @code
///   daydream::Graph amp = graph;
///   auto applied = daydream::apply_scenario(amp, daydream::parse_scenario_spec("amp:tensor_core=3"));
///   auto result = daydream::simulate(amp, applied.policy ? *applied.policy : daydream::TraceOrderPolicy{});
/// @endcode

#include <any>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daydream/graph.hpp"
#include "daydream/simulate.hpp"

namespace daydream {

/// How a parameter's text is read, and its canonical unit.
enum class ParamKind : std::uint8_t {
  number,     ///< plain number ("2", "0.5")
  integer,    ///< whole number ("4")
  bandwidth,  ///< bytes per second: "10Gbps", "100Mbps", "1.5GB/s", "900MB/s"; a bare number is Gbps
  bytes,      ///< bytes: "25MB", "4MiB", "512KB", "1000"; a bare number is bytes
  duration,   ///< nanoseconds: "5us", "1.5ms", "200ns", "1s"; a bare number is microseconds
  text,       ///< a word (stored in ScenarioParams::text), e.g. a regular expression or a file
};
std::string_view to_string(ParamKind kind);

/// One parameter of a scenario. Values are stored in canonical units (see ParamKind).
/// Written `{"factor", ParamKind::number, 2.0, "speed-up factor", 0, inf, true}` (a factor > 0).
struct ScenarioParam {
  ScenarioParam() = default;
  ScenarioParam(std::string name_, ParamKind kind_, double default_value_, std::string description_,
                double min_ = -std::numeric_limits<double>::infinity(),
                double max_ = std::numeric_limits<double>::infinity(), bool min_exclusive_ = false)
      : name(std::move(name_)), kind(kind_), default_value(default_value_), description(std::move(description_)),
        min(min_), max(max_), min_exclusive(min_exclusive_) {}
  /// A parameter without a fixed default: when not given (or given as "auto"), the scenario works
  /// out what to use, as `what` says ("fitted to the job's collectives"). `daydream scenarios`
  /// shows "default auto: <what>"; ScenarioParams::given() is false.
  ScenarioParam automatic(std::string what) && {
    automatic_means = std::move(what);
    return std::move(*this);
  }
  /// A text parameter (a word, a regular expression, a file name).
  static ScenarioParam text(std::string name, std::string default_text, std::string description) {
    ScenarioParam p(std::move(name), ParamKind::text, 0, std::move(description));
    p.default_text = std::move(default_text);
    return p;
  }

  std::string name;
  ParamKind kind = ParamKind::number;
  double default_value = 0;  ///< canonical units; ignored for text
  std::string description;   ///< one line, with the unit
  double min = -std::numeric_limits<double>::infinity();  ///< inclusive bounds, canonical units
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;  ///< true: value must be > min
  std::string default_text;    ///< default of a text parameter
  /// Non-empty: the default is "auto", what the scenario works out when the parameter is not
  /// given (default_value is then never shown, and read only as a placeholder).
  std::string automatic_means;
};

/// A scenario name with its arguments as written: `name` or `name:key=value,key=value`.
struct ScenarioSpec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> args;  ///< in the order written
  std::string text() const;  ///< canonical form: name[:key=value,...] as written
};

/// Parses `name` or `name:key=value,...`. Throws Error for an empty name, a missing '=' or a
/// repeated key. Does not check names against the registry (apply_scenario does).
ScenarioSpec parse_scenario_spec(std::string_view text);

/// The most specs a sweep expands by default (`daydream sweep --max-specs`, sweep(max_specs=)):
/// a grid is counted before it is expanded, so 7 keys of 10 values are refused, not built.
inline constexpr std::size_t kDefaultMaxSweepSpecs = 100'000;

/// Expands grids: a value may list alternatives separated by '|' ("bandwidth=10Gbps|40Gbps").
/// Returns every combination, the first key varying slowest. Throws Error, before expanding,
/// when the grid holds more than `max_specs` combinations.
std::vector<ScenarioSpec> expand_scenario_grid(std::string_view text, std::size_t max_specs = kDefaultMaxSweepSpecs);

/// Reads a scenario file: one spec (grids allowed) per line; blank lines and lines starting
/// with '#' are skipped. Errors name the file and line; more than `max_specs` specs in all is
/// an error.
std::vector<ScenarioSpec> read_scenario_file(const std::string& path, std::size_t max_specs = kDefaultMaxSweepSpecs);

/// The parameters of one run of a scenario, every one set (defaults filled in).
class ScenarioParams {
 public:
  double number(std::string_view name) const;   ///< canonical units; throws for an unknown name
  std::int64_t integer(std::string_view name) const;
  const std::string& text(std::string_view name) const;
  bool given(std::string_view name) const;      ///< set in the spec (not a default)
  void set(const std::string& name, double value, bool given);
  void set_text(const std::string& name, std::string value, bool given);

 private:
  std::map<std::string, double, std::less<>> numbers_;
  std::map<std::string, std::string, std::less<>> texts_;
  std::map<std::string, bool, std::less<>> given_;
};

/// What applying a scenario produced besides the changed graph.
struct ScenarioOutcome {
  /// The schedule to simulate with; null = trace order.
  std::shared_ptr<const SchedulePolicy> policy;
  /// Facts worth reporting ("fitted latency 23 us, bandwidth 9.1 GB/s from 21 collectives").
  std::vector<std::string> notes;
};

/// A scenario's apply in two parts, for sweeps over parameters that only set durations
/// (amp's fixed factors, cuda_graphs' launch time): `restructure` makes every change that does not
/// depend on the `retimed` parameters (selections, inserted and removed tasks, edges) and returns
/// what `retime` needs (the tasks it times); `retime` sets durations on a graph `restructure`
/// changed, from all the parameters, and returns the outcome. Restructure never reads a retimed
/// parameter's value (whether one is given may choose what it does: restructure_key holds that),
/// and retime never changes the structure (tasks, edges, delays).
///
/// A Predictor keeps the graphs `restructure` made (predict.hpp), so that a spec differing from
/// an earlier one only in retimed values costs a copy and a retime instead of a restructure.
/// Make the Scenario with split_scenario(), whose apply is restructure then retime: the results
/// of either path are the same, to the ns.
struct ScenarioSplit {
  std::vector<std::string> retimed;  ///< names of parameters that only set durations
  std::function<std::any(Graph& graph, const ScenarioParams& params)> restructure;
  std::function<ScenarioOutcome(Graph& graph, const ScenarioParams& params, const std::any& plan)> retime;
  /// Optional, both or neither: restructure itself in two parts, for structural parameters whose
  /// values only choose what goes where the other changes left room (fused_adam's `kernels`: a
  /// step's work goes the same way whatever number of fused kernels takes its place). `prepare`
  /// makes every change that reads neither a `completed` nor a retimed parameter's value and
  /// returns what `complete` needs; `complete` makes the rest on the graph prepare changed and
  /// returns retime's plan. Leave `restructure` empty: split_scenario makes it complete after
  /// prepare. A Predictor keeps prepared graphs as it keeps restructured ones (prepare_key), so a
  /// sweep over a completed parameter prepares once.
  std::vector<std::string> completed = {};
  std::function<std::any(Graph& graph, const ScenarioParams& params)> prepare = nullptr;
  std::function<std::any(Graph& graph, const ScenarioParams& params, const std::any& prepared)> complete = nullptr;
};

/// A scenario: its name, what it models, its parameters and the script that applies it.
struct Scenario {
  std::string name;
  std::string summary;  ///< one line
  std::vector<ScenarioParam> params;
  /// Changes `graph` in place. Throws Error when the graph lacks what the scenario needs.
  std::function<ScenarioOutcome(Graph& graph, const ScenarioParams& params)> apply;
  /// Null, or apply in two parts (ScenarioSplit); set by split_scenario().
  std::shared_ptr<const ScenarioSplit> split = nullptr;
};

/// A scenario whose apply is `split.restructure` then `split.retime`. Throws Error when a retimed
/// name is not one of `params` or a part is missing.
Scenario split_scenario(std::string name, std::string summary, std::vector<ScenarioParam> params, ScenarioSplit split);

/// What two specs of one split scenario share when they restructure a graph the same way: every
/// parameter's value but the retimed ones', and whether each parameter was given. Equal keys:
/// one restructured graph serves both.
std::string restructure_key(const Scenario& scenario, const ScenarioParams& params);
/// restructure_key without the completed parameters' values either (ScenarioSplit::prepare):
/// equal keys, one prepared graph serves both.
std::string prepare_key(const Scenario& scenario, const ScenarioParams& params);

/// A set of scenarios by name: a value, so that each Predictor, CLI run or test holds the set it
/// uses and nothing is shared behind its back. builtin_scenarios() is the library's own.
///
/// @code
///   daydream::ScenarioRegistry mine = daydream::builtin_scenarios();
///   mine.add(my_idea());
///   const daydream::Predictor predictor(graph, mine);
/// @endcode
class ScenarioRegistry {
 public:
  using Map = std::map<std::string, Scenario, std::less<>>;

  /// Adds a scenario, replacing one of the same name. Throws Error when it has no apply function.
  void add(Scenario scenario);
  /// The scenario named `name`; throws Error listing the valid names when there is none.
  const Scenario& find(std::string_view name) const;
  bool contains(std::string_view name) const { return scenarios_.find(name) != scenarios_.end(); }
  /// "amp, channels_last, ...": every name, sorted.
  std::string names() const;
  std::size_t size() const { return scenarios_.size(); }
  Map::const_iterator begin() const { return scenarios_.begin(); }
  Map::const_iterator end() const { return scenarios_.end(); }

  /// resolve_params + the scenario's apply: changes `graph` in place. An Error the scenario raises
  /// comes out prefixed "scenario 'NAME': " (a scenario's own messages never name it).
  ScenarioOutcome apply(Graph& graph, const ScenarioSpec& spec) const;
  /// resolve_params, then `run` with the scenario and its parameters, an Error it raises prefixed
  /// as apply's: apply, and a Predictor that applies a split scenario on a kept graph.
  ScenarioOutcome apply_with(const ScenarioSpec& spec,
                             const std::function<ScenarioOutcome(const Scenario&, const ScenarioParams&)>& run) const;

 private:
  Map scenarios_;
};

/// The scenarios shipped with daydream (scenarios/, docs/scenarios.md), built once; safe to read
/// from any thread. Defined by the daydream::scenarios library.
const ScenarioRegistry& builtin_scenarios();

/// Checks a spec against its scenario's parameters and fills in the defaults. Throws Error for an
/// unknown name or parameter, an unreadable value or one out of range; the message lists the
/// valid names, or the parameters with their ranges and defaults.
ScenarioParams resolve_params(const Scenario& scenario, const ScenarioSpec& spec);

/// The unit of a kind's canonical values: "bytes/s", "bytes", "ns"; "" for numbers, integers, text.
std::string_view canonical_unit(ParamKind kind);

/// A parameter's column in a sweep's table (`sweep --csv`, daydream.sweep's DataFrame): its name
/// and canonical unit, `bandwidth_bytes_per_s`, `bucket_bytes`, `latency_ns`; a number, an integer
/// or a text keeps its name.
std::string parameter_column(const ScenarioParam& param);

/// An argument a spec gives, as its column holds it: a number in canonical units ("10Gbps" ->
/// 1.25e9 in `bandwidth_bytes_per_s`), or the text. `number` is empty for a text and for "auto".
struct GivenParameter {
  std::string column;
  ParamKind kind = ParamKind::number;
  std::optional<double> number;
  std::string text;
};

/// The arguments `spec` gives, in the order written. Throws Error as resolve_params does.
std::vector<GivenParameter> given_parameters(const Scenario& scenario, const ScenarioSpec& spec);

/// The parameter columns of a sweep's table: every column the specs give, in order of first
/// appearance (one named like a `reserved` column gets a `param_` prefix), and each spec's
/// arguments in them (cells[spec][column], empty where the spec does not give it). Throws Error as
/// resolve_params does, and for an unknown scenario.
struct ParameterTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<GivenParameter>>> cells;
};
ParameterTable parameter_table(const std::vector<ScenarioSpec>& specs, const ScenarioRegistry& registry,
                               const std::vector<std::string>& reserved);

/// resolve_params + apply with the scenario of `registry`: changes `graph` in place.
ScenarioOutcome apply_scenario(Graph& graph, const ScenarioSpec& spec,
                               const ScenarioRegistry& registry = builtin_scenarios());

/// Human-readable help for one scenario (parameters, units, ranges, defaults).
std::string describe_scenario(const Scenario& scenario);

/// Every scenario of `registry` as one JSON object, what `daydream scenarios --json` prints and
/// daydream.scenarios() returns (docs/cli.md): {"scenarios": [{name, summary, params: [{name,
/// kind, default, min, max, min_exclusive, unit, description, auto}], help}]}. Numbers are in
/// canonical units (`unit`), whole ones as integers; an unbounded min/max is null; a parameter
/// the scenario works out itself has default "auto" and `auto` says from what (null otherwise).
std::string scenarios_json(const ScenarioRegistry& registry);

}  // namespace daydream
