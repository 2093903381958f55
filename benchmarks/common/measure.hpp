#pragma once
// Measurement helpers shared by the benchmark programs: wall and CPU time, memory, JSON strings.

#include <sys/resource.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// Peak resident memory of the process, in MiB (ru_maxrss is in KiB on Linux).
inline double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

/// Resident memory now (not the peak), from /proc/self/statm, in MiB; 0 where unavailable.
inline double current_rss_mib() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0) : 0;
}

/// Bytes the process's heap holds in use now (glibc's mallinfo2: arena blocks in use plus mapped
/// blocks), in MiB; 0 where the C library is not glibc. Unlike the resident size, it leaves out
/// memory freed but kept by the allocator, such as the holes a freed trace leaves between a graph's
/// blocks: the difference of two readings is what the objects made in between hold.
inline double heap_in_use_mib() {
#if defined(__GLIBC__)
  const struct mallinfo2 info = mallinfo2();
  return static_cast<double>(info.uordblks + info.hblkhd) / (1024.0 * 1024.0);
#else
  return 0;
#endif
}

/// Returns the heap's free memory to the system (glibc's malloc_trim), so that the resident size
/// next read is what the process holds; false where the C library is not glibc.
inline bool trim_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
  return true;
#else
  return false;
#endif
}

/// CPU time of the process so far: user and system (kernel: page faults, I/O) seconds.
struct CpuTime {
  double user = 0, sys = 0;
  static CpuTime now() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; };
    return {secs(usage.ru_utime), secs(usage.ru_stime)};
  }
  CpuTime operator-(const CpuTime& o) const { return {user - o.user, sys - o.sys}; }
};

/// Repeated measurements of one thing, in seconds.
struct Timings {
  std::vector<double> runs;
  void add(double s) { runs.push_back(s); }
  double first() const { return runs.front(); }  // in a fresh process: what a one-shot CLI run pays
  double best() const { return *std::min_element(runs.begin(), runs.end()); }
  double median() const {
    std::vector<double> sorted = runs;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    return n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  }
};

inline std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

inline double rate(double amount, double secs) { return secs > 0 ? amount / secs : 0.0; }

}  // namespace daydream::bench
