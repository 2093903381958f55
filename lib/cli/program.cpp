// daydream: what-if analysis of DNN training performance from one trace (docs/cli.md).
#include "cli/run.hpp"

int main(int argc, char** argv) { return daydream::cli::run(argc, argv); }
