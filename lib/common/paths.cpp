#include "common/paths.hpp"

#include <algorithm>
#include <system_error>

#include "daydream/error.hpp"

namespace daydream {
namespace {

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& reason) {
  throw Error(path.string(), Error::kNoEvent, "", reason);
}

}  // namespace

PathKind path_kind(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) refuse(path, ec.message());
  if (!std::filesystem::exists(status)) refuse(path, "no such file or directory");
  if (std::filesystem::is_directory(status)) return PathKind::directory;
  if (std::filesystem::is_regular_file(status)) return PathKind::file;
  refuse(path, "neither a file nor a directory");
}

std::vector<std::filesystem::path> files_in(const std::filesystem::path& directory,
                                            const std::function<bool(const std::filesystem::path&)>& wanted) {
  std::error_code ec;
  std::filesystem::directory_iterator it(directory, ec);
  if (ec) refuse(directory, "cannot list the directory: " + ec.message());
  std::vector<std::filesystem::path> files;
  for (const std::filesystem::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) refuse(directory, "cannot list the directory: " + ec.message());
    if (!wanted(it->path())) continue;
    std::error_code entry_ec;
    const bool regular = it->is_regular_file(entry_ec);
    if (entry_ec) refuse(it->path(), entry_ec.message());
    if (regular) files.push_back(it->path());
  }
  if (ec) refuse(directory, "cannot list the directory: " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace daydream
