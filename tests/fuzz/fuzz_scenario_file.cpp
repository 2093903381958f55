// Fuzz target: scenario files (one spec or grid per line), read and checked against the registry.
#include "daydream/scenario.hpp"
#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace daydream;
  fuzz::expect_clean([&] {
    const fuzz::TemporaryInput file(data, size, ".txt");
    for (const ScenarioSpec& spec : read_scenario_file(file.path().string(), 1000))
      (void)resolve_params(builtin_scenarios().find(spec.name), spec);
  });
  return 0;
}
