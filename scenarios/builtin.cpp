#include "builtin.hpp"

namespace daydream {

namespace scenarios {

std::vector<Scenario> builtin() {
  return {amp(),        faster_gpu(),     faster_network(), channels_last(), pinned_memory(),     fused_adam(),
          restructure_bn(), cuda_graphs(), ddp(),            p3(),            dataloader_workers(),
          network(),     rank_speed(),     scale_out(),      gpu()};
}

}  // namespace scenarios

const ScenarioRegistry& builtin_scenarios() {
  static const ScenarioRegistry registry = [] {  // built once, then only read: thread-safe
    ScenarioRegistry r;
    for (auto& s : scenarios::builtin()) r.add(std::move(s));
    return r;
  }();
  return registry;
}

}  // namespace daydream
