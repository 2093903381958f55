// daydream.collector: start/stop/flush of the injected CUPTI collector (libdaydream_cupti.so),
// the Python face of include/daydream/collector.hpp. See docs/collector.md.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <optional>
#include <string>

#include "common.hpp"
#include "daydream/collector.hpp"

namespace daydream::python {
namespace {

std::string flush(const std::optional<std::filesystem::path>& path) {
  py::gil_scoped_release release;  // CUPTI delivers its buffers and the trace is written
  return collector::flush(path ? path->string() : std::string());
}

}  // namespace

void init_collector(py::module_& m) {
  auto c = m.def_submodule(
      "collector",
      "Start and stop daydream's CUPTI collector from the traced program, to record chosen iterations. The "
      "collector is libdaydream_cupti.so, injected with CUDA_INJECTION64_PATH (or LD_PRELOAD); without it "
      "start/stop/flush raise daydream.Error. See docs/collector.md.");
  c.def("available", &collector::available,
        "True when libdaydream_cupti.so is loaded in this process, so that start/stop/flush can work.");
  c.def(
      "start", [] { py::gil_scoped_release release; collector::start(); },
      "Opens a recording window. The first call narrows a whole-run recording to windows: only activity inside "
      "start()/stop() windows is kept (a GPU task goes with its launch call). Raises daydream.Error when the "
      "collector is not injected, CUPTI cannot be enabled, or a window is already open.");
  c.def(
      "stop", [] { py::gil_scoped_release release; collector::stop(); },
      "Closes the recording window. Call torch.cuda.synchronize() first so that the window's GPU work has "
      "completed. Raises daydream.Error when the collector is not injected or no window is open.");
  c.def("flush", &flush, py::arg("path") = py::none(),
        "Writes what was recorded so far to path (None: $DAYDREAM_TRACE_FILE, default "
        "daydream_trace_<pid>.json), forgets it, and returns the path written (a Kineto-style Chrome-trace JSON "
        "file that daydream.load() reads). Raises daydream.Error when the collector is not injected or the file "
        "cannot be written.");
}

}  // namespace daydream::python
