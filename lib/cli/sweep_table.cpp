// `daydream sweep`: many scenarios against one trace, in parallel, printed as a table, CSV or
// JSON (docs/cli.md). Output is identical byte for byte across runs and thread counts: rows keep
// the input order and every number has a fixed format. Progress goes to stderr.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/sweep_cost.hpp"
#include "common/text.hpp"
#include "daydream/error.hpp"
#include "daydream/predict.hpp"
#include "daydream/report/replay.hpp"
#include "report/iteration_rule_json.hpp"
#include "report/json_writer.hpp"

namespace daydream::cli {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

namespace {

/// The label of the first row: the trace as recorded.
constexpr std::string_view kBaseline = "baseline";

double dominant_share(const PathBreakdown& path) {
  const TimeNs dominant = path.by_category_ns[static_cast<std::size_t>(path.dominant())];
  return path.length_ns > 0 ? static_cast<double>(dominant) / static_cast<double>(path.length_ns) : 0.0;
}

std::string dominant_text(const PathBreakdown& path) {
  return fmt::format("{} {}", to_string(path.dominant()),
                     share_text(path.by_category_ns[static_cast<std::size_t>(path.dominant())], path.length_ns));
}

/// The specs of --scenario (grids expanded) then of each --scenarios file, in the order given;
/// each is checked against its scenario before any trace is loaded.
std::vector<ScenarioSpec> collect_specs(const SweepCommandOptions& options) {
  std::vector<ScenarioSpec> specs;
  const auto left = [&] { return options.max_specs - specs.size(); };  // the budget is for all of them
  for (const auto& text : options.scenarios)
    for (auto& spec : expand_scenario_grid(text, left())) specs.push_back(std::move(spec));
  for (const auto& file : options.scenario_files)
    for (auto& spec : read_scenario_file(file, left())) specs.push_back(std::move(spec));
  if (specs.empty()) throw Error("sweep: no scenario given (use --scenario SPEC or --scenarios FILE)");
  for (const auto& spec : specs) check_spec(spec);
  return specs;
}

/// Progress on stderr once a sweep has run for 2 s: one line rewritten with '\r' on a terminal
/// (at most 10 times a second), otherwise a line per 10% of the predictions.
class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled), terminal_(isatty(fileno(stderr)) != 0) {}

  void operator()(std::size_t done, std::size_t total) {
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (!enabled_ || elapsed_s < kQuietSeconds) return;
    const std::size_t tenth = done * 10 / total;
    if (!terminal_ && tenth == last_tenth_) return;
    if (terminal_ && done < total && elapsed_s - last_print_s_ < kRedrawSeconds) return;
    last_tenth_ = tenth;
    last_print_s_ = elapsed_s;
    fmt::print(stderr, "{}sweep: {}/{} predictions ({}%), {:.1f} s{}", terminal_ ? "\r" : "", done, total,
               done * 100 / total, elapsed_s, terminal_ ? "" : "\n");
    std::fflush(stderr);
    printed_ = true;
  }
  /// Ends the terminal's progress line.
  void finish() const {
    if (printed_ && terminal_) fmt::print(stderr, "\n");
  }

 private:
  static constexpr double kQuietSeconds = 2.0;
  static constexpr double kRedrawSeconds = 0.1;  // terminal redraws at most 10 times a second
  bool enabled_, terminal_;
  bool printed_ = false;
  std::size_t last_tenth_ = 0;
  double last_print_s_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

/// Errors on one line for the table (messages listing parameters span lines).
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

void print_table(const std::string& trace, const Prediction& baseline, const std::vector<SweepRow>& rows) {
  std::size_t width = kBaseline.size();
  for (const auto& row : rows) width = std::max(width, row.spec.text().size());
  const char* per_row = baseline.iterations.empty() ? "the whole run" : "the median iteration";
  fmt::print("trace: {}\niterations: {}; each row gives {}\n\n{:<{}}  {:>14} {:>9}  {}\n", trace,
             describe(baseline.iteration_rule), per_row, "scenario", width, "predicted ms", "speedup",
             "critical path: dominant (share)");
  fmt::print("{:<{}}  {:>14} {:>9}  {}\n", kBaseline, width, format_ms_us(baseline.baseline_median_ns),
             speedup_text(baseline.speedup()), dominant_text(baseline.critical_path));
  for (const auto& row : rows) {
    if (!row.prediction) {
      fmt::print("{:<{}}  error: {}\n", row.spec.text(), width, one_line(row.error));
      continue;
    }
    const Prediction& p = *row.prediction;
    fmt::print("{:<{}}  {:>14} {:>9}  {}\n", row.spec.text(), width, format_ms_us(p.predicted_median_ns),
               speedup_text(p.speedup()), dominant_text(p.critical_path));
  }
}

constexpr std::array<std::string_view, 7> kCsvColumns = {"scenario", "baseline_ms", "predicted_ms", "speedup",
                                                          "dominant", "dominant_share", "error"};

/// A parameter's cell: a canonical number (whole numbers as integers, others shortest), the text,
/// or nothing where the row does not give it (or gives "auto").
std::string parameter_cell(const std::optional<GivenParameter>& cell) {
  if (!cell) return "";
  if (cell->kind == ParamKind::text) return csv_field(cell->text);
  if (!cell->number) return "";
  if (const auto whole = text::exact_integer(*cell->number)) return fmt::format("{}", *whole);
  return fmt::format("{}", *cell->number);
}

/// The result columns of a line: kCsvColumns, then the cost columns with --price.
std::vector<std::string> result_columns(bool costs) {
  std::vector<std::string> columns(kCsvColumns.begin(), kCsvColumns.end());
  if (costs) columns.insert(columns.end(), kCostCsvColumns.begin(), kCostCsvColumns.end());
  return columns;
}

/// With costs, each line goes on with cost_csv_fields (the baseline has no line: see --json); then
/// the parameters each row gives as daydream.sweep's DataFrame has them (parameter_table): one
/// column per parameter and canonical unit (`bandwidth_bytes_per_s`).
void print_csv(const Prediction& baseline, const std::vector<SweepRow>& rows, const SweepCosts* costs) {
  const std::vector<std::string> columns = result_columns(costs != nullptr);
  std::vector<ScenarioSpec> specs;
  for (const SweepRow& row : rows) specs.push_back(row.spec);
  const ParameterTable parameters = parameter_table(specs, builtin_scenarios(), columns);
  std::string header = fmt::format("{}", fmt::join(columns, ","));
  for (const std::string& column : parameters.columns) fmt::format_to(std::back_inserter(header), ",{}", column);
  fmt::print("{}\n", header);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SweepRow& row = rows[i];
    const std::string scenario = csv_field(row.spec.text());
    std::string tail = costs ? fmt::format(",{}", cost_csv_fields(costs->rows[i])) : "";
    for (const auto& cell : parameters.cells[i]) fmt::format_to(std::back_inserter(tail), ",{}", parameter_cell(cell));
    if (!row.prediction) {
      fmt::print("{},{},,,,,{}{}\n", scenario, format_ms(baseline.baseline_median_ns), csv_field(row.error), tail);
      continue;
    }
    const Prediction& p = *row.prediction;
    fmt::print("{},{},{},{:.6f},{},{:.6f},{}\n", scenario, format_ms(p.baseline_median_ns),
               format_ms(p.predicted_median_ns), p.speedup(), to_string(p.critical_path.dominant()),
               dominant_share(p.critical_path), tail);
  }
}

