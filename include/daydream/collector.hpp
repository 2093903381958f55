#pragma once
/// @file collector.hpp
/// @brief Start and stop daydream's CUPTI collector from inside the traced program, to record
/// only chosen iterations.
///
/// The collector itself is `libdaydream_cupti.so`, injected into an unmodified program with
/// `CUDA_INJECTION64_PATH=.../libdaydream_cupti.so` (or `LD_PRELOAD`); see docs/collector.md.
/// These functions talk to that injected library. Without it (not injected, or daydream built
/// without CUPTI) start(), stop() and flush() throw daydream::Error saying how to inject it;
/// available() tells beforehand.
///
/// @code
///   for (int step = 0; step < steps; ++step) {
///     if (step == 10) daydream::collector::start();
///     train_one_step();
///     if (step == 12) { cudaDeviceSynchronize(); daydream::collector::stop(); }
///   }
///   daydream::collector::flush("three_steps.json");  // else written at exit (DAYDREAM_TRACE_FILE)
/// @endcode

#include <string>

namespace daydream::collector {

/// Whether libdaydream_cupti.so is loaded in this process (so start/stop/flush can work).
bool available();

/// Opens a recording window. The first call narrows a whole-run recording to windows: only
/// activity inside [start(), stop()) windows is kept (a GPU task goes with its launch call).
/// Throws daydream::Error when the collector is not injected, CUPTI cannot be enabled, or a
/// window is already open.
void start();

/// Closes the recording window. Call it after synchronizing the GPU (e.g.
/// torch.cuda.synchronize()) so that the window's GPU work has completed. Throws daydream::Error
/// when the collector is not injected or no window is open.
void stop();

/// Writes what was recorded so far to `path` (DAYDREAM_TRACE_FILE, default
/// daydream_trace_<pid>.json, when empty), forgets it, and returns the path written. Throws
/// daydream::Error when the collector is not injected or the file cannot be written.
std::string flush(const std::string& path = "");

}  // namespace daydream::collector
