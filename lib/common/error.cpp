#include "daydream/error.hpp"

#include <fmt/format.h>

namespace daydream {
namespace {

std::string compose(const std::string& file, std::int64_t event_index, const std::string& field,
                    const std::string& problem) {
  std::string message = file.empty() ? std::string{} : file + ": ";
  if (event_index != Error::kNoEvent) message += fmt::format("event #{}: ", event_index);
  if (!field.empty()) message += fmt::format("field \"{}\": ", field);
  return message + problem;
}

}  // namespace

Error::Error(const std::string& message) : std::runtime_error(message) {}

Error::Error(std::string file, std::int64_t event_index, std::string field, const std::string& problem)
    : std::runtime_error(compose(file, event_index, field, problem)),
      file_(std::move(file)),
      event_index_(event_index),
      field_(std::move(field)) {}

}  // namespace daydream
