#pragma once
// Cutting a Chrome-trace document into batches of whole events without parsing it, so that
// simdjson parses one batch at a time: its index of the text (four bytes per token, written and
// read back once) then stays a batch long and in cache, instead of spanning the whole document in
// freshly zeroed memory. The cuts are guesses that each batch's parse proves
// (KinetoParser::parse_in_batches): a batch starts where an event starts, so its parse follows the
// document's own strings and nesting, and it parses as a closed array of events only if its cut
// falls between two events. The text comes through a TextWindow: a document in memory, a stream
// read block by block, or one buffer a second thread fills while the parse reads it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace daydream::kineto {

/// Where a document's events open: the '[' of a top-level array, or of the value of the first
/// top-level "traceEvents" member, found by following the members before it (their strings,
/// escapes and nesting).
struct EventsArray {
  enum class Found : std::uint8_t {
    yes,      ///< at `open`
    no,       ///< the document has none, or the text on the way is no JSON object
    not_yet,  ///< the text ends before it: more of the document may show it
  };
  Found found = Found::no;
  std::size_t open = 0;
};
EventsArray find_events_array(std::string_view json);

/// The first ',' at or after `from` that looks like the one between two events: a '}' before it and
/// a '{' after it, white space aside (as Kineto writes events, one object after another). npos
/// where there is none. Only a guess: the same bytes can lie inside a string or inside an event.
std::size_t find_event_boundary(std::string_view json, std::size_t from);

/// `text` copied into `scratch` as a JSON array for the parser: '[' before it, ']' after it, and
/// room for kInputPadding bytes more (what a window that cannot write into its text frames).
std::string_view frame_copy(std::string_view text, std::string& scratch);

/// The decoded text of a document as the batch parse reads it: a window from where the parse has
/// got to, as far as has been read.
class TextWindow {
 public:
  virtual ~TextWindow() = default;
  virtual std::string_view text() const = 0;
  /// Whether the window held the whole document from the start.
  virtual bool whole() const = 0;
  /// Whether text the window has shown stays where it is until the window ends, as it reads on
  /// and drops text, changed by frame() alone: views of it can be read on another thread meanwhile.
  virtual bool stable() const { return false; }
  /// Reads on, widening the window; false at the document's end.
  virtual bool read_more() = 0;
  /// The window's first n bytes are done with.
  virtual void drop(std::size_t n) = 0;
  /// The window's text up to `end` as a JSON array for the parser: '[' before it, ']' in place of
  /// the byte at `end` (or just after the text), and kInputPadding readable bytes after. By
  /// default a copy in `scratch`; a window that owns its buffer writes the brackets in place, and
  /// unframe() puts back the byte the ']' overwrote.
  virtual std::string_view frame(std::size_t end, std::string& scratch);
  virtual void unframe() {}
};

/// A document held whole in memory.
class MemoryWindow final : public TextWindow {
 public:
  explicit MemoryWindow(std::string_view json) : json_(json) {}
  std::string_view text() const override { return json_; }
  bool whole() const override { return true; }
  bool stable() const override { return true; }
  bool read_more() override { return false; }
  void drop(std::size_t n) override { json_.remove_prefix(n); }

 private:
  std::string_view json_;
};

}  // namespace daydream::kineto

namespace daydream {
class InputStream;
class ReadAhead;
}  // namespace daydream

namespace daydream::kineto {

/// A small stream's whole decoded text in one buffer, which a second thread fills (inflating)
/// while the parse reads what is there: no copies, no zeroing, and the inflating behind the parse.
/// The window shows only bytes with kInputPadding more after them until the stream ends, so that
/// the parser never reads where the other thread writes. Where the stream outgrows the buffer, a
/// bigger one takes its text and the old one stays until the window ends (stable).
class FillingWindow final : public TextWindow {
 public:
  /// `expected`: the decoded size the stream announces (0: unknown); the buffer grows past it.
  FillingWindow(InputStream& in, std::size_t expected, std::size_t block);
  ~FillingWindow() override;
  std::string_view text() const override;
  bool whole() const override { return false; }
  bool stable() const override { return true; }
  bool read_more() override;
  void drop(std::size_t n) override { begin_ += n; }
  std::string_view frame(std::size_t end, std::string& scratch) override;
  void unframe() override;

 private:
  struct Filler;  // the thread and what it shares
  std::unique_ptr<Filler> filler_;
  std::size_t begin_ = 1;  // after the byte a batch's '[' may take
  std::size_t seen_ = 1;   // the end of what the filler had written at the last look
  bool ended_ = false;
  std::size_t framed_at_ = 0;  // where unframe() puts back `framed_byte_`; 0: nothing framed
  char framed_byte_ = 0;
};

/// A stream's decoded text, read (and inflated) `block` bytes at a time on a second thread.
class StreamWindow final : public TextWindow {
 public:
  StreamWindow(InputStream& in, std::size_t block);
  ~StreamWindow() override;
  std::string_view text() const override { return {buffer_.data() + begin_, size_ - begin_}; }
  bool whole() const override { return false; }
  bool read_more() override;
  void drop(std::size_t n) override { begin_ += n; }

 private:
  std::unique_ptr<ReadAhead> ahead_;
  std::size_t block_;
  std::string buffer_;
  std::size_t begin_ = 0, size_ = 0;  // the window: buffer_[begin_, size_)
};

}  // namespace daydream::kineto
