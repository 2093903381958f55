// Parallel sweeps: many scenarios against one Predictor, on a fixed pool of threads.
#include <exception>
#include <mutex>

#include "common/parallel.hpp"
#include "daydream/predict.hpp"

namespace daydream {

std::vector<SweepRow> sweep(const Predictor& predictor, const std::vector<ScenarioSpec>& specs, const SweepOptions& options) {
  for (const auto& spec : specs) resolve_params(predictor.scenarios().find(spec.name), spec);  // bad specs fail before any work

  std::vector<SweepRow> rows(specs.size());
  std::size_t done = 0;
  std::mutex progress_mutex;
  // Per thread, the last scenario's graph and result: the next copy of the base graph reuses
  // their memory instead of allocating (and page-faulting in) megabytes per scenario.
  struct Scratch {
    Graph changed;
    SimulationResult result;
  };
  std::vector<Scratch> scratch(parallel::pool_size(specs.size(), options.threads));
  parallel::for_each_index_on(specs.size(), options.threads, [&](std::size_t i, unsigned w) {
    rows[i].spec = specs[i];
    try {
      rows[i].prediction = predictor.predict(specs[i], scratch[w].changed, scratch[w].result);
    } catch (const std::exception& e) {
      rows[i].error = e.what();  // one failing scenario does not stop the sweep
    }
    if (!options.progress) return;
    std::lock_guard lock(progress_mutex);
    options.progress(++done, specs.size());
  });
  return rows;
}

}  // namespace daydream
