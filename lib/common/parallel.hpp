#pragma once
// A fixed pool of threads over indices, shared by the sweep and the job loader.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace daydream::parallel {

/// The threads for_each_index runs on: `threads` (0: all hardware threads), never more than count.
inline unsigned pool_size(std::size_t count, unsigned threads) {
  threads = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(1, count)));
}

/// Calls work(i, w) for every i in [0, count), each once, on pool_size(count, threads) threads,
/// the calling thread among them; w < pool_size is the thread's number (for per-thread scratch).
/// Indices are handed out in order as threads free up. `work` must not throw.
template <typename Work>
void for_each_index_on(std::size_t count, unsigned threads, Work work) {
  std::atomic<std::size_t> next{0};
  auto worker = [&](unsigned w) {
    for (std::size_t i; (i = next.fetch_add(1)) < count;) work(i, w);
  };
  threads = pool_size(count, threads);
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker, t);
  worker(0);
  for (auto& t : pool) t.join();
}

/// for_each_index_on without the thread's number: work(i).
template <typename Work>
void for_each_index(std::size_t count, unsigned threads, Work work) {
  for_each_index_on(count, threads, [&](std::size_t i, unsigned) { work(i); });
}

}  // namespace daydream::parallel
