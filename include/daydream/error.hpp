#pragma once
/// @file error.hpp
/// @brief The one exception type of daydream: it names the file, the event and the field at fault.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace daydream {

/// @brief Raised for input that cannot be read (corrupt or truncated files, missing fields) and
/// for requests that would make a graph invalid (cycles, dangling edges).
///
/// `what()` is a complete, human-readable message, e.g.
/// `trace.json.gz: event #41 (cat "kernel"): field "args.stream": missing`.
class Error : public std::runtime_error {
 public:
  static constexpr std::int64_t kNoEvent = -1;

  explicit Error(const std::string& message);
  Error(std::string file, std::int64_t event_index, std::string field, const std::string& problem);

  /// The file being read, or empty when the error is not about a file.
  const std::string& file() const noexcept { return file_; }
  /// Zero-based index of the offending event in the file's event list, or kNoEvent.
  std::int64_t event_index() const noexcept { return event_index_; }
  /// The offending field (dotted path such as `args.stream`), or empty.
  const std::string& field() const noexcept { return field_; }

 private:
  std::string file_;
  std::int64_t event_index_ = kNoEvent;
  std::string field_;
};

}  // namespace daydream
