#pragma once
// `daydream sweep --price`: each row's GPU, throughput and cost per 1,000 iterations (cost.hpp),
// as a table after the predictions, CSV columns or a JSON object per row.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daydream/cost.hpp"
#include "daydream/predict.hpp"
#include "report/json_writer.hpp"

namespace daydream::cli {

/// The baseline's cost and each row's (none for a row whose scenario failed).
struct SweepCosts {
  RunCost baseline;
  std::vector<std::optional<RunCost>> rows;
  std::int64_t batch_size = 0;  ///< per GPU; 0 when not given
};

/// `traced_gpu` (--device; empty: none) is the GPU priced where a row's graph records none or one
/// the catalogue lacks (run_cost's fallback).
SweepCosts price_sweep(const Prediction& baseline, const std::vector<SweepRow>& rows, std::int64_t batch_size,
                       const std::string& traced_gpu, const DeviceCatalog& catalog, const PriceList& prices);

/// The table below the predictions: one line per row, the cheapest and fastest, the prices' sources.
void print_cost_table(const SweepCosts& costs, const std::vector<SweepRow>& rows);
/// The CSV columns after `error` (their names, then one row's fields; empty fields for none).
inline constexpr std::array<std::string_view, 7> kCostCsvColumns = {
    "gpu", "gpus", "iterations_per_s", "samples_per_s", "usd_per_gpu_hour", "usd_per_1k_iterations", "price_source"};
std::string cost_csv_fields(const std::optional<RunCost>& cost);
/// A row's "cost" object (null for none).
void write_cost_json(JsonWriter& w, const std::optional<RunCost>& cost);

}  // namespace daydream::cli
