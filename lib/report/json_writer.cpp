#include "report/json_writer.hpp"

#include "common/json_string.hpp"
#include "common/text.hpp"

#include <fmt/format.h>

#include <cmath>

namespace daydream {

namespace {

/// |ns| without overflow at the lowest TimeNs.
std::uint64_t magnitude_of(TimeNs ns) {
  return ns < 0 ? static_cast<std::uint64_t>(-(ns + 1)) + 1 : static_cast<std::uint64_t>(ns);
}

}  // namespace

std::string format_ms(TimeNs ns) {
  const bool negative = ns < 0;
  const std::uint64_t magnitude = magnitude_of(ns);
  std::string fraction = fmt::format("{:06d}", magnitude % 1'000'000);
  while (fraction.size() > 1 && fraction.back() == '0') fraction.pop_back();
  return fmt::format("{}{}.{}", negative ? "-" : "", magnitude / 1'000'000, fraction);
}

std::string format_ms_us(TimeNs ns) {
  const std::uint64_t magnitude = magnitude_of(ns);
  const std::uint64_t us = magnitude / 1000 + (magnitude % 1000 >= 500 ? 1 : 0);
  return fmt::format("{}{}.{:03d}", ns < 0 && us > 0 ? "-" : "", us / 1000, us % 1000);
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ", ";
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_ += '{';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  out_ += '}';
  first_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  separate();
  out_ += '[';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  out_ += ']';
  first_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::key(std::string_view name) {
  separate();
  write_string(name);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  separate();
  write_string(text);
  return *this;
}

void JsonWriter::write_string(std::string_view text) { json::append_string(out_, text); }

JsonWriter& JsonWriter::value(std::int64_t number) {
  separate();
  out_ += std::to_string(number);
  return *this;
}
JsonWriter& JsonWriter::value(bool flag) {
  separate();
  out_ += flag ? "true" : "false";
  return *this;
}
JsonWriter& JsonWriter::milliseconds(TimeNs ns) {
  separate();
  out_ += format_ms(ns);
  return *this;
}
JsonWriter& JsonWriter::null() {
  separate();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::number(double v) {
  if (const auto whole = text::exact_integer(v)) return value(*whole);
  return ratio(v);
}

JsonWriter& JsonWriter::ratio(double v) {
  separate();
  out_ += std::isfinite(v) ? fmt::format("{:.6f}", v) : "null";
  return *this;
}

}  // namespace daydream
