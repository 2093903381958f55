#pragma once
// A minimal JSON writer with fixed number formatting, so output is identical byte for byte
// across runs and machines.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daydream/trace.hpp"

namespace daydream {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(std::int64_t number);
  JsonWriter& value(bool flag);
  JsonWriter& null();  ///< a value nobody knows (a failed row's, a missing price)
  /// Nanoseconds written as milliseconds, exactly (up to 6 decimals, trailing zeros trimmed).
  JsonWriter& milliseconds(TimeNs ns);
  /// A ratio with 6 decimals.
  JsonWriter& ratio(double value);
  /// A number as exactly as it reads: a whole number as an integer, any other with 6 decimals;
  /// +-inf and NaN as null.
  JsonWriter& number(double value);
  std::string str() const { return out_ + "\n"; }

 private:
  void separate();
  void write_string(std::string_view text);
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

/// "176.078" for 176078000 ns.
std::string format_ms(TimeNs ns);
/// For people: ms with a fixed 3 decimals (to the us, rounded half away from zero), "21.114" for
/// 21114094 ns, so that columns align.
std::string format_ms_us(TimeNs ns);

}  // namespace daydream
