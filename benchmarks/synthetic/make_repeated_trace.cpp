// daydream_make_repeated_trace: a large synthetic Kineto trace made of K copies of a real one.
//
//   daydream_make_repeated_trace [--gap-us G] INPUT.json[.gz] K OUTPUT.json
//
// Copy k (0-based) of every event is the original event's JSON text with, patched in place:
//   ts                      + k * period, period = (max end - min start over the events with a ts,
//                           metadata excluded) + G us (default 1000), rounded up to whole us
//   args.correlation,       + k * C (C: a power of ten above every correlation and flow id, which
//   args.wait_on_cuda_event_record_corr_id, share a namespace: ac2g/async flow id == correlation)
//   flow "id" (ph s/f/t)
//   args."External id"      + k * E (a power of ten above every External id)
//   args."Sequence number"  + k * S (likewise)
//   name "ProfilerStep#N"   N + k * (max N - min N + 1): copies continue the step numbering
// Ids <= 0 are left alone (0/-1 mean "none"). Metadata events (ph "M": process/thread names)
// are written once. Everything outside the traceEvents array is copied verbatim.
//
// Timestamps are shifted on their decimal text (integer arithmetic on the digits, same number of
// fractional digits), never through a double. The input is indexed once with simdjson On-Demand
// (token positions, not values); the output is streamed through a fixed buffer, so memory stays
// that of the input whatever K is.
#include <simdjson.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "daydream/error.hpp"
#include "daydream/ingest.hpp"

namespace {

namespace od = simdjson::ondemand;

enum class PatchKind : std::uint8_t { ts, correlation, external_id, sequence, step_name };

struct Patch {
  std::uint64_t offset;  // of the token in the input text
  std::uint32_t length;  // of the token, trailing whitespace excluded
  PatchKind kind;
};

struct EventText {
  std::uint64_t begin, end;  // the event object, '{' to '}' inclusive
  std::uint32_t first_patch, patch_count;
  bool once;  // metadata: written in copy 0 only
};

std::string_view trim(std::string_view token) {
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' || token.back() == '\t'))
    token.remove_suffix(1);
  return token;
}

/// A JSON number token split into sign, integer digits and fraction digits (no exponent).
struct Decimal {
  bool negative = false;
  std::string_view whole, fraction;
};

std::optional<Decimal> split_decimal(std::string_view token) {
  Decimal d;
  if (!token.empty() && token[0] == '-') {
    d.negative = true;
    token.remove_prefix(1);
  }
  const auto dot = token.find('.');
  d.whole = token.substr(0, dot);
  if (dot != std::string_view::npos) d.fraction = token.substr(dot + 1);
  auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (d.whole.empty() || d.whole.size() > 18 || !digits(d.whole)) return std::nullopt;
  if (dot != std::string_view::npos && (d.fraction.empty() || d.fraction.size() > 18 || !digits(d.fraction)))
    return std::nullopt;
  return d;
}

std::int64_t digits_value(std::string_view digits) {  // at most 18 digits: fits
  std::int64_t v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return v;
}

std::int64_t pow10(std::size_t n) {
  std::int64_t v = 1;
  while (n-- > 0) v *= 10;
  return v;
}

/// Microsecond token -> integer nanoseconds, truncated past 3 fraction digits (for the span only).
std::int64_t token_ns(std::string_view token) {
  const auto d = split_decimal(token);
  const std::int64_t whole = d ? digits_value(d->whole) : 0;
  if (!d || whole > std::numeric_limits<std::int64_t>::max() / 1000 - 1)
    throw std::runtime_error(fmt::format("unsupported number '{}' (exponent or too many digits)", token));
  const std::string_view frac = d->fraction.substr(0, 3);
  const std::int64_t ns = whole * 1000 + digits_value(frac) * pow10(3 - frac.size());
  return d->negative ? -ns : ns;
}

/// Appends `token` + `shift_us` (a whole number of microseconds, >= 0) with the token's own
/// fraction digits, by integer arithmetic on the digits.
void append_shifted(std::string& out, const Decimal& d, std::int64_t shift_us) {
  const std::int64_t whole = digits_value(d.whole);
  const bool zero_fraction = std::all_of(d.fraction.begin(), d.fraction.end(), [](char c) { return c == '0'; });
  auto fraction = [&](std::string_view digits) {
    if (!d.fraction.empty()) {
      out += '.';
      out += digits;
    }
  };
  if (!d.negative) {  // W.F + S = (W + S).F
    fmt::format_to(std::back_inserter(out), "{}", whole + shift_us);
    return fraction(d.fraction);
  }
  if (whole > shift_us || (whole == shift_us && !zero_fraction)) {  // -(W.F) + S = -((W - S).F)
    fmt::format_to(std::back_inserter(out), "-{}", whole - shift_us);
    return fraction(d.fraction);
  }
  if (zero_fraction) {  // -(W.0) + S = (S - W).0
    fmt::format_to(std::back_inserter(out), "{}", shift_us - whole);
    return fraction(d.fraction);
  }
  // -(W.F) + S = (S - W - 1) + (1 - 0.F), with 0 < F < 10^digits
  const std::int64_t scale = pow10(d.fraction.size());
  fmt::format_to(std::back_inserter(out), "{}", shift_us - whole - 1);
  fraction(fmt::format("{:0{}}", scale - digits_value(d.fraction), d.fraction.size()));
}

std::int64_t parse_int(std::string_view token) {
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (ec != std::errc{} || ptr != token.data() + token.size()) return -1;
  return v;
}

std::int64_t power_of_ten_above(std::int64_t max) {
  std::int64_t p = 10;
  while (p <= max) p *= 10;
  return p;
}

constexpr std::string_view kStepPrefix = "\"ProfilerStep#";

/// `"ProfilerStep#N"` -> N, else -1.
std::int64_t step_number(std::string_view token) {
  if (token.size() < kStepPrefix.size() + 2 || token.substr(0, kStepPrefix.size()) != kStepPrefix ||
      token.back() != '"')
    return -1;
  return parse_int(token.substr(kStepPrefix.size(), token.size() - kStepPrefix.size() - 1));
}

/// The trace, indexed: where each event is and which of its tokens copies must rewrite.
class Index {
 public:
  explicit Index(std::string_view text) : text_(text) {}

