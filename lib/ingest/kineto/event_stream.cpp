// split_trace_events: a Chrome-trace JSON document cut into batches of whole events, in blocks.
//
// The scanner follows only what decides where an event ends: strings (and their escapes), the
// nesting of objects and arrays, and at the top level the members' keys. It copies nothing: a
// batch is the run of the buffer from its first event to the comma or bracket after its last,
// turned into a JSON array by writing '[' over the byte before it and ']' over that comma.
#include "ingest/kineto/event_stream.hpp"

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "daydream/error.hpp"
#include "ingest/padding.hpp"
#include "ingest/read_ahead.hpp"

namespace daydream {
namespace {

constexpr std::size_t npos = std::string::npos;

/// Per byte value: where the tight loops stop (a string's quote or escape; inside an event, a
/// quote or a bracket).
struct Stops {
  bool in_string[256] = {};
  bool in_event[256] = {};
  constexpr Stops() {
    in_string[static_cast<unsigned char>('"')] = in_string[static_cast<unsigned char>('\\')] = true;
    for (char c : {'"', '{', '}', '[', ']'}) in_event[static_cast<unsigned char>(c)] = true;
  }
};
constexpr Stops kStops;

class Splitter {
 public:
  Splitter(InputStream& in, const StreamLimits& limits, const std::function<void(std::string_view)>& on_events)
      : in_(in), limits_(limits), on_events_(on_events), blocks_(in, limits.block) {}

  StreamedDocument run() {
    for (;;) {
      reserve_block();
      const std::size_t got = blocks_.read(buffer_.data() + size_, limits_.block);
      if (got == 0) break;
      size_ += got;
      scan();
      if (batch_begin_ != npos && last_end_ != npos && last_end_ - batch_begin_ >= limits_.batch) flush();
      compact();
    }
    if (top_ == Top::start) fail("empty document (no JSON)");
    if (top_ != Top::done || in_string_) fail("truncated JSON: the file ends inside the document");
    flush();
    return {"{" + members_ + "}", saw_events_};
  }

 private:
  enum class Top { start, object, array, done };
  enum class Member { key, colon, value, after };  // what a top-level member expects next

  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(in_.path().string(), Error::kNoEvent, "", problem);
  }

  void reserve_block() {
    const std::size_t needed = size_ + limits_.block + kInputPadding;
    if (buffer_.size() < needed) buffer_.resize(std::max(needed, buffer_.size() + buffer_.size() / 2));
  }

  // Most bytes lie inside an event, where only strings and brackets matter: those runs go through
  // tight loops over a table; the rest, byte by byte.
  void scan() {
    while (pos_ < size_) {
      if (in_string_) scan_string();
      else if (events_depth_ != 0 && depth_ > events_depth_) scan_inside_event();
      else scan_structural(buffer_[pos_]), ++pos_;
    }
  }

  void scan_string() {
    const char* text = buffer_.data();
    while (pos_ < size_) {
      if (escaped_) {
        escaped_ = false, ++pos_;
        continue;
      }
      while (pos_ < size_ && !kStops.in_string[static_cast<unsigned char>(text[pos_])]) ++pos_;
      if (pos_ == size_) return;
      if (text[pos_++] == '\\') {
        escaped_ = true;
        continue;
      }
      --pos_;
      end_string();
      ++pos_;
      return;
    }
  }

  void scan_inside_event() {
    const char* text = buffer_.data();
    while (pos_ < size_) {
      while (pos_ < size_ && !kStops.in_event[static_cast<unsigned char>(text[pos_])]) ++pos_;
      if (pos_ == size_) return;
      const char c = text[pos_++];
      if (c == '"') {
        in_string_ = true;
        return;
      }
      if (c == '{' || c == '[') ++depth_;
      else if (--depth_ == events_depth_) return;
    }
  }

  // One byte outside strings and events (the handlers read its position from pos_).
  void scan_structural(char c) {
    switch (c) {
      case ' ': case '\n': case '\r': case '\t': break;
      case '"': start_string(); break;
      case '{': case '[': open(c); break;
      case '}': case ']': close(); break;
      case ',': comma(); break;
      case ':':
        if (top_ == Top::object && depth_ == 1 && member_ == Member::colon) member_ = Member::value;
        break;
      default: value_char(c); break;
    }
  }

  void start_string() {
    in_string_ = true;
    if (top_ == Top::object && depth_ == 1 && member_ == Member::key) key_start_ = pos_;
    else value_char('"');
  }

  void end_string() {
    in_string_ = false;
    if (top_ == Top::object && depth_ == 1 && member_ == Member::key) key_end_ = pos_, member_ = Member::colon;
  }

