// libdaydream_cupti.so's entry points: how the collector gets into an unmodified program, and the
// C functions daydream's start/stop API calls (collector_c_api.h).
//
//   CUDA_INJECTION64_PATH=.../libdaydream_cupti.so   the CUDA driver loads the library during
//                                                     cuInit and calls InitializeInjection().
//   LD_PRELOAD=.../libdaydream_cupti.so               on_load() sets CUDA_INJECTION64_PATH to this
//                                                     library, so the same happens at cuInit.
//   daydream_collector_* (the start/stop API)         initialize on first use (library loaded late).
//
// All end in initialize(), once per process: read DAYDREAM_* variables, point NVTX at CUPTI,
// register with CUPTI, start recording (immediate mode), and write the trace at exit.
//
// This is the one place with process-wide state: an injected library has no other owner. The
// objects are never destroyed, because CUPTI's thread and the atexit handler may run after
// static destructors.
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "cupti/collector_c_api.h"
#include "cupti/collector_session.hpp"
#include "cupti/cupti_source.hpp"

#define DAYDREAM_EXPORT extern "C" __attribute__((visibility("default")))

#ifndef DAYDREAM_VERSION
#define DAYDREAM_VERSION "unknown"
#endif

namespace daydream::cupti {
namespace {

struct Injected {
  explicit Injected(const CollectorOptions& options)
      : source(options), collector(source, options, TraceInfo{DAYDREAM_VERSION, static_cast<std::int64_t>(getpid())}) {}
  CuptiSource source;
  Collector collector;  // records flow source -> collector.recorder() once initialize() ran
};

Injected* g_injected = nullptr;
std::string g_init_failure;  // why CUPTI could not be used, for the C API's answers
std::once_flag g_once;

std::string path_of(const void* symbol) {
  Dl_info info{};
  return dladdr(symbol, &info) && info.dli_fname ? info.dli_fname : "";
}

// CUPTI receives NVTX ranges only when NVTX loads it as its tool (NVTX reads the variable at the
// program's first NVTX call, so this must happen before that call).
void point_nvtx_at_cupti() {
  const char* current = std::getenv("NVTX_INJECTION64_PATH");
  if (current && *current) return;
  const std::string cupti = path_of(reinterpret_cast<const void*>(&cuptiActivityEnable));
  if (!cupti.empty()) setenv("NVTX_INJECTION64_PATH", cupti.c_str(), 0);
}

void at_exit() {
  if (!g_injected) return;
  const Outcome written = g_injected->collector.finish();
  if (!written.ok) std::fprintf(stderr, "daydream-cupti: %s\n", written.message.c_str());
  else if (!written.message.empty()) std::fprintf(stderr, "daydream-cupti: trace written to %s\n", written.message.c_str());
}

void initialize_once() {
  std::vector<std::string> warnings;
  const auto getenv = [](const char* name) { return std::getenv(name); };
  const CollectorOptions options = options_from_environment(getenv, getpid(), &warnings);
  for (const auto& w : warnings) std::fprintf(stderr, "daydream-cupti: %s\n", w.c_str());
  if (options.nvtx) point_nvtx_at_cupti();
  auto* injected = new Injected(options);  // never deleted (see the file comment)
  if (const Outcome ready = injected->source.initialize(injected->collector.recorder()); !ready.ok) {
    g_init_failure = ready.message;
    std::fprintf(stderr, "daydream-cupti: %s; nothing will be recorded\n", ready.message.c_str());
    return;
  }
  g_injected = injected;
  std::atexit(at_exit);
  const Outcome begun = injected->collector.begin();
  if (!begun.ok) std::fprintf(stderr, "daydream-cupti: not recording: %s\n", begun.message.c_str());
  else
    std::fprintf(stderr, "daydream-cupti: %s; trace file %s\n",
                 options.start_mode == StartMode::manual ? "waiting for daydream.collector.start()" : "recording",
                 options.trace_path.c_str());
}

void initialize() {
  try {
    std::call_once(g_once, initialize_once);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "daydream-cupti: initialization failed: %s\n", e.what());
  }
}

std::string real_path(const char* path) {
  char resolved[PATH_MAX];
  return path && realpath(path, resolved) ? resolved : "";
}

// LD_PRELOAD puts the library into every process the program starts (shells, compilers,
// DataLoader workers), most of which never use CUDA. So the constructor only points the CUDA
// driver at this library; the driver then calls InitializeInjection in the processes that call
// cuInit. When CUDA_INJECTION64_PATH already names another tool, we initialize right away.
__attribute__((constructor)) void on_load() {
  const std::string self = path_of(reinterpret_cast<const void*>(&initialize));
  const char* injection = std::getenv("CUDA_INJECTION64_PATH");
  if (!injection || !*injection) {
    if (!self.empty()) setenv("CUDA_INJECTION64_PATH", self.c_str(), 0);
  } else if (real_path(injection) != real_path(self.c_str())) {
    std::fprintf(stderr, "daydream-cupti: CUDA_INJECTION64_PATH names another tool (%s); initializing at load\n",
                 injection);
    initialize();
    return;
  }
  const auto getenv = [](const char* name) { return std::getenv(name); };
  if (options_from_environment(getenv, getpid(), nullptr).nvtx) point_nvtx_at_cupti();  // before the first NVTX call
}

int answer(const Outcome& outcome, char* text, std::size_t capacity) {
  if (text && capacity) {
    std::strncpy(text, outcome.message.c_str(), capacity - 1);
    text[capacity - 1] = '\0';
  }
  return outcome.ok ? 0 : 1;
}

template <class Call>
int session_call(Call call, char* text, std::size_t capacity) {
  try {
    initialize();
    if (!g_injected)
      return answer(Outcome::failure(g_init_failure.empty() ? "CUPTI could not be initialized in this process"
                                                            : g_init_failure),
                    text, capacity);
    return answer(call(g_injected->collector), text, capacity);
  } catch (const std::exception& e) {
    return answer(Outcome::failure(e.what()), text, capacity);
  }
}

}  // namespace
}  // namespace daydream::cupti

using daydream::cupti::Collector;

/// Called by the CUDA driver during cuInit when CUDA_INJECTION64_PATH names this library.
DAYDREAM_EXPORT int InitializeInjection(void) {
  daydream::cupti::initialize();
  return 1;
}

DAYDREAM_EXPORT int daydream_collector_abi_version(void) { return DAYDREAM_COLLECTOR_ABI_VERSION; }

DAYDREAM_EXPORT int daydream_collector_start(char* text, size_t capacity) {
  return daydream::cupti::session_call([](Collector& c) { return c.start(); }, text, capacity);
}

DAYDREAM_EXPORT int daydream_collector_stop(char* text, size_t capacity) {
  return daydream::cupti::session_call([](Collector& c) { return c.stop(); }, text, capacity);
}

DAYDREAM_EXPORT int daydream_collector_flush(const char* path, char* text, size_t capacity) {
  const std::string target = path ? path : "";
  return daydream::cupti::session_call([&](Collector& c) { return c.flush(target); }, text, capacity);
}
