// Parallel sweeps: many scenarios against one Predictor, on a fixed pool of threads.
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "daydream/predict.hpp"

namespace daydream {

std::vector<SweepRow> sweep(const Predictor& predictor, const std::vector<ScenarioSpec>& specs, const SweepOptions& options) {
  for (const auto& spec : specs) resolve_params(find_scenario(spec.name), spec);  // bad specs fail before any work

  std::vector<SweepRow> rows(specs.size());
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::mutex progress_mutex;
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < specs.size();) {
      rows[i].spec = specs[i];
      try {
        rows[i].prediction = predictor.predict(specs[i]);
      } catch (const std::exception& e) {
        rows[i].error = e.what();  // one failing scenario does not stop the sweep
      }
      if (!options.progress) continue;
      std::lock_guard lock(progress_mutex);
      options.progress(++done, specs.size());
    }
  };
  unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(1, specs.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  return rows;
}

}  // namespace daydream
