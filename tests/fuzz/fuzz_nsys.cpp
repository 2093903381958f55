// Fuzz target: Nsight Systems SQLite exports -> trace -> graph -> replay.
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/simulate.hpp"
#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace daydream;
  fuzz::expect_clean([&] {
    const fuzz::TemporaryInput file(data, size, ".sqlite");
    (void)simulate(build_graph(load_trace(file.path())));
  });
  return 0;
}
