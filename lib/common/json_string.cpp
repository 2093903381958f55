#include "common/json_string.hpp"

namespace daydream::json {
namespace {

/// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is not valid UTF-8.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // allowed range of the second byte (RFC 3629)
  if (lead >= 0xc2 && lead <= 0xdf) length = 2;
  else if (lead >= 0xe0 && lead <= 0xef) length = 3, low = lead == 0xe0 ? 0xa0 : 0x80, high = lead == 0xed ? 0x9f : 0xbf;
  else if (lead >= 0xf0 && lead <= 0xf4) length = 4, low = lead == 0xf0 ? 0x90 : 0x80, high = lead == 0xf4 ? 0x8f : 0xbf;
  if (length == 0 || i + length > text.size() || byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return length;
}

void append_ascii(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  switch (c) {
    case '"': out += "\\\""; return;
    case '\\': out += "\\\\"; return;
    case '\n': out += "\\n"; return;
    case '\t': out += "\\t"; return;
    case '\r': out += "\\r"; return;
    default: break;
  }
  if (c >= 0x20) {
    out += static_cast<char>(c);
    return;
  }
  out += "\\u00";
  out += kHex[c >> 4];
  out += kHex[c & 0xf];
}

}  // namespace

void append_string(std::string& out, std::string_view text) {
  out += '"';
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      append_ascii(out, byte);
      ++i;
      continue;
    }
    const std::size_t length = utf8_length(text, i);
    if (length == 0) out += "\xef\xbf\xbd", ++i;  // U+FFFD REPLACEMENT CHARACTER
    else out.append(text, i, length), i += length;
  }
  out += '"';
}

std::string quoted(std::string_view text) {
  std::string out;
  append_string(out, text);
  return out;
}

}  // namespace daydream::json
