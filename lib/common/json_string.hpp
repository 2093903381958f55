#pragma once
// The one JSON string escaper of the library: reports, the Chrome-trace writer and the CUPTI
// collector's Kineto JSON all write names through it. Free of fmt so that the self-contained
// libdaydream_cupti.so can compile it too.
#include <string>
#include <string_view>

namespace daydream::json {

/// Appends `text` to `out` as a JSON string literal (quoted): `"` and `\` escaped, \n \t \r as
/// such, other control bytes as \u00XX, and bytes that are not valid UTF-8 (RFC 3629) replaced
/// by U+FFFD, so that the output is always valid JSON.
void append_string(std::string& out, std::string_view text);

/// `text` as a JSON string literal (see append_string).
std::string quoted(std::string_view text);

}  // namespace daydream::json