/// With costs, "baseline_cost" and each row's "cost" (sweep_cost.hpp) join the fields.
std::string sweep_json(const std::string& trace, const Prediction& baseline, const std::vector<SweepRow>& rows,
                       const SweepCosts* costs) {
  JsonWriter w;
  w.begin_object().key("trace").value(trace);
  write_iteration_rule(w, "iteration_rule", baseline.iteration_rule);
  w.key("baseline_ms").milliseconds(baseline.baseline_median_ns);
  w.key("baseline_dominant").value(to_string(baseline.critical_path.dominant()));
  w.key("baseline_dominant_share").ratio(dominant_share(baseline.critical_path));
  if (costs) {
    write_cost_json(w.key("baseline_cost"), costs->baseline);
    w.key("batch_size").value(costs->batch_size);
  }
  w.key("rows").begin_array();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SweepRow& row = rows[i];
    w.begin_object().key("scenario").value(row.spec.text());
    if (row.prediction) {
      const Prediction& p = *row.prediction;
      w.key("predicted_ms").milliseconds(p.predicted_median_ns).key("speedup").ratio(p.speedup());
      w.key("dominant").value(to_string(p.critical_path.dominant()));
      w.key("dominant_share").ratio(dominant_share(p.critical_path)).key("error").null();
    } else {
      for (const char* key : {"predicted_ms", "speedup", "dominant", "dominant_share"}) w.key(key).null();
      w.key("error").value(row.error);
    }
    if (costs) write_cost_json(w.key("cost"), costs->rows[i]);
    w.end_object();
  }
  return w.end_array().end_object().str();
}

}  // namespace

int run_sweep(const SweepCommandOptions& options) {
  std::vector<ScenarioSpec> specs = collect_specs(options);  // bad specs and price files fail before the trace is read
  const DeviceCatalog catalog = DeviceCatalog::with_file(options.devices_file);
  const std::optional<PriceList> prices =
      options.price.empty() ? std::nullopt : std::optional(PriceList::from_option(options.price, catalog));
  if (!options.device.empty()) catalog.at(options.device);  // an unknown name fails before the trace is read
  const Predictor predictor(load_graph(options.common, options.layer_file));
  Progress progress(!options.quiet);
  SweepOptions sweep_options;
  sweep_options.threads = options.threads;
  sweep_options.progress = [&progress](std::size_t done, std::size_t total) { progress(done, total); };
  const std::vector<SweepRow> rows = sweep(predictor, specs, sweep_options);
  progress.finish();
  // The baseline compared with itself: median iteration and critical path computed like every row's.
  const Prediction baseline = predictor.compare(std::string(kBaseline), predictor.base(), predictor.baseline());

  const std::optional<SweepCosts> costs =
      prices ? std::optional(price_sweep(baseline, rows, options.batch_size, options.device, catalog, *prices)) : std::nullopt;
  const SweepCosts* cost_table = costs ? &*costs : nullptr;
  if (options.csv) print_csv(baseline, rows, cost_table);
  else if (options.common.json) std::cout << sweep_json(options.common.label(), baseline, rows, cost_table);
  else {
    print_table(options.common.label(), baseline, rows);
    if (costs) print_cost_table(*costs, rows);
  }

  std::size_t failed = 0;
  for (const auto& row : rows) failed += row.prediction ? 0 : 1;
  if (failed == 0) return 0;
  std::cout.flush();
  fmt::print(stderr, "sweep: {} of {} scenarios failed (see their rows)\n", failed, rows.size());
  return 1;
}

}  // namespace daydream::cli
