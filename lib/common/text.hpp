#pragma once
// Small text and statistics helpers shared by the importers and reports.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daydream/trace.hpp"

namespace daydream::text {

/// Parses a JSON number token given in microseconds ("1712195495519695.8", "63.813", "12",
/// "1.5e3") into integer nanoseconds, exactly for up to three fractional digits and rounded
/// half away from zero beyond. Returns nullopt when the token is not a finite number.
std::optional<TimeNs> microseconds_to_ns(std::string_view token);

/// A value as an integer when it is a whole number a double holds exactly (|value| <= 2^53), so
/// that a canonical `25MiB` prints as 26214400; nullopt otherwise (fractions, +-inf, NaN).
std::optional<std::int64_t> exact_integer(double value);

/// Parses the trailing integer of strings such as "stream 7" or "25738".
std::optional<std::int64_t> trailing_integer(std::string_view text);

bool starts_with(std::string_view text, std::string_view prefix);
bool contains(std::string_view text, std::string_view part);
bool contains_ignore_case(std::string_view text, std::string_view lowercase_part);

/// Which middle value a median of an even count takes.
enum class EvenCount : std::uint8_t {
  lower,  ///< the graph builder's calibration, the reports (a latency seen, never an average)
  upper,  ///< the scenarios' typical durations (Python's statistics.median_high)
};
/// The one median of the library: the middle value, for an even count the lower or upper of the
/// two middle ones; 0 for none.
TimeNs median(std::vector<TimeNs> values, EvenCount even = EvenCount::lower);

/// `name` lower-cased without underscores: "all_reduce" and "AllReduce" compare equal.
std::string squashed(std::string_view name);
/// The value at index (n - 1) / parts of the sorted values (parts 2: median, 4: lower quartile);
/// reorders `values`; 0 when empty.
TimeNs lower_quantile(std::vector<TimeNs>& values, std::size_t parts);

// --- numbers in notes ---

/// "24" when every count is the same, else "20-24" (lowest-highest); "0" for none.
std::string count_range(const std::vector<std::size_t>& counts);
/// `ns` in milliseconds, for the notes' "{:.3f} ms".
inline double milliseconds(TimeNs ns) { return static_cast<double>(ns) / 1e6; }
/// `bytes` in decimal megabytes with two decimals: "25.20 MB".
std::string megabytes(double bytes);
/// megabytes() of the value when all are the same, else "1.00 MB to 2.00 MB" (lowest to highest);
/// "0.00 MB" for none.
std::string megabytes_range(const std::vector<std::int64_t>& bytes);
/// The bandwidth of a link of `ns_per_byte` (model.hpp) to three significant digits: "12.5 GB/s";
/// "infinite" for 0.
std::string bandwidth_text(double ns_per_byte);

}  // namespace daydream::text
