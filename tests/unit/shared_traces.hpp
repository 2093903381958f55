#pragma once
// The real traces of ../shared/traces (DAYDREAM_SHARED_TRACES) for tests. When the folder is
// absent (CI without ../shared), tests call SKIP_WITHOUT_SHARED_TRACES() and are shown as skipped.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace daydream::test {

inline const std::filesystem::path kShared = DAYDREAM_SHARED_TRACES;

/// The Kineto traces of one folder (sorted), or the single file `relative` names.
inline std::vector<std::filesystem::path> traces_at(const std::string& relative) {
  namespace fs = std::filesystem;
  const fs::path path = kShared / relative;
  if (fs::is_regular_file(path)) return {path};
  std::vector<fs::path> files;
  if (fs::is_directory(path))
    for (const auto& entry : fs::directory_iterator(path))
      if (entry.is_regular_file() && entry.path().string().find(".json") != std::string::npos) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace daydream::test

// Catch2 v2 has no SKIP: warn visibly and leave the test case (ctest matches "absent: skipped").
#define SKIP_WITHOUT_SHARED_TRACES()                                                                       \
  do {                                                                                                     \
    if (!std::filesystem::is_directory(daydream::test::kShared)) {                                         \
      WARN("shared traces folder " << daydream::test::kShared.string() << " absent: skipped");            \
      return;                                                                                              \
    }                                                                                                      \
  } while (false)
