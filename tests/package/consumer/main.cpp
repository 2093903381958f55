// A program outside the source tree that uses the installed library: what a C++ user writes after
// `cmake --install` (built by tests/package/check_install.cmake with find_package and with pkg-config).
#include <daydream/daydream.hpp>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TRACE\n", argv[0]);
    return 2;
  }
  try {
    const daydream::Predictor predictor(daydream::build_graph(daydream::load_trace(argv[1])));
    const auto prediction = predictor.predict(daydream::parse_scenario_spec("faster_gpu:factor=2"));
    std::printf("consumer: %zu iterations, %zu scenarios, %s speedup %.3fx\n", prediction.iterations.size(),
                daydream::builtin_scenarios().size(), prediction.scenario.c_str(), prediction.speedup());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
  return 0;
}
