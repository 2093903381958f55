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

struct LayerOptions {
  CommonOptions common;
  std::string layer_file;
  int depth = 0;
};
int run_layers(const LayerOptions& options);

}  // namespace daydream::cli