  void add_events(od::array array) {
    for (auto element : array) {
      od::object object = element.get_object();
      const std::string_view raw = trim(std::string_view(object.raw_json()));  // raw_json() runs on to the next token
      object.reset();
      add_event(object, raw);
    }
  }

  std::string_view text_;
  std::vector<EventText> events;
  std::vector<Patch> patches;
  std::int64_t min_start_ns = std::numeric_limits<std::int64_t>::max();
  std::int64_t max_end_ns = std::numeric_limits<std::int64_t>::min();
  std::int64_t max_correlation = 0, max_external = 0, max_sequence = 0;
  std::int64_t min_step = std::numeric_limits<std::int64_t>::max(), max_step = -1;
  std::int64_t once_events = 0, skipped_ids = 0;

 private:
  struct Token {
    std::string_view text;
    PatchKind kind;
  };

  std::uint64_t offset(const char* p) const { return static_cast<std::uint64_t>(p - text_.data()); }

  static std::string_view token_of(od::value value) { return trim(std::string_view(value.raw_json_token())); }

  void add_event(od::object object, std::string_view raw) {
    std::string_view ph, ts, dur, name, flow_id;
    std::vector<Token> ids;
    for (auto field : object) {
      const std::string_view key = field.unescaped_key();
      od::value value = field.value();
      if (key == "ph") ph = value.get_string();
      else if (key == "ts") ts = token_of(value);
      else if (key == "dur") dur = token_of(value);
      else if (key == "name") name = token_of(value);
      else if (key == "id") flow_id = token_of(value);
      else if (key == "args" && value.type() == od::json_type::object) {
        for (auto arg : value.get_object()) {
          const std::string_view arg_key = arg.unescaped_key();
          if (arg_key == "correlation" || arg_key == "wait_on_cuda_event_record_corr_id")
            ids.push_back({token_of(arg.value()), PatchKind::correlation});
          else if (arg_key == "External id" || arg_key == "external id")
            ids.push_back({token_of(arg.value()), PatchKind::external_id});
          else if (arg_key == "Sequence number")
            ids.push_back({token_of(arg.value()), PatchKind::sequence});
        }
      }
    }
    EventText event{offset(raw.data()), offset(raw.data()) + raw.size(), static_cast<std::uint32_t>(patches.size()),
                    0, ph == "M"};
    if (event.once) {
      ++once_events;
      events.push_back(event);
      return;
    }
    if (!ts.empty()) {
      patch(ts, PatchKind::ts);
      const std::int64_t start = token_ns(ts);
      min_start_ns = std::min(min_start_ns, start);
      max_end_ns = std::max(max_end_ns, dur.empty() ? start : start + token_ns(dur));
    }
    const bool flow = ph == "s" || ph == "f" || ph == "t";
    if (flow && !flow_id.empty()) ids.push_back({flow_id, PatchKind::correlation});
    for (const Token& id : ids) {
      const std::int64_t value = parse_int(id.text);
      if (value <= 0) {
        if (value < 0 && id.text != "-1") ++skipped_ids;  // a string or non-integer id: left as is
        continue;
      }
      patch(id.text, id.kind);
      auto& max = id.kind == PatchKind::correlation   ? max_correlation
                  : id.kind == PatchKind::external_id ? max_external
                                                      : max_sequence;
      max = std::max(max, value);
    }
    if (const std::int64_t step = step_number(name); step >= 0) {
      patch(name, PatchKind::step_name);
      min_step = std::min(min_step, step);
      max_step = std::max(max_step, step);
    }
    std::sort(patches.begin() + event.first_patch, patches.end(),
              [](const Patch& a, const Patch& b) { return a.offset < b.offset; });
    event.patch_count = static_cast<std::uint32_t>(patches.size() - event.first_patch);
    events.push_back(event);
  }

