#include "ingest/kineto/batch_reading.hpp"

#include "ingest/kineto/event_batches.hpp"
#include "ingest/kineto/event_reader.hpp"
#include "ingest/padding.hpp"

namespace daydream::kineto {
namespace od = simdjson::ondemand;

bool open_batch(od::parser& parser, std::string_view framed, od::document& doc, od::array& events) {
  const simdjson::padded_string_view json(framed.data(), framed.size(), framed.size() + kInputPadding);
  return parser.iterate(json).get(doc) == simdjson::SUCCESS && doc.get_array().get(events) == simdjson::SUCCESS;
}

namespace {

/// The fewest bytes an event takes in the traces seen (compact ones; Kineto writes 220-350), for
/// the room a slot takes for a batch's events.
constexpr std::size_t kMinEventBytes = 160;

// The events of the framed batch, and where the parse stopped. Throws as EventReader::read.
void read_events(ReadBatch& batch, od::array events, const std::string& path) {
  std::int64_t index = 0;  // within the batch: errors here only send the parse to its one-piece path
  EventReader reader(path, index);
  for (auto element : events) {
    RawEvent& raw = batch.events.emplace_back();
    if (batch.operands.size() < batch.events.size()) batch.operands.emplace_back();
    reader.read(element, raw, batch.operands[batch.events.size() - 1]);
    ++index;
  }
}

}  // namespace

void read_batch(ReadBatch& batch, const std::string& path) noexcept {
  batch.outcome = ReadBatch::Outcome::read;
  batch.error = nullptr;
  batch.events.clear();
  try {
    frame_copy(batch.text, batch.framed);
    od::document doc;
    od::array events;
    if (!open_batch(batch.parser, batch.framed, doc, events)) {
      batch.outcome = ReadBatch::Outcome::refused;
      return;
    }
    read_events(batch, events, path);
    const auto after = doc.current_location();
    batch.after_error = after.error();
    batch.after =
        after.error() == simdjson::SUCCESS ? static_cast<std::size_t>(after.value_unsafe() - batch.framed.data()) : 0;
  } catch (...) {
    batch.outcome = ReadBatch::Outcome::failed;
    batch.error = std::current_exception();
  }
}

// Each slot takes its room here, on the parse's thread, before the helper starts: memory the
// helper allocated would come from a malloc arena of its own, in 4 KiB pages (1,100 more page
// faults in a replay of ddp-resnet), not from the program's huge-page heap.
TwoThreadReading::TwoThreadReading(const std::string& path, std::size_t batch_bytes) : path_(path) {
  const std::size_t framed = batch_bytes + batch_bytes / 4 + 2 + kInputPadding;  // a cut lies past batch_bytes
  for (ReadBatch& slot : slots_) {
    slot.framed.reserve(framed);
    slot.events.reserve(framed / kMinEventBytes);
    slot.operands.reserve(framed / kMinEventBytes);
    (void)slot.parser.allocate(framed);  // where it fails, the first batch allocates instead
  }
  helper_ = std::thread([this] { help(); });
}

TwoThreadReading::~TwoThreadReading() { stop(); }

ReadBatch* TwoThreadReading::next_slot() { return count_ < kSlots ? &slots_[(head_ + count_) % kSlots] : nullptr; }

void TwoThreadReading::queue() {
  {
    std::lock_guard lock(mutex_);
    state_[(head_ + count_) % kSlots] = State::queued;
    ++count_;
  }
  changed_.notify_all();
}

std::size_t TwoThreadReading::first_queued() const {
  for (std::size_t i = 0; i < count_; ++i) {
    const std::size_t slot = (head_ + i) % kSlots;
    if (state_[slot] == State::queued) return slot;
  }
  return kSlots;
}

void TwoThreadReading::read_slot(std::size_t slot, std::unique_lock<std::mutex>& lock) {
  state_[slot] = State::reading;
  lock.unlock();
  read_batch(slots_[slot], path_);
  lock.lock();
  state_[slot] = State::read;
  changed_.notify_all();
}

ReadBatch& TwoThreadReading::oldest() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (state_[head_] == State::read) return slots_[head_];
    if (const std::size_t slot = first_queued(); slot != kSlots) read_slot(slot, lock);
    else changed_.wait(lock);
  }
}

void TwoThreadReading::release_oldest() {
  std::lock_guard lock(mutex_);
  state_[head_] = State::free;
  head_ = (head_ + 1) % kSlots;
  --count_;
}

void TwoThreadReading::stop() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (helper_.joinable()) helper_.join();
}

void TwoThreadReading::help() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || first_queued() != kSlots; });
    if (stopping_) return;
    read_slot(first_queued(), lock);
  }
}

}  // namespace daydream::kineto
