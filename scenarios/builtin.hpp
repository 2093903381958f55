#pragma once
// The scenarios shipped with daydream (one file each in scenarios/; models in docs/scenarios.md).
#include <string_view>

#include "daydream/scenario.hpp"

namespace daydream::scenarios {

Scenario amp();
Scenario faster_gpu();
Scenario faster_network();
Scenario channels_last();
Scenario pinned_memory();
Scenario fused_adam();
Scenario restructure_bn();
Scenario cuda_graphs();
Scenario ddp();
Scenario p3();
Scenario dataloader_workers();
Scenario network();
Scenario rank_speed();
Scenario scale_out();
Scenario gpu();

// The parameters of the scenarios on the GPU model (amp, gpu; docs/gpu_model.md).

/// `name`: the traced GPU, a catalogue name, when the trace does not name it (default auto:
/// identified from the trace's device records).
ScenarioParam traced_gpu_param(std::string name);
/// `devices`: a JSON file of more GPUs for the catalogue (DeviceCatalog::with_file).
ScenarioParam devices_param();

/// The tasks of one kind of change and their time before and after, for the notes.
struct Moved {
  std::size_t count = 0;
  TimeNs before_ns = 0, after_ns = 0;
};
/// Sets `task`'s duration to its time x `ratio` (exactly unchanged at 1), never below the lesser
/// of its time and `floor_ns`, and counts the change in `moved`. Throws Error naming the task
/// when the result leaves the range of a duration (a devices file's GPU with a vanishing
/// bandwidth or peak): "check the <gpu>'s figures".
void rescale(Graph& graph, TaskId task, double ratio, Moved& moved, std::string_view gpu, TimeNs floor_ns = 0);

/// All of the above, in this order.
std::vector<Scenario> builtin();

}  // namespace daydream::scenarios
