#include "common/text.hpp"

#include <fmt/format.h>

#include <bit>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace daydream::text {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Slow path for exponents: exact enough (double) and rare in traces.
std::optional<TimeNs> via_double(std::string_view token) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc{} || ptr != token.data() + token.size() || !std::isfinite(value)) return std::nullopt;
  const double ns = std::round(value * 1000.0);
  if (std::abs(ns) > 9.2e18) return std::nullopt;
  return static_cast<TimeNs>(ns);
}

}  // namespace

namespace {

/// The most whole microseconds a fixed-point token may hold: their nanoseconds plus a fraction's
/// (up to 999 ns, rounded up to 1,000) fit in 64 bits.
constexpr std::int64_t kMaxWholeMicroseconds = (std::numeric_limits<std::int64_t>::max() - 1000) / 1000;

/// Whether the 8 bytes at p are all ASCII digits (SWAR: each byte's high nibble is 3 and adding 6
/// carries into it for none of them).
bool eight_digits(const char* p) {
  std::uint64_t bytes;
  std::memcpy(&bytes, p, 8);
  return ((bytes & 0xF0F0F0F0F0F0F0F0) | (((bytes + 0x0606060606060606) & 0xF0F0F0F0F0F0F0F0) >> 4)) ==
         0x3333333333333333;
}

/// The number the 8 digits at p write (little-endian SWAR: pairs, then quads, then the eight).
std::int64_t value_of_eight_digits(const char* p) {
  std::uint64_t bytes;
  std::memcpy(&bytes, p, 8);
  if constexpr (std::endian::native == std::endian::big) bytes = __builtin_bswap64(bytes);
  bytes = ((bytes & 0x0F0F0F0F0F0F0F0F) * 2561) >> 8;
  bytes = ((bytes & 0x00FF00FF00FF00FF) * 6553601) >> 16;
  return static_cast<std::int64_t>(((bytes & 0x0000FFFF0000FFFF) * 42949672960001) >> 32);
}

// Digits with an optional sign and fraction, the form traces write: microseconds to ns, rounded
// half up at the fourth decimal. nullopt for anything else (an exponent included).
std::optional<TimeNs> fixed_point_microseconds(std::string_view token) {
  std::size_t i = 0;
  const bool negative = token[0] == '-';
  if (negative) ++i;
  if (i >= token.size() || !is_digit(token[i])) return std::nullopt;
  std::int64_t whole = 0;
  // Eight digits at a time while they last (a trace's timestamps have sixteen), then one by one;
  // whole stays below kMaxWholeMicroseconds, so neither step nor the conversion overflows.
  for (; i + 8 <= token.size() && eight_digits(token.data() + i); i += 8) {
    if (whole > kMaxWholeMicroseconds / 100'000'000) return std::nullopt;
    whole = whole * 100'000'000 + value_of_eight_digits(token.data() + i);
  }
  for (; i < token.size() && is_digit(token[i]); ++i) {
    if (whole > kMaxWholeMicroseconds / 10) return std::nullopt;
    whole = whole * 10 + (token[i] - '0');
  }
  if (whole > kMaxWholeMicroseconds) return std::nullopt;
  std::int64_t fraction_ns = 0;
  if (i < token.size() && token[i] == '.') {
    ++i;
    int digits = 0;
    bool round_up = false;
    for (; i < token.size() && is_digit(token[i]); ++i, ++digits) {
      if (digits < 3) fraction_ns = fraction_ns * 10 + (token[i] - '0');
      else if (digits == 3) round_up = token[i] >= '5';
    }
    if (digits == 0) return std::nullopt;
    for (int d = digits; d < 3; ++d) fraction_ns *= 10;
    if (round_up) ++fraction_ns;
  }
  if (i != token.size()) return std::nullopt;
  const TimeNs ns = whole * 1000 + fraction_ns;
  return negative ? -ns : ns;
}

bool has_exponent(std::string_view token) {
  return token.find('e') != std::string_view::npos || token.find('E') != std::string_view::npos;
}

}  // namespace

// The fixed-point form first: a token it reads whole has no exponent, and only a token it
// rejects is searched for one (a search per token was a tenth of parsing a trace).
std::optional<TimeNs> microseconds_to_ns(std::string_view token) {
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' ||
                            token.back() == '\t'))
    token.remove_suffix(1);
  if (token.empty()) return std::nullopt;
  if (auto ns = fixed_point_microseconds(token)) return ns;
  if (has_exponent(token)) return via_double(token);
  return std::nullopt;
}

std::optional<std::int64_t> exact_integer(double value) {
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53: every integer up to it is a double
  if (std::isfinite(value) && value == std::floor(value) && std::abs(value) <= kExactIntegers)
    return static_cast<std::int64_t>(value);
  return std::nullopt;
}

std::optional<std::int64_t> trailing_integer(std::string_view text) {
  std::size_t end = text.size();
  while (end > 0 && text[end - 1] == ' ') --end;
  std::size_t begin = end;
  while (begin > 0 && is_digit(text[begin - 1])) --begin;
  if (begin > 0 && text[begin - 1] == '-') --begin;
  if (begin == end) return std::nullopt;
  std::int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data() + begin, text.data() + end, value);
  if (ec != std::errc{} || ptr != text.data() + end) return std::nullopt;
  return value;
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

bool contains_ignore_case(std::string_view text, std::string_view lowercase_part) {
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  return std::search(text.begin(), text.end(), lowercase_part.begin(), lowercase_part.end(),
                     [&](char a, char b) { return lower(a) == b; }) != text.end();
}

TimeNs median(std::vector<TimeNs> values, EvenCount even) {
  if (values.empty() || even == EvenCount::lower) return lower_quantile(values, 2);
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

std::string squashed(std::string_view name) {
  std::string key;
  for (char c : name)
    if (c != '_') key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return key;
}

TimeNs lower_quantile(std::vector<TimeNs>& values, std::size_t parts) {
  if (values.empty()) return 0;
  const auto at = values.begin() + static_cast<std::ptrdiff_t>((values.size() - 1) / parts);
  std::nth_element(values.begin(), at, values.end());
  return *at;
}

std::string count_range(const std::vector<std::size_t>& counts) {
  if (counts.empty()) return "0";
  const auto [low, high] = std::minmax_element(counts.begin(), counts.end());
  return *low == *high ? fmt::format("{}", *low) : fmt::format("{}-{}", *low, *high);
}

std::string megabytes(double bytes) { return fmt::format("{:.2f} MB", bytes / 1e6); }

std::string megabytes_range(const std::vector<std::int64_t>& bytes) {
  if (bytes.empty()) return megabytes(0);
  const auto [low, high] = std::minmax_element(bytes.begin(), bytes.end());
  const std::string text = megabytes(static_cast<double>(*low));
  return *low == *high ? text : text + " to " + megabytes(static_cast<double>(*high));
}

std::string bandwidth_text(double ns_per_byte) {
  return ns_per_byte > 0 ? fmt::format("{:.3g} GB/s", 1.0 / ns_per_byte) : std::string("infinite");
}

}  // namespace daydream::text
