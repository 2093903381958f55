#pragma once
// What an input path is, with the system's reason when it cannot be read: every place that takes
// a trace, a folder or a layer file asks here, so a symlink loop or a missing permission is bad
// input (daydream::Error naming the path), never an internal error.

#include <filesystem>
#include <functional>
#include <vector>

namespace daydream {

enum class PathKind { file, directory };

/// Whether `path` is a regular file or a directory (following symlinks). Throws Error naming
/// the path, with the reason ("no such file or directory", "too many levels of symbolic links",
/// "permission denied", "neither a file nor a directory"), when it is neither or cannot be
/// examined.
PathKind path_kind(const std::filesystem::path& path);

/// The regular files directly inside `directory` (symlinks followed) whose path `wanted` accepts,
/// sorted. Throws Error naming the directory when it cannot be listed, and naming the entry when
/// a wanted one cannot be examined (a dangling symlink, a symlink loop).
std::vector<std::filesystem::path> files_in(const std::filesystem::path& directory,
                                            const std::function<bool(const std::filesystem::path&)>& wanted);

}  // namespace daydream
