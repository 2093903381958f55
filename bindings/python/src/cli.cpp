// _core._run_cli: the `daydream` command line inside Python, for `python -m daydream`
// (daydream/__main__.py). It is the same code as the `daydream` program (lib/cli, cli/run.hpp).
#include <pybind11/stl.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common.hpp"
#ifdef DAYDREAM_HAVE_CLI
#include "cli/run.hpp"
#endif

namespace daydream::python {
namespace {

#ifdef DAYDREAM_HAVE_CLI
/// Runs the command line on argv (argv[0]: the program name) without the GIL and returns its exit
/// status. The CLI writes with C stdio; Python's own buffered output is flushed first so the two
/// never interleave out of order.
int run_cli(std::vector<std::string> args) {
  py::module_::import("sys").attr("stdout").attr("flush")();
  py::module_::import("sys").attr("stderr").attr("flush")();
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int status = 0;
  {
    py::gil_scoped_release release;
    status = cli::run(static_cast<int>(args.size()), argv.data());
    std::fflush(stdout);
    std::fflush(stderr);
  }
  return status;
}
#endif

}  // namespace

void init_cli(py::module_& m) {
#ifdef DAYDREAM_HAVE_CLI
  m.def("_run_cli", &run_cli, py::arg("argv"),
        "Runs the daydream command line (argv[0] is the program name) and returns its exit status. "
        "Use `python -m daydream` instead.");
#else
  (void)m;  // built without the CLI (DAYDREAM_BUILD_CLI=OFF): daydream/__main__.py says so
#endif
}

}  // namespace daydream::python
