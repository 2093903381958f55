// Fuzz target: Kineto Chrome-trace JSON (plain or gzip) -> trace -> graph -> replay and one what-if.
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/predict.hpp"
#include "daydream/simulate.hpp"
#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace daydream;
  fuzz::expect_clean([&] {
    const fuzz::TemporaryInput file(data, size, ".json");
    const Graph graph = build_graph(load_trace(file.path()));
    const Predictor predictor(graph);
    (void)predictor.predict(parse_scenario_spec("faster_gpu:factor=2"));
  });
  return 0;
}
