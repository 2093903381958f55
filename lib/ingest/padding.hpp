#pragma once
#include <cstddef>

namespace daydream {
// Spare bytes kept after every decoded input so simdjson can read past the end (SIMDJSON_PADDING).
inline constexpr std::size_t kInputPadding = 64;
}  // namespace daydream
