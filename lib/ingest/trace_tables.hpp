#pragma once
// The two tables every importer fills while it reads: interned names (Trace::strings) and lanes
// (Trace::lanes), each distinct value stored once and addressed by index.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "daydream/trace.hpp"

namespace daydream {

class TraceTables {
 public:
  /// `trace` must outlive the tables (an importer's own Trace member).
  explicit TraceTables(Trace& trace) : trace_(trace) {}

  /// Index of `text` in Trace::strings, appended on first use.
  std::uint32_t intern(std::string_view text) {
    if (auto it = strings_.find(text); it != strings_.end()) return it->second;
    const auto index = static_cast<std::uint32_t>(trace_.strings.size());
    trace_.strings.emplace_back(text);
    strings_.emplace(std::string(text), index);
    return index;
  }

  /// Index of the lane (kind, process, thread) in Trace::lanes, added (unnamed) on first use.
  std::uint32_t lane(LaneKind kind, std::int64_t process, std::int64_t thread) {
    auto [it, inserted] = lanes_.try_emplace(std::make_tuple(kind, process, thread),
                                             static_cast<std::uint32_t>(trace_.lanes.size()));
    if (inserted) trace_.lanes.push_back({kind, process, thread, {}});
    return it->second;
  }

 private:
  Trace& trace_;
  std::unordered_map<std::string, std::uint32_t, StringIndexHash, std::equal_to<>> strings_;
  std::map<std::tuple<LaneKind, std::int64_t, std::int64_t>, std::uint32_t> lanes_;
};

}  // namespace daydream
