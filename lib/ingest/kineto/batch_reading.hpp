#pragma once
// Batches of a document's events read on two threads, the parse's own and a helper, and handed
// back in the order they were cut. Reading an event's JSON (EventReader: simdjson, numbers,
// strings) needs nothing from the events before it and is most of a parse; what follows it
// (KinetoParser::add_event: names, lanes, tables) runs on the parse's thread, in document order,
// so the Trace is the same, byte for byte, as a parse on one thread.
//
// A batch is a view of the window's text; each reader copies it, framed as a JSON array, into its
// own buffer, so that the window's text is only ever read while batches are in flight.
#include <simdjson.h>

#include <array>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ingest/kineto/kineto_event.hpp"
#include "ingest/kineto/recorded_operands.hpp"

namespace daydream::kineto {

/// `framed` ("[" + events + "]", kInputPadding readable bytes after) opened as a JSON array:
/// false where simdjson refuses it (a cut inside a string or inside an event, mostly).
bool open_batch(simdjson::ondemand::parser& parser, std::string_view framed, simdjson::ondemand::document& doc,
                simdjson::ondemand::array& events);

/// One batch of events, and what reading it found.
struct ReadBatch {
  enum class Outcome : std::uint8_t {
    read,     ///< events holds its events
    refused,  ///< it does not parse as an array of events: its cut is not between two events
    failed,   ///< reading threw `error`
  };

  // Set before the batch is queued.
  std::string_view text;  ///< its events: after the cut before it (white space, a '{') to its own cut (a view of the window)
  std::size_t begin = 0;  ///< where `text` starts in the window's text
  bool last = false;      ///< no cut ends it: it runs to the document's end

  // Set by reading it.
  Outcome outcome = Outcome::read;
  std::exception_ptr error;
  std::vector<RawEvent> events;
  std::vector<RecordedOperands> operands;  ///< operands[i]: events[i]'s record_shapes args
  /// Where the parse stopped in the framed text ("[" + text + "]"): at the array's ']' when the
  /// events array closed inside the batch (`after_error` SUCCESS), else simdjson's error for it
  /// (OUT_OF_BOUNDS: the events go on past the batch).
  simdjson::error_code after_error = simdjson::OUT_OF_BOUNDS;
  std::size_t after = 0;

  // The reader's own.
  std::string framed;  ///< "[" + text + "]" and padding
  simdjson::ondemand::parser parser;
};

/// Reads `batch` (its text framed, then each event): what it found goes into the batch, errors
/// included. `path` names the file in errors.
void read_batch(ReadBatch& batch, const std::string& path) noexcept;

/// Up to kSlots batches in flight, read by the helper thread and by the calling one while it
/// waits, and handed back oldest first.
class TwoThreadReading {
 public:
  /// One batch whose events the parse's thread adds while each thread reads another: 4 or 8
  /// measured no faster, and each slot holds about 1.5 MiB (docs/benchmarks.md).
  static constexpr std::size_t kSlots = 3;

  /// `batch_bytes`: about how long a batch is, for the room each slot takes at once.
  TwoThreadReading(const std::string& path, std::size_t batch_bytes);
  ~TwoThreadReading();
  TwoThreadReading(const TwoThreadReading&) = delete;
  TwoThreadReading& operator=(const TwoThreadReading&) = delete;

  /// The batch to fill in next, or null while kSlots batches are in flight.
  ReadBatch* next_slot();
  /// Queues the batch next_slot() gave.
  void queue();
  /// The oldest batch in flight, once read (reading queued batches here meanwhile).
  ReadBatch& oldest();
  /// Done with the oldest batch: its slot is free.
  void release_oldest();
  /// Reads no more: queued batches are dropped, the helper ends after the batch it reads.
  void stop() noexcept;

 private:
  enum class State : std::uint8_t { free, queued, reading, read };
  std::size_t first_queued() const;  // kSlots: none
  void read_slot(std::size_t slot, std::unique_lock<std::mutex>& lock);
  void help();

  const std::string& path_;
  std::array<ReadBatch, kSlots> slots_;
  std::array<State, kSlots> state_{};
  std::size_t head_ = 0, count_ = 0;  // the oldest batch in flight, and how many are
  bool stopping_ = false;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::thread helper_;  // started last, in the constructor: once the slots have their room
};

}  // namespace daydream::kineto
