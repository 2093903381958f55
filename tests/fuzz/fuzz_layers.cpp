// Fuzz target: layer files (docs/formats.md) applied to the bundled example trace.
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/layers.hpp"
#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace daydream;
  static const Graph base = build_graph(load_trace(DAYDREAM_FUZZ_EXAMPLE_TRACE));
  fuzz::expect_clean([&] {
    Graph graph = base;
    const fuzz::TemporaryInput file(data, size, ".layers.json");
    (void)apply_layer_file(graph, file.path());
  });
  return 0;
}
