#pragma once
// A fixed pool of threads over indices, shared by the sweep and the job loader.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace daydream::parallel {

/// Calls work(i) for every i in [0, count), each once, on `threads` threads (0: all hardware
/// threads; never more than count), the calling thread among them. Indices are handed out in
/// order as threads free up. `work` must not throw.
template <typename Work>
void for_each_index(std::size_t count, unsigned threads, Work work) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < count;) work(i);
  };
  threads = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(1, count)));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace daydream::parallel
