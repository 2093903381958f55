// daydream: what-if analysis of DNN training performance from one trace (docs/cli.md).
#include "cli/run.hpp"
#include "common/huge_pages.hpp"

int main(int argc, char** argv) {
  (void)daydream::reserve_huge_page_heap();  // a one-shot process: its heap in huge pages
  return daydream::cli::run(argc, argv);
}
