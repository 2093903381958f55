#include "builtin.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "daydream/error.hpp"

namespace daydream {

namespace scenarios {

std::vector<Scenario> builtin() {
  return {amp(),        faster_gpu(),     faster_network(), channels_last(), pinned_memory(),     fused_adam(),
          restructure_bn(), cuda_graphs(), ddp(),            p3(),            dataloader_workers(),
          network(),     rank_speed(),     scale_out(),      gpu()};
}

ScenarioParam traced_gpu_param(std::string name) {
  auto param = ScenarioParam::text(std::move(name), "auto",
                                   "the traced GPU, when the trace does not name it (or to override)");
  param.automatic_means = "identified from the trace's device records";
  return param;
}

ScenarioParam devices_param() {
  return ScenarioParam::text("devices", "", "a JSON file of more GPUs for the catalogue (docs/gpu_model.md)");
}

void rescale(Graph& graph, TaskId task, double ratio, Moved& moved, std::string_view gpu, TimeNs floor_ns) {
  const TimeNs duration = graph.task(task).duration_ns;
  const double exact = static_cast<double>(duration) * ratio;
  if (!(exact < 4.6e18))  // 2^62 ns, about 146 years: also catches NaN and infinity
    throw Error(fmt::format("task '{}' would take {:g} ns on the {} GPU (x{:g}): check the {}'s figures",
                            graph.name(task), exact, gpu, ratio, gpu));
  const TimeNs scaled = ratio == 1.0 ? duration : std::max<TimeNs>(std::llround(exact), std::min(duration, floor_ns));
  graph.set_duration(task, scaled);
  ++moved.count;
  moved.before_ns += duration;
  moved.after_ns += scaled;
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