  void patch(std::string_view token, PatchKind kind) {
    patches.push_back({offset(token.data()), static_cast<std::uint32_t>(token.size()), kind});
  }
};

/// Buffered output file; every write error is fatal.
class Output {
 public:
  explicit Output(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "wb")) {
    if (!file_) throw std::runtime_error(fmt::format("{}: cannot create ({})", path, std::strerror(errno)));
    buffer_.reserve(kBuffer);
  }
  ~Output() {
    if (file_) std::fclose(file_);
  }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  void write(std::string_view text) {
    if (buffer_.size() + text.size() > kBuffer) flush();
    if (text.size() > kBuffer) return raw_write(text);
    buffer_.append(text);
  }
  std::string& scratch() { return scratch_; }
  void close() {
    flush();
    const int rc = std::fclose(file_);
    file_ = nullptr;
    if (rc != 0) throw std::runtime_error(fmt::format("{}: close failed ({})", path_, std::strerror(errno)));
  }
  std::uint64_t bytes() const { return written_ + buffer_.size(); }

 private:
  static constexpr std::size_t kBuffer = std::size_t{8} << 20;
  void flush() {
    raw_write(buffer_);
    buffer_.clear();
  }
  void raw_write(std::string_view text) {
    if (!text.empty() && std::fwrite(text.data(), 1, text.size(), file_) != text.size())
      throw std::runtime_error(fmt::format("{}: write failed ({})", path_, std::strerror(errno)));
    written_ += text.size();
  }
  std::string path_;
  std::FILE* file_;
  std::string buffer_, scratch_;
  std::uint64_t written_ = 0;
};

struct Shift {
  std::int64_t time_us = 0, correlation = 0, external = 0, sequence = 0, step = 0;
};

void append_patched(std::string& out, std::string_view token, PatchKind kind, const Shift& shift) {
  switch (kind) {
    case PatchKind::ts: {
      append_shifted(out, *split_decimal(token), shift.time_us);  // validated while indexing
      return;
    }
    case PatchKind::correlation: fmt::format_to(std::back_inserter(out), "{}", parse_int(token) + shift.correlation); return;
    case PatchKind::external_id: fmt::format_to(std::back_inserter(out), "{}", parse_int(token) + shift.external); return;
    case PatchKind::sequence: fmt::format_to(std::back_inserter(out), "{}", parse_int(token) + shift.sequence); return;
    case PatchKind::step_name:
      fmt::format_to(std::back_inserter(out), "{}{}\"", kStepPrefix, step_number(token) + shift.step);
      return;
  }
}

