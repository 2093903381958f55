#pragma once
// Removes a constant offset between a device's GPU clock and the CPU clock, then checks that the
// trace's times are within what daydream accepts (clock_alignment.cpp).

#include "daydream/trace.hpp"

namespace daydream {

/// Shifts each device's GPU activities by the offset causality shows (counted in the report).
void align_gpu_clocks(Trace& trace);

/// Throws Error (naming the file and event) unless every event's start and end lie strictly
/// within +-kMaxTraceTimeNs and the trace spans at most kMaxTraceTimeNs (trace.hpp): the last
/// step of every reader, after the clocks moved.
void check_trace_times(const Trace& trace);

}  // namespace daydream
