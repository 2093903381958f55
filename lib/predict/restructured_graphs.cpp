// Restructured graphs of split scenarios, kept for a Predictor's later specs (restructured_graphs.hpp).
#include "predict/restructured_graphs.hpp"

#include <algorithm>

#include "daydream/analyze.hpp"
#include "daydream/error.hpp"
#include "graph/graph_access.hpp"
#include "graph/graph_storage.hpp"  // ReportColumns
#include "predict/report_columns.hpp"

namespace daydream {
bool prepare_copy_source(Graph& graph) {
  // A restructured graph shares its base's columns, which leave out the tasks it inserted: its
  // copies' reports would read those from the records, bringing them up to date after a retime.
  if (const auto built = report_columns_if_built(graph); built && !built->covers(TaskId(graph.num_tasks() - 1)))
    GraphAccess::drop_report_columns(graph);
  report_columns(graph);
  (void)median_launch_call_ns(graph);  // kept with the graph: amp and fused_adam ask each copy
  try {
    GraphAccess::prepare_for_copies(graph);  // columns, recorded order, ranks
    GraphAccess::edge_table(graph);
  } catch (const Error&) {
    return false;
  }
  return true;
}

std::shared_ptr<const RestructuredGraphs::Entry> RestructuredGraphs::find(const std::string& key) {
  std::lock_guard lock(mutex_);
  const auto it = std::find_if(kept_.begin(), kept_.end(), [&](const auto& entry) { return entry->key == key; });
  if (it == kept_.end()) return nullptr;
  std::rotate(kept_.begin(), it, it + 1);  // most recently used first
  return kept_.front();
}

bool RestructuredGraphs::met_before(const std::string& key) {
  std::lock_guard lock(mutex_);
  const auto it = std::find(recent_keys_.begin(), recent_keys_.end(), key);
  if (it != recent_keys_.end()) return recent_keys_.erase(it), true;
  if (recent_keys_.size() == kRecentKeys) recent_keys_.erase(recent_keys_.begin());
  recent_keys_.push_back(key);
  return false;
}

void RestructuredGraphs::keep(std::shared_ptr<const Entry> entry) {
  std::lock_guard lock(mutex_);
  if (std::any_of(kept_.begin(), kept_.end(), [&](const auto& e) { return e->key == entry->key; })) return;
  kept_.insert(kept_.begin(), std::move(entry));
  std::size_t bytes = 0, count = 0;
  for (const auto& e : kept_) {
    if (count == kMaxEntries || bytes + e->bytes > kMaxBytes) break;
    bytes += e->bytes, ++count;
  }
  kept_.resize(count);  // the least recently used go
}

ScenarioOutcome RestructuredGraphs::apply(const Graph& base, const Scenario& scenario, const ScenarioParams& params,
                                          Graph& changed) {
  const ScenarioSplit& split = *scenario.split;
  const std::string key = restructure_key(scenario, params);
  if (auto entry = find(key)) {
    changed = entry->graph;
    return split.retime(changed, params, entry->plan);
  }
  const std::size_t bytes = base.num_tasks() * kBytesPerTask;
  const bool may_keep = bytes <= kMaxBytes;
  // A copy of the base changed by `make` and prepared for copies, kept unless it has a cycle.
  const auto made = [&](std::string made_key, const auto& make) {
    auto entry = std::make_shared<Entry>(Entry{std::move(made_key), base, {}, bytes});
    entry->plan = make(entry->graph);
    if (prepare_copy_source(entry->graph)) keep(entry);
    return std::shared_ptr<const Entry>(std::move(entry));
  };
  if (may_keep && met_before(key)) {
    const auto entry = made(key, [&](Graph& graph) { return split.restructure(graph, params); });
    changed = entry->graph;
    return split.retime(changed, params, entry->plan);
  }
  if (split.prepare) {  // a structure met once may still share its prepared part with others
    const std::string prepared_key = "(prepared) " + prepare_key(scenario, params);
    std::shared_ptr<const Entry> entry = find(prepared_key);
    if (!entry && may_keep && met_before(prepared_key))
      entry = made(prepared_key, [&](Graph& graph) { return split.prepare(graph, params); });
    if (entry) {
      changed = entry->graph;
      const std::any plan = split.complete(changed, params, entry->plan);
      return split.retime(changed, params, plan);
    }
  }
  changed = base;
  const std::any plan = split.restructure(changed, params);
  return split.retime(changed, params, plan);
}

}  // namespace daydream