[[noreturn]] void usage(const char* message) {
  if (message) std::fprintf(stderr, "daydream_make_repeated_trace: %s\n", message);
  std::fprintf(stderr, "usage: daydream_make_repeated_trace [--gap-us G] INPUT.json[.gz] K OUTPUT.json\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t gap_us = 1000;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--gap-us" && i + 1 < argc) {
      gap_us = parse_int(argv[++i]);
      if (gap_us < 0) usage("--gap-us takes a non-negative integer");
    } else if (arg == "-h" || arg == "--help") {
      usage(nullptr);
    } else {
      positional.emplace_back(arg);
    }
  }
  if (positional.size() != 3) usage("expected INPUT K OUTPUT");
  const std::int64_t copies = parse_int(positional[1]);
  if (copies < 1 || copies > 100000) usage("K must be an integer 1..100000");

  const auto started = std::chrono::steady_clock::now();
  bool output_started = false;  // a failed run removes its partial output, never a file it did not write
  try {
    daydream::InputFile file = daydream::read_input_file(positional[0]);
    simdjson::padded_string copy;
    simdjson::padded_string_view json(file.contents.data(), file.contents.size(), file.contents.capacity());
    if (file.contents.capacity() < file.contents.size() + simdjson::SIMDJSON_PADDING) {
      copy = simdjson::padded_string(file.contents);
      json = copy;
    }
    const std::string_view text(json.data(), json.length());

    od::parser parser;
    od::document doc = parser.iterate(json);
    Index index(text);
    std::string_view array_raw;
    if (doc.type() == od::json_type::array) {
      od::array events = doc.get_array();
      array_raw = events.raw_json();
      events.reset();
      index.add_events(events);
    } else {
      for (auto field : doc.get_object()) {
        if (field.unescaped_key().value() != "traceEvents") continue;
        od::array events = field.value().get_array();
        array_raw = events.raw_json();
        events.reset();
        index.add_events(events);
      }
    }
    if (array_raw.empty()) throw std::runtime_error(positional[0] + ": no traceEvents array");
    if (index.min_start_ns > index.max_end_ns) throw std::runtime_error(positional[0] + ": no event has a ts");

    const std::int64_t span_ns = index.max_end_ns - index.min_start_ns;
    Shift stride;
    stride.time_us = (span_ns + 999) / 1000 + gap_us;
    stride.correlation = power_of_ten_above(index.max_correlation);
    stride.external = power_of_ten_above(index.max_external);
    stride.sequence = power_of_ten_above(index.max_sequence);
    stride.step = index.max_step >= 0 ? index.max_step - index.min_step + 1 : 0;

    Output out(positional[2]);
    output_started = true;
    const std::uint64_t array_begin = static_cast<std::uint64_t>(array_raw.data() - text.data());
    const std::uint64_t array_end = array_begin + array_raw.size();  // one past ']'
    out.write(text.substr(0, array_begin + 1));
    bool first = true;
    for (std::int64_t k = 0; k < copies; ++k) {
      const Shift shift{k * stride.time_us, k * stride.correlation, k * stride.external, k * stride.sequence,
                        k * stride.step};
      for (const EventText& event : index.events) {
        if (event.once && k > 0) continue;
        out.write(first ? "\n" : ",\n");
        first = false;
        std::uint64_t cursor = event.begin;
        for (std::uint32_t p = event.first_patch; p < event.first_patch + event.patch_count; ++p) {
          const Patch& patch = index.patches[p];
          out.write(text.substr(cursor, patch.offset - cursor));
          std::string& scratch = out.scratch();
          scratch.clear();
          append_patched(scratch, text.substr(patch.offset, patch.length), patch.kind, shift);
          out.write(scratch);
          cursor = patch.offset + patch.length;
        }
        out.write(text.substr(cursor, event.end - cursor));
      }
    }
    out.write("\n");
    out.write(text.substr(array_end - 1));
    const std::uint64_t written = out.bytes();
    out.close();

    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::fprintf(stderr,
                 "%s: %zu events x %lld copies (%lld metadata events written once), span %.3f ms, period %lld us, "
                 "id strides: correlation/flow %lld, External id %lld, Sequence number %lld, step %lld; "
                 "%llu bytes in %.2f s%s\n",
                 positional[2].c_str(), index.events.size(), static_cast<long long>(copies),
                 static_cast<long long>(index.once_events), static_cast<double>(span_ns) / 1e6,
                 static_cast<long long>(stride.time_us), static_cast<long long>(stride.correlation),
                 static_cast<long long>(stride.external), static_cast<long long>(stride.sequence),
                 static_cast<long long>(stride.step), static_cast<unsigned long long>(written), secs,
                 index.skipped_ids > 0 ? fmt::format(" ({} non-integer ids left unchanged)", index.skipped_ids).c_str()
                                       : "");
  } catch (const simdjson::simdjson_error& e) {
    std::fprintf(stderr, "daydream_make_repeated_trace: %s: invalid JSON (%s)\n", positional[0].c_str(), e.what());
    if (output_started) std::remove(positional[2].c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "daydream_make_repeated_trace: %s\n", e.what());
    if (output_started) std::remove(positional[2].c_str());
    return 1;
  }
  return 0;
}
