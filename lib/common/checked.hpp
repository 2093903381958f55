#pragma once
// Checked arithmetic on times (ns) and sizes (bytes, elements): the few helpers every sum,
// difference and product of values read from a trace or given by a user goes through, so that
// none wraps around a 64-bit integer (undefined behaviour, and in a Release build a silently
// wrong number such as a negative busy time). Each returns nullopt where the exact result does
// not fit; callers turn that into an Error naming what they were computing.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <optional>

#include "daydream/error.hpp"
#include "daydream/trace.hpp"

namespace daydream::checked {

inline std::optional<std::int64_t> add(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

inline std::optional<std::int64_t> sub(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_sub_overflow(a, b, &out)) return std::nullopt;
  return out;
}

inline std::optional<std::int64_t> mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// `ns` (a double, e.g. a duration scaled by a factor or a cost model's output) rounded to whole
/// ns; nullopt when it is not finite or not a time daydream accepts (|t| < 2^62 ns), where
/// llround would be undefined or the result unusable.
inline std::optional<TimeNs> round_ns(double ns) {
  if (!std::isfinite(ns) || std::abs(ns) >= static_cast<double>(kMaxTraceTimeNs)) return std::nullopt;
  return static_cast<TimeNs>(std::llround(ns));
}

/// A duration in ns rounded from a double; nullopt when negative, not finite or over one day
/// (kMaxTaskDurationNs), the longest a task may last.
inline std::optional<TimeNs> round_duration_ns(double ns) {
  if (!(ns >= 0) || ns > static_cast<double>(kMaxTaskDurationNs)) return std::nullopt;
  return static_cast<TimeNs>(std::llround(ns));
}

/// `ns` as a task duration, or Error "<what()> would last <ns> ns, longer than one day (the
/// longest a task may last)": the one check of every duration a model computes. `what` (a
/// callable returning the description) runs only on failure, so hot loops format nothing.
template <class Describe>
TimeNs task_duration(double ns, Describe what) {
  if (const auto rounded = round_duration_ns(ns)) return *rounded;
  throw Error(fmt::format("{} would last {:g} ns, longer than one day (the longest a task may last)", what(), ns));
}

/// A double rounded to an integer when it is finite and within +-2^62 (well inside int64, so the
/// callers' further arithmetic has headroom); nullopt otherwise.
inline std::optional<std::int64_t> round_integer(double value) { return round_ns(value); }

}  // namespace daydream::checked
