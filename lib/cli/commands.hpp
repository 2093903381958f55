#pragma once
// The CLI's commands: thin wrappers that load, build, simulate and print.

#include <string>

namespace daydream::cli {

struct CommonOptions {
  std::string trace;
  bool json = false;
};

int run_replay(const CommonOptions& options);
int run_stats(const CommonOptions& options);

}  // namespace daydream::cli
