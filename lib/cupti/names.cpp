#include "cupti/names.hpp"

#include <cxxabi.h>

#include <array>
#include <cstdlib>
#include <memory>

namespace daydream::cupti {
namespace {

std::string_view copy_kind_text(MemcpyKind kind) {
  static constexpr std::array<std::string_view, 11> kText = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                                             "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  const auto index = static_cast<std::size_t>(kind);
  return index < kText.size() ? kText[index] : kText[0];
}

std::string_view memory_kind_text(MemoryKind kind) {
  static constexpr std::array<std::string_view, 8> kText = {"Unknown", "Pageable", "Pinned",        "Device",
                                                            "Array",   "Managed",  "Device Static", "Managed Static"};
  const auto index = static_cast<std::size_t>(kind);
  return index < kText.size() ? kText[index] : kText[0];
}

bool all_digits(std::string_view text) {
  for (char c : text)
    if (c < '0' || c > '9') return false;
  return !text.empty();
}

}  // namespace

std::string_view normalize_api_name(std::string_view callback_name) {
  const auto cut = callback_name.rfind("_v");
  if (cut == std::string_view::npos || cut == 0) return callback_name;
  const auto version = callback_name.substr(cut + 2);
  return version.size() >= 4 && all_digits(version) ? callback_name.substr(0, cut) : callback_name;
}

std::string memcpy_name(MemcpyKind kind, MemoryKind src, MemoryKind dst) {
  std::string name = "Memcpy ";
  name += copy_kind_text(kind);
  name += " (";
  name += memory_kind_text(src);
  name += " -> ";
  name += memory_kind_text(dst);
  return name + ")";
}

std::string memset_name(MemoryKind kind) {
  std::string name = "Memset (";
  name += memory_kind_text(kind);
  return name + ")";
}

std::string_view sync_kind_name(SyncType type) {
  switch (type) {
    case SyncType::event_synchronize: return "Event Sync";
    case SyncType::stream_wait_event: return "Stream Wait Event";
    case SyncType::stream_synchronize: return "Stream Sync";
    case SyncType::context_synchronize: return "Context Sync";
    default: return "Unknown";
  }
}

std::string demangle(std::string_view name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return std::string(name);
  const std::string mangled(name);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                                   &std::free);
  return status == 0 && text ? std::string(text.get()) : mangled;
}

}  // namespace daydream::cupti
