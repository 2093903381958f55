// Where the events of an in-memory Chrome-trace document open, and where one event likely ends.
#include "ingest/kineto/event_batches.hpp"

#include <algorithm>
#include <cstring>

#include "ingest/read_ahead.hpp"

namespace daydream::kineto {
namespace {

constexpr std::size_t npos = std::string_view::npos;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The document's top level from its first byte, followed only as far as deciding where each
// member's value ends: a string (and its escapes), brackets, or a token up to a ',' or '}'.
class TopLevel {
 public:
  explicit TopLevel(std::string_view json) : json_(json) {}

  EventsArray events_array() {
    skip_space();
    if (at('[')) return found();
    if (!at('{')) return ended();
    ++pos_;
    for (;;) {
      skip_space();
      if (!at('"')) return ended();  // the object ends (or is malformed) before any traceEvents
      const std::size_t key_begin = pos_ + 1;
      if (!skip_string()) return ended();
      const std::string_view key = json_.substr(key_begin, pos_ - 1 - key_begin);
      skip_space();
      if (!at(':')) return ended();
      ++pos_;
      skip_space();
      if (key == "traceEvents" && at('[')) return found();
      if (!skip_value()) return ended();
      skip_space();
      if (!at(',')) return ended();
      ++pos_;
    }
  }

 private:
  EventsArray found() const { return {EventsArray::Found::yes, pos_}; }
  // Where the scan stopped: at the end of the text, which more text may carry on; or at a byte
  // that is no way to the events.
  EventsArray ended() const { return {pos_ >= json_.size() ? EventsArray::Found::not_yet : EventsArray::Found::no, 0}; }

  bool at(char c) const { return pos_ < json_.size() && json_[pos_] == c; }
  void skip_space() {
    while (pos_ < json_.size() && is_space(json_[pos_])) ++pos_;
  }

  // From a string's opening quote to just past its closing one.
  bool skip_string() {
    for (++pos_; pos_ < json_.size(); ++pos_) {
      if (json_[pos_] == '\\') ++pos_;
      else if (json_[pos_] == '"') return ++pos_, true;
    }
    return false;
  }

  // One value: to just past its closing bracket or quote, or up to what ends a token.
  bool skip_value() {
    std::size_t depth = 0;
    while (pos_ < json_.size()) {
      const char c = json_[pos_];
      if (c == '"') {
        if (!skip_string()) return false;
        if (depth == 0) return true;
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (depth == 0) return true;
        if (--depth == 0) return ++pos_, true;
      } else if (depth == 0 && (c == ',' || is_space(c))) {
        return true;
      }
      ++pos_;
    }
    return false;
  }

  std::string_view json_;
  std::size_t pos_ = 0;
};

}  // namespace

EventsArray find_events_array(std::string_view json) { return TopLevel(json).events_array(); }

std::size_t find_event_boundary(std::string_view json, std::size_t from) {
  // An event opens with '{' far less often than a ',' appears, so the search runs over '{'.
  for (std::size_t open = json.find('{', from); open != npos; open = json.find('{', open + 1)) {
    std::size_t comma = open;
    while (comma > from && is_space(json[comma - 1])) --comma;
    if (comma == from || json[comma - 1] != ',') continue;
    std::size_t close = --comma;
    while (close > 0 && is_space(json[close - 1])) --close;
    if (close > 0 && json[close - 1] == '}') return comma;
  }
  return npos;
}

StreamWindow::StreamWindow(InputStream& in, std::size_t block)
    : ahead_(std::make_unique<ReadAhead>(in, block)), block_(block) {}

StreamWindow::~StreamWindow() = default;

bool StreamWindow::read_more() {
  if (begin_ > 0 && begin_ >= buffer_.size() / 2) {  // the window moves to the front of the buffer
    std::memmove(buffer_.data(), buffer_.data() + begin_, size_ - begin_);
    size_ -= begin_, begin_ = 0;
  }
  if (buffer_.size() < size_ + block_) buffer_.resize(std::max(size_ + block_, buffer_.size() * 2));
  const std::size_t got = ahead_->read(buffer_.data() + size_, block_);
  size_ += got;
  return got > 0;
}

}  // namespace daydream::kineto
