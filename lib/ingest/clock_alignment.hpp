#pragma once
// Removes a constant offset between a device's GPU clock and the CPU clock (clock_alignment.cpp).

#include "daydream/trace.hpp"

namespace daydream {

/// Shifts each device's GPU activities by the offset causality shows (counted in the report).
void align_gpu_clocks(Trace& trace);

}  // namespace daydream
