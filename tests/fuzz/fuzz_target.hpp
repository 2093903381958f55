#pragma once
// What every fuzz target checks (docs/reliability.md): an input either goes through or is refused
// with a daydream::Error; any other exception is a bug and aborts, so that libFuzzer (and the
// regression replay, tests/fuzz/replay_main.cpp) report it. Crashes, sanitizer reports, hangs
// and runaway memory are caught by the tools themselves.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <unistd.h>  // getpid

#include "daydream/error.hpp"

namespace daydream::fuzz {

template <class Body>
void expect_clean(Body body) {
  try {
    body();
  } catch (const Error&) {
    // bad input refused with a message naming what is wrong: the expected outcome
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: not a daydream::Error: %s\n", e.what());
    std::abort();
  }
}

/// The bytes as a file (readers that take paths), removed when this goes out of scope.
class TemporaryInput {
 public:
  TemporaryInput(const std::uint8_t* data, std::size_t size, const char* suffix) {
    path_ = std::filesystem::temp_directory_path() /
            ("daydream-fuzz-" + std::to_string(static_cast<unsigned long>(::getpid())) + suffix);
    std::ofstream(path_, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  ~TemporaryInput() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  TemporaryInput(const TemporaryInput&) = delete;
  TemporaryInput& operator=(const TemporaryInput&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace daydream::fuzz