  // The first character of a value: an event's, or a top-level member's.
  void value_char(char c) {
    if (top_ == Top::start) fail(fmt::format("not a JSON object or array (starts with '{}')", c));
    if (top_ == Top::done) fail("text after the end of the JSON document");
    if (events_depth_ != 0 && depth_ == events_depth_) {
      if (element_start_ == npos) element_start_ = pos_, batch_begin_ = batch_begin_ == npos ? pos_ : batch_begin_;
    } else if (top_ == Top::object && depth_ == 1 && member_ == Member::value) {
      value_start_ = pos_, value_nested_ = c == '{' || c == '[', member_ = Member::after;
    }
  }

  void open(char c) {
    if (top_ == Top::start) {
      top_ = c == '{' ? Top::object : Top::array;
      depth_ = 1;
      if (top_ == Top::array) events_depth_ = 1, saw_events_ = true;
      return;
    }
    value_char(c);
    if (value_start_ == pos_ && c == '[' && key() == "traceEvents") {  // the events: streamed, not kept
      value_start_ = npos, key_start_ = npos, key_end_ = npos, events_depth_ = 2, saw_events_ = true;
    }
    ++depth_;
  }

  void close() {
    if (top_ == Top::start || top_ == Top::done || depth_ == 0) fail("unbalanced brackets in the JSON document");
    --depth_;
    if (events_depth_ != 0 && depth_ + 1 == events_depth_) {  // the events array ends
      end_element();
      events_depth_ = 0;
      if (top_ == Top::array) top_ = Top::done;
    } else if (top_ == Top::object && depth_ == 0) {
      if (value_start_ != npos) end_member(pos_);
      top_ = Top::done;
    } else if (top_ == Top::object && depth_ == 1 && value_start_ != npos && value_nested_) {
      end_member(pos_ + 1);
    }
  }

  void comma() {
    if (events_depth_ != 0 && depth_ == events_depth_) {
      end_element();
    } else if (top_ == Top::object && depth_ == 1) {
      if (value_start_ != npos) end_member(pos_);
      member_ = Member::key, key_start_ = npos, key_end_ = npos;
    }
  }

  std::string_view key() const {
    if (key_start_ == npos || key_end_ == npos) return {};
    return {buffer_.data() + key_start_ + 1, key_end_ - key_start_ - 1};
  }

  void end_element() {
    if (element_start_ != npos) last_end_ = pos_, element_start_ = npos;
  }

  void end_member(std::size_t end) {
    if (!members_.empty()) members_ += ',';
    members_.append(buffer_.data() + key_start_, end - key_start_);
    value_start_ = npos, key_start_ = npos, key_end_ = npos;
  }

  void flush() {
    if (batch_begin_ == npos || last_end_ == npos || last_end_ < batch_begin_) return;
    buffer_[batch_begin_ - 1] = '[';  // a byte already scanned: '[', ',' or white space
    buffer_[last_end_] = ']';         // the ',' or ']' after the last event
    on_events_(std::string_view(buffer_.data() + batch_begin_ - 1, last_end_ - batch_begin_ + 2));
    batch_begin_ = element_start_;
    last_end_ = npos;
  }

  // Drops the bytes nothing refers to any more, keeping the byte before a batch (or before the
  // next byte, where the next batch may start) for its '['.
  void compact() {
    std::size_t keep = pos_ == 0 ? 0 : pos_ - 1;
    if (batch_begin_ != npos) keep = std::min(keep, batch_begin_ - 1);
    if (element_start_ != npos) keep = std::min(keep, element_start_ - 1);
    if (key_start_ != npos) keep = std::min(keep, key_start_);
    if (keep == 0) return;
    std::memmove(buffer_.data(), buffer_.data() + keep, size_ - keep);
    size_ -= keep;
    for (std::size_t* p : {&pos_, &element_start_, &batch_begin_, &last_end_, &key_start_, &key_end_, &value_start_})
      if (*p != npos) *p -= keep;
  }

  InputStream& in_;
  StreamLimits limits_;
  const std::function<void(std::string_view)>& on_events_;
  ReadAhead blocks_;
  std::vector<char> buffer_;
  std::size_t size_ = 0, pos_ = 0;
  Top top_ = Top::start;
  std::size_t depth_ = 0;
  bool in_string_ = false, escaped_ = false;
  Member member_ = Member::key;
  std::size_t key_start_ = npos, key_end_ = npos, value_start_ = npos;
  bool value_nested_ = false;
  std::size_t events_depth_ = 0;  // the depth of the events' own level; 0: not inside the events
  std::size_t element_start_ = npos, batch_begin_ = npos, last_end_ = npos;
  std::string members_;
  bool saw_events_ = false;
};

}  // namespace

StreamedDocument split_trace_events(InputStream& in, const StreamLimits& limits,
                                    const std::function<void(std::string_view events)>& on_events) {
  return Splitter(in, limits, on_events).run();
}

}  // namespace daydream
