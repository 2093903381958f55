#pragma once
// Reading a stream's decoded bytes ahead, on a thread of its own.
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "ingest/input_stream.hpp"

namespace daydream {

/// Reads (and inflates) the stream's next blocks on a thread of its own, two blocks ahead at most,
/// so that inflating overlaps scanning and parsing: the two cores a trace load can use.
class ReadAhead {
 public:
  ReadAhead(InputStream& in, std::size_t block) : in_(in) {
    for (Slot& slot : slots_) slot.data.resize(block);
    thread_ = std::thread([this] { fill(); });
  }
  ~ReadAhead() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  /// Up to `max` next bytes into `out`; 0 at the end. Rethrows what reading threw.
  std::size_t read(char* out, std::size_t max) {
    Slot& slot = slots_[next_];
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return slot.full; });
    if (error_) std::rethrow_exception(error_);
    const std::size_t n = std::min(max, slot.size - slot.taken);
    std::memcpy(out, slot.data.data() + slot.taken, n);
    slot.taken += n;
    if (slot.size != 0 && slot.taken == slot.size) {  // an empty slot marks the end and stays
      slot.full = false, slot.taken = 0, next_ ^= 1;
      changed_.notify_all();
    }
    return n;
  }

 private:
  struct Slot {
    std::vector<char> data;
    std::size_t size = 0, taken = 0;
    bool full = false;
  };

  void fill() {
    for (std::size_t i = 0;; i ^= 1) {
      Slot& slot = slots_[i];
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return !slot.full || stop_; });
        if (stop_) return;
      }
      std::size_t size = 0;
      std::exception_ptr error;
      try {
        size = in_.read(slot.data.data(), slot.data.size());
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        slot.size = size, slot.full = true, error_ = error;
      }
      changed_.notify_all();
      if (size == 0 || error) return;
    }
  }

  InputStream& in_;
  Slot slots_[2];
  std::size_t next_ = 0;  // the slot read() takes from
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace daydream
