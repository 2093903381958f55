#pragma once
// Restructured graphs kept by a Predictor for the specs of split scenarios (scenario.hpp
// ScenarioSplit). A sweep over a parameter that only sets durations (amp's fixed factors,
// cuda_graphs' launch time) makes the same structural edits for every value: selecting and
// classifying kernels, inserting casts or graph launches, removing a step's CPU work. The graph
// those edits give is kept once a key has been met twice (a structure met once, such as each
// value of a structural parameter, would only evict the others), prepared as a Predictor's base
// is (report columns, topological ranks, the simulator's edge table), and each later spec with
// that key copies it and retimes it: what it changes, not the whole scenario again. A split whose
// restructure comes in two parts (ScenarioSplit::prepare, complete) has its prepared graphs kept
// the same way, by prepare_key, for specs whose whole key is new: they copy one and complete it.
#include <any>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daydream/graph.hpp"
#include "daydream/scenario.hpp"

namespace daydream {

/// What copies of `graph` would each compute on first use, computed once: the report columns,
/// the simulator's task columns, the recorded order, the topological ranks and the edge table (a
/// Predictor's base, a kept restructured graph). False when the graph has a cycle: what needs the
/// order is left unbuilt, and the graph's simulation reports the cycle.
bool prepare_copy_source(Graph& graph);

class RestructuredGraphs {
 public:
  /// Applies the split scenario to `changed` as restructure then retime would on a copy of
  /// `base`: `changed` becomes a copy of the kept restructured graph of this key and is retimed,
  /// or a copy of `base` restructured and retimed. Errors are the scenario's own.
  ScenarioOutcome apply(const Graph& base, const Scenario& scenario, const ScenarioParams& params, Graph& changed);

  static constexpr std::size_t kMaxEntries = 4;
  /// Kept graphs' estimated size in all (kBytesPerTask a task): a graph too large is never kept.
  static constexpr std::size_t kMaxBytes = std::size_t{256} << 20;
  static constexpr std::size_t kBytesPerTask = 320;  // record, edges, columns (docs/benchmarks.md)
  /// Keys met once that a second meeting admits: a key is kept only when it comes back within this
  /// many other keys (a grid over a retimed value), not when a sweep cycles through many structures.
  static constexpr std::size_t kRecentKeys = 2 * kMaxEntries;

 private:
  struct Entry {
    std::string key;
    Graph graph;  // restructured, prepared; never changed while kept
    std::any plan;
    std::size_t bytes;
  };
  std::shared_ptr<const Entry> find(const std::string& key);
  /// True when `key` was met before (and forgets it); else remembers it.
  bool met_before(const std::string& key);
  void keep(std::shared_ptr<const Entry> entry);

  std::mutex mutex_;
  std::vector<std::shared_ptr<const Entry>> kept_;  // most recently used first
  std::vector<std::string> recent_keys_;             // newest last
};

}  // namespace daydream
