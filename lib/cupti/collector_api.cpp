// daydream::collector (include/daydream/collector.hpp): forwards start/stop/flush to the injected
// libdaydream_cupti.so through its C entry points (collector_c_api.h). The library is looked up
// with RTLD_NOLOAD, so this never loads CUPTI into a process that was not started with it.
#include "daydream/collector.hpp"

#include <dlfcn.h>

#include <array>
#include <cstdlib>

#include "cupti/collector_c_api.h"
#include "daydream/error.hpp"

#ifndef DAYDREAM_HAVE_CUPTI
#define DAYDREAM_HAVE_CUPTI 0
#endif

namespace daydream::collector {
namespace {

constexpr const char* kLibrary = "libdaydream_cupti.so";

/// The injected library, if loaded (by soname, else by the CUDA_INJECTION64_PATH it was loaded
/// from). Holds a reference only while in scope.
class InjectedLibrary {
 public:
  InjectedLibrary() {
    handle_ = dlopen(kLibrary, RTLD_LAZY | RTLD_NOLOAD);
    const char* path = std::getenv("CUDA_INJECTION64_PATH");
    if (!handle_ && path && *path) handle_ = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (handle_ && !symbol<daydream_collector_abi_version_fn>("daydream_collector_abi_version")) close();
  }
  ~InjectedLibrary() { close(); }
  InjectedLibrary(const InjectedLibrary&) = delete;
  InjectedLibrary& operator=(const InjectedLibrary&) = delete;

  explicit operator bool() const { return handle_ != nullptr; }

  template <class Fn>
  Fn symbol(const char* name) const {
    return handle_ ? reinterpret_cast<Fn>(dlsym(handle_, name)) : nullptr;
  }

  int abi_version() const { return symbol<daydream_collector_abi_version_fn>("daydream_collector_abi_version")(); }

 private:
  void close() {
    if (handle_) dlclose(handle_);
    handle_ = nullptr;
  }
  void* handle_ = nullptr;
};

[[noreturn]] void not_injected(const char* call) {
  std::string message = std::string("daydream collector ") + call + "(): " + kLibrary +
                        " is not loaded in this process. Start the program with "
                        "CUDA_INJECTION64_PATH=/path/to/libdaydream_cupti.so (or LD_PRELOAD=...), "
                        "see docs/collector.md";
  if (!DAYDREAM_HAVE_CUPTI)
    message += ". This daydream was built without CUPTI (DAYDREAM_WITH_CUPTI=OFF), so it has no "
               "libdaydream_cupti.so: rebuild with the CUDA toolkit's CUPTI installed";
  throw Error(message);
}

/// The injected library, checked: throws when it is absent or speaks another ABI.
const InjectedLibrary& checked(const InjectedLibrary& library, const char* call) {
  if (!library) not_injected(call);
  if (library.abi_version() != DAYDREAM_COLLECTOR_ABI_VERSION)
    throw Error(std::string("daydream collector ") + call + "(): the injected " + kLibrary +
                " comes from another daydream version (collector ABI " + std::to_string(library.abi_version()) +
                ", expected " + std::to_string(DAYDREAM_COLLECTOR_ABI_VERSION) + ")");
  return library;
}

using Text = std::array<char, 4096>;

std::string call_result(int status, const Text& text, const char* call) {
  if (status != 0) throw Error(std::string("daydream collector ") + call + "(): " + text.data());
  return text.data();
}

}  // namespace

bool available() { return static_cast<bool>(InjectedLibrary()); }

void start() {
  InjectedLibrary library;
  auto fn = checked(library, "start").symbol<daydream_collector_start_fn>("daydream_collector_start");
  Text text{};
  call_result(fn(text.data(), text.size()), text, "start");
}

void stop() {
  InjectedLibrary library;
  auto fn = checked(library, "stop").symbol<daydream_collector_stop_fn>("daydream_collector_stop");
  Text text{};
  call_result(fn(text.data(), text.size()), text, "stop");
}

std::string flush(const std::string& path) {
  InjectedLibrary library;
  auto fn = checked(library, "flush").symbol<daydream_collector_flush_fn>("daydream_collector_flush");
  Text text{};
  return call_result(fn(path.c_str(), text.data(), text.size()), text, "flush");
}

}  // namespace daydream::collector
