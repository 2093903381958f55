// daydream_cupti_smoke LIBRARY: loads libdaydream_cupti.so the way the CUDA driver does (dlopen,
// then InitializeInjection) and drives it through daydream::collector. On a machine without a
// GPU, CUPTI must fail with messages and without ending the process; with a GPU, start/stop/flush
// must work. Either way daydream::collector must find the loaded library. Exit 0 on success.
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "daydream/collector.hpp"
#include "daydream/error.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s path/to/libdaydream_cupti.so\n", argv[0]);
    return 2;
  }
  const std::string trace = "/tmp/daydream_cupti_smoke_" + std::to_string(getpid()) + ".json";
  setenv("DAYDREAM_TRACE_FILE", trace.c_str(), 1);
  if (daydream::collector::available()) {
    std::fprintf(stderr, "FAIL: collector reported available before the library was loaded\n");
    return 1;
  }
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    std::fprintf(stderr, "FAIL: dlopen: %s\n", dlerror());
    return 1;
  }
  auto initialize = reinterpret_cast<int (*)()>(dlsym(library, "InitializeInjection"));
  if (!initialize || initialize() != 1) {
    std::fprintf(stderr, "FAIL: InitializeInjection missing or did not return 1\n");
    return 1;
  }
  if (!daydream::collector::available()) {
    std::fprintf(stderr, "FAIL: daydream::collector does not find the loaded library\n");
    return 1;
  }
  try {
    daydream::collector::start();
    daydream::collector::stop();
    std::printf("collector works here (CUPTI usable): wrote %s\n", daydream::collector::flush(trace).c_str());
    std::remove(trace.c_str());
  } catch (const daydream::Error& e) {
    std::printf("collector failed cleanly (expected without a GPU): %s\n", e.what());
  }
  std::printf("ok\n");
  return 0;
}
