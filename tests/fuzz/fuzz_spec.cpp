// Fuzz target: scenario specs and grids, resolved and applied to the bundled example trace.
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/predict.hpp"
#include "daydream/scenario.hpp"
#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace daydream;
  static const Predictor predictor(build_graph(load_trace(DAYDREAM_FUZZ_EXAMPLE_TRACE)));
  fuzz::expect_clean([&] {
    for (const ScenarioSpec& spec : expand_scenario_grid(fuzz::text(data, size), 8))
      (void)predictor.predict(spec);
  });
  return 0;
}
