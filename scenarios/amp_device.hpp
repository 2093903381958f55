#pragma once
// amp on the GPU model (amp_device.cpp): kernels as autocast runs them on the traced GPU, and
// GradScaler's wait for the backward pass before the optimizer step.
#include <string>
#include <vector>

#include "daydream/device.hpp"
#include "daydream/graph.hpp"

namespace daydream::scenarios {

/// Scales the model's kernels outside the optimizer step (phase update) and a data pipeline
/// (phase data_loading) as autocast to `dtype` runs them on `device` (autocast_time_ratio), never
/// below the trace's shortest kernel; adds a note per kind of change. Returns the GEMMs and
/// convolutions (their weights are cast).
std::vector<TaskId> scale_on_device(Graph& graph, const DeviceSpec& device, Precision dtype,
                                    std::vector<std::string>& notes);

/// GradScaler (fp16): scaler.step() reads found_inf on the CPU (.item()), so the optimizer step
/// starts when the GPU has finished the backward pass. In each iteration, the first
/// optimizer-step task of the thread that launches the step's first kernel waits (sync edge) for
/// the GPU task before that kernel on its stream. Returns the count.
std::size_t insert_scaler_syncs(Graph& graph);

}  // namespace daydream::scenarios
