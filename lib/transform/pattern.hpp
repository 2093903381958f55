#pragma once
// TaskFilter-style patterns (transform.hpp), compiled once for the filters and the range windows.
#include <regex>
#include <string>
#include <string_view>

namespace daydream {

/// An ECMAScript regular expression; a leading "(?i)" (as in Python's re) makes it
/// case-insensitive. Throws Error "invalid <what> pattern '...': ..." for a bad one.
std::regex compile_pattern(const std::string& pattern, std::string_view what);

}  // namespace daydream
