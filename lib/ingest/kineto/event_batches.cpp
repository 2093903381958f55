// Where the events of an in-memory Chrome-trace document open, and where one event likely ends.
#include "ingest/kineto/event_batches.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "common/huge_pages.hpp"
#include "ingest/padding.hpp"

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

std::string_view frame_copy(std::string_view text, std::string& scratch) {
  scratch.clear();
  scratch.reserve(text.size() + 2 + kInputPadding);
  scratch.append(1, '[').append(text).append(1, ']');
  return scratch;
}

std::string_view TextWindow::frame(std::size_t end, std::string& scratch) {
  return frame_copy(text().substr(0, end), scratch);
}

// The buffer, and the thread that fills it: data[1, filled) decoded so far (data[0] is the byte a
// batch's '[' may take), room for `capacity` bytes, then room for a ']' and kInputPadding.
struct FillingWindow::Filler {
  InputStream& in;
  std::size_t block;
  std::unique_ptr<char[]> data;
  std::vector<std::unique_ptr<char[]>> outgrown;  // earlier buffers: views of their text stay valid
  std::size_t capacity = 0;
  std::size_t filled = 1;
  bool ended = false, need_room = false, stop = false;
  std::exception_ptr error;
  std::mutex mutex;
  std::condition_variable changed;
  std::thread thread;

  Filler(InputStream& stream, std::size_t expected, std::size_t step) : in(stream), block(step) {
    allocate(std::max<std::size_t>(expected + 1, step));  // + 1: an exact size ends without growing
    thread = std::thread([this] { run(); });
  }

  // A buffer of `bytes` room, holding what was filled so far (the main thread, while the filler
  // waits for room or has not started).
  void allocate(std::size_t bytes) {
    std::unique_ptr<char[]> bigger(new char[bytes + 2 + kInputPadding]);  // not zeroed: written first
    advise_huge_pages(bigger.get(), bytes + 2 + kInputPadding);
    if (data) std::memcpy(bigger.get(), data.get(), filled);
    if (data) outgrown.push_back(std::move(data));
    data = std::move(bigger);
    capacity = bytes;
  }

  void run() {
    for (;;) {
      char* at = nullptr;
      std::size_t room = 0;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return stop || filled < capacity + 1; });
        if (stop) return;
        at = data.get() + filled;
        room = std::min(block, capacity + 1 - filled);
      }
      std::size_t got = 0;
      std::exception_ptr failure;
      try {
        got = in.read(at, room);
      } catch (...) {
        failure = std::current_exception();
      }
      {
        std::lock_guard lock(mutex);
        filled += got;
        error = failure;
        ended = got == 0 || failure;
        need_room = !ended && filled == capacity + 1;
        if (ended) std::memset(data.get() + filled, 0, 2 + kInputPadding);  // the final batch's padding
      }
      changed.notify_all();
      if (ended) return;
    }
  }
};

FillingWindow::FillingWindow(InputStream& in, std::size_t expected, std::size_t block)
    : filler_(std::make_unique<Filler>(in, expected, block)) {}

FillingWindow::~FillingWindow() {
  {
    std::lock_guard lock(filler_->mutex);
    filler_->stop = true;
  }
  filler_->changed.notify_all();
  filler_->thread.join();
}

std::string_view FillingWindow::text() const {
  // Before the end, the last kInputPadding + 1 bytes stay out: the parser reads that far past a
  // batch, and the filler may be writing just after them.
  const std::size_t end = ended_ ? seen_ : (seen_ > kInputPadding + 1 ? seen_ - kInputPadding - 1 : 0);
  return end > begin_ ? std::string_view(filler_->data.get() + begin_, end - begin_) : std::string_view();
}

bool FillingWindow::read_more() {
  if (ended_) return false;
  Filler& f = *filler_;
  std::unique_lock lock(f.mutex);
  for (;;) {
    f.changed.wait(lock, [&] { return f.filled != seen_ || f.ended || f.need_room; });
    if (f.need_room) {
      f.allocate(f.capacity * 2);
      f.need_room = false;
      f.changed.notify_all();
      continue;
    }
    if (f.error) std::rethrow_exception(f.error);
    const std::size_t before = text().size();
    seen_ = f.filled, ended_ = f.ended;
    if (text().size() > before) return true;
    if (ended_) return false;
  }
}

std::string_view FillingWindow::frame(std::size_t end, std::string& /*scratch*/) {
  char* data = filler_->data.get();
  data[begin_ - 1] = '[';
  framed_at_ = begin_ + end;
  framed_byte_ = data[framed_at_];
  data[framed_at_] = ']';
  return {data + begin_ - 1, end + 2};
}

void FillingWindow::unframe() {
  if (framed_at_ != 0) filler_->data[framed_at_] = framed_byte_;
  framed_at_ = 0;
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
