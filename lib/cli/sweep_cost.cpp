// `daydream sweep --price`: what each predicted row costs to run (sweep_cost.hpp).
#include "cli/sweep_cost.hpp"

#include "cli/commands.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace daydream::cli {
namespace {

constexpr std::string_view kBaseline = "baseline";

RunCost cost_of(const Prediction& p, TimeNs iteration_ns, std::int64_t batch_size, const std::string& traced_gpu,
                const DeviceCatalog& catalog, const PriceList& prices) {
  return run_cost(iteration_ns, p.gpu, p.gpu_memory_bytes, p.gpus, catalog, prices, batch_size, traced_gpu);
}

std::string gpu_text(const RunCost& c) { return c.gpu.empty() ? "(unknown)" : c.gpu; }

/// Throughput to compare jobs of different sizes by: samples/s when the batch is known, else iterations/s.
double throughput(const RunCost& c, std::int64_t batch_size) { return batch_size > 0 ? c.samples_per_s : c.iterations_per_s; }

/// The baseline's cost (i = 0) or row i - 1's; nullptr for a row whose scenario failed.
const RunCost* cost_at(const SweepCosts& costs, std::size_t i) {
  if (i == 0) return &costs.baseline;
  return costs.rows[i - 1] ? &*costs.rows[i - 1] : nullptr;
}

/// Lines naming the cheapest row per iteration (among the priced ones) and the fastest.
void print_best(const SweepCosts& costs, const std::vector<std::string>& labels) {
  std::size_t cheapest = labels.size(), fastest = labels.size();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const RunCost* c = cost_at(costs, i);
    if (!c) continue;
    if (fastest == labels.size() || throughput(*c, costs.batch_size) > throughput(*cost_at(costs, fastest), costs.batch_size))
      fastest = i;
    if (c->price && (cheapest == labels.size() || c->usd_per_1k_iterations < cost_at(costs, cheapest)->usd_per_1k_iterations))
      cheapest = i;
  }
  if (cheapest < labels.size())
    fmt::print("cheapest: {} (${:.4f} per 1,000 iterations)\n", labels[cheapest],
               cost_at(costs, cheapest)->usd_per_1k_iterations);
  if (fastest < labels.size())
    fmt::print("fastest:  {} ({})\n", labels[fastest],
               costs.batch_size > 0 ? fmt::format("{:.1f} samples/s", cost_at(costs, fastest)->samples_per_s)
                                    : fmt::format("{:.3f} iterations/s", cost_at(costs, fastest)->iterations_per_s));
}

/// Which list each price came from, and the GPUs with none.
void print_sources(const SweepCosts& costs) {
  std::map<std::string, std::set<std::string>> by_source;
  std::set<std::string> unpriced;
  auto note = [&](const RunCost& c) {
    if (c.price) by_source[c.price->source].insert(c.gpu);
    else unpriced.insert(gpu_text(c));
  };
  note(costs.baseline);
  for (const auto& c : costs.rows)
    if (c) note(*c);
  for (const auto& [source, gpus] : by_source) fmt::print("price of {}: {}\n", fmt::join(gpus, ", "), source);
  if (!unpriced.empty())
    fmt::print("no price for {}: give one in a prices file (--price FILE, docs/gpu_model.md \"Cost\")\n",
               fmt::join(unpriced, ", "));
}

std::string number_or_dash(bool known, double value, int decimals) {
  return known ? fmt::format("{:.{}f}", value, decimals) : "-";
}

}  // namespace

SweepCosts price_sweep(const Prediction& baseline, const std::vector<SweepRow>& rows, std::int64_t batch_size,
                       const std::string& traced_gpu, const DeviceCatalog& catalog, const PriceList& prices) {
  SweepCosts costs;
  costs.batch_size = batch_size;
  costs.baseline = cost_of(baseline, baseline.baseline_median_ns, batch_size, traced_gpu, catalog, prices);
  for (const auto& row : rows)
    costs.rows.push_back(row.prediction ? std::optional(cost_of(*row.prediction, row.prediction->predicted_median_ns,
                                                                batch_size, traced_gpu, catalog, prices))
                                        : std::nullopt);
  return costs;
}

void print_cost_table(const SweepCosts& costs, const std::vector<SweepRow>& rows) {
  std::vector<std::string> labels{std::string(kBaseline)};
  for (const auto& row : rows) labels.push_back(row.spec.text());
  std::size_t width = 0, gpu_width = 3;
  for (const auto& label : labels) width = std::max(width, label.size());
  gpu_width = std::max(gpu_width, gpu_text(costs.baseline).size());
  for (const auto& c : costs.rows)
    if (c) gpu_width = std::max(gpu_width, gpu_text(*c).size());
  const bool samples = costs.batch_size > 0;
  fmt::print("\ncost at on-demand list prices (USD){}:\n",
             samples ? fmt::format(", batch {} per GPU", costs.batch_size) : "");
  fmt::print("{:<{}}  {:<{}} {:>5} {:>12}{} {:>8} {:>12}\n", "scenario", width, "GPU", gpu_width, "GPUs", "iter/s",
             samples ? fmt::format(" {:>12}", "samples/s") : "", "$/GPU-h", "$ per 1k it");
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const RunCost* c = cost_at(costs, i);
    if (!c) continue;  // the prediction table shows its error
    fmt::print("{:<{}}  {:<{}} {:>5} {:>12.3f}{} {:>8} {:>12}\n", labels[i], width, gpu_text(*c), gpu_width, c->gpus,
               c->iterations_per_s, samples ? fmt::format(" {:>12.1f}", c->samples_per_s) : "",
               number_or_dash(c->price.has_value(), c->price ? c->price->usd_per_gpu_hour : 0, 2),
               number_or_dash(c->price.has_value(), c->usd_per_1k_iterations, 4));
  }
  print_best(costs, labels);
  print_sources(costs);
}

std::string cost_csv_fields(const std::optional<RunCost>& cost) {
  if (!cost) return ",,,,,,";
  const RunCost& c = *cost;
  return fmt::format("{},{},{:.6f},{},{},{},{}", csv_field(c.gpu), c.gpus, c.iterations_per_s,
                     c.samples_per_s > 0 ? fmt::format("{:.6f}", c.samples_per_s) : "",
                     c.price ? fmt::format("{:.6f}", c.price->usd_per_gpu_hour) : "",
                     c.price ? fmt::format("{:.6f}", c.usd_per_1k_iterations) : "", csv_field(c.price ? c.price->source : ""));
}

void write_cost_json(JsonWriter& w, const std::optional<RunCost>& cost) {
  if (!cost) {
    w.null();
    return;
  }
  const RunCost& c = *cost;
  const auto number_or_null = [&w](const char* key, bool known, double value) {
    if (known) w.key(key).ratio(value);
    else w.key(key).null();
  };
  w.begin_object().key("gpu").value(c.gpu).key("gpus").value(c.gpus);
  w.key("iterations_per_s").ratio(c.iterations_per_s);
  number_or_null("samples_per_s", c.samples_per_s > 0, c.samples_per_s);
  number_or_null("usd_per_gpu_hour", c.price.has_value(), c.price ? c.price->usd_per_gpu_hour : 0);
  number_or_null("usd_per_1k_iterations", c.price.has_value(), c.usd_per_1k_iterations);
  if (c.price) w.key("price_source").value(c.price->source);
  else w.key("price_source").null();
  w.end_object();
}

}  // namespace daydream::cli
