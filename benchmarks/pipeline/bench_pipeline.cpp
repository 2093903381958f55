// daydream_bench_pipeline: what one trace costs, stage by stage, printed as ONE JSON line.
//
//   daydream_bench_pipeline [--runs N] [--sim-runs M] [--label TEXT] TRACE
//
// Stages, each timed on its own (single thread, steady clock):
//   read    read_input_file(): file read + gzip inflate only (one run, for the split)
//   ingest  load_trace(): read + inflate + Kineto JSON parse. MB/s = decoded JSON bytes / 1e6 / s
//   build   build_graph(trace). tasks/s = graph tasks / s
//   sim     simulate(graph) with the default policy. tasks/s = graph tasks / s
// ingest and build run N times (default 3), simulate M times (default 5); the best time is the
// headline, the median and the first run (what a one-shot `daydream replay` pays: later runs can
// reuse memory the allocator already has) are printed beside it. Per stage it also prints the process CPU time per
// run, user and system (system time here is mostly page faults on fresh memory).
// Memory, in MiB: peak_rss_* is getrusage(RUSAGE_SELF).ru_maxrss read after each stage (the
// high-water mark so far: peak_rss_mib is the whole run's); rss_trace/rss_graph are the resident
// size (/proc/self/statm) holding the trace alone and the graph alone. As in `daydream replay`,
// the trace is dropped once the graph is built, before simulating.
#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daydream/error.hpp"
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/simulate.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

/// Resident memory now (not the peak), from /proc/self/statm, in MiB; 0 where unavailable.
double current_rss_mib() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0) : 0;
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

struct Timings {
  std::vector<double> runs;
  double first() const { return runs.front(); }  // in a fresh process: what a one-shot CLI run pays
  double best() const { return *std::min_element(runs.begin(), runs.end()); }
  double median() const {
    std::vector<double> sorted = runs;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    return n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  }
};

std::string json_string(std::string_view text) {
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

double rate(double amount, double secs) { return secs > 0 ? amount / secs : 0.0; }

[[noreturn]] void usage(const char* message) {
  if (message) std::fprintf(stderr, "daydream_bench_pipeline: %s\n", message);
  std::fprintf(stderr, "usage: daydream_bench_pipeline [--runs N] [--sim-runs M] [--label TEXT] TRACE\n");
  std::exit(2);
}

int positive(const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (!end || *end != '\0' || value < 1 || value > 1000) usage("--runs/--sim-runs take an integer 1..1000");
  return static_cast<int>(value);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 3, sim_runs = 5;
  std::string label, path;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--runs" && has_value) runs = positive(argv[++i]);
    else if (arg == "--sim-runs" && has_value) sim_runs = positive(argv[++i]);
    else if (arg == "--label" && has_value) label = argv[++i];
    else if (arg == "-h" || arg == "--help") usage(nullptr);
    else if (!arg.empty() && arg[0] == '-') usage("unknown option");
    else if (path.empty()) path = arg;
    else usage("one trace only");
  }
  if (path.empty()) usage("no trace given");
  if (label.empty()) label = path;

  try {
    // read + inflate alone (the part of ingest that is not JSON parsing).
    double read_s = 0;
    {
      const auto start = Clock::now();
      const daydream::InputFile file = daydream::read_input_file(path);
      read_s = seconds_since(start);
    }

    // CPU time per stage (all runs of the stage), user and kernel (page faults, I/O).
    const CpuTime cpu0 = CpuTime::now();
    Timings ingest;
    std::optional<daydream::Trace> trace;
    for (int r = 0; r < runs; ++r) {
      trace.reset();  // never hold two traces: the peak must be that of one
      const auto start = Clock::now();
      trace.emplace(daydream::load_trace(path));
      ingest.runs.push_back(seconds_since(start));
    }
    const CpuTime ingest_cpu = CpuTime::now() - cpu0;
    const double peak_ingest = peak_rss_mib();
    const double rss_trace = current_rss_mib();  // the trace alone: input buffers are freed
    const std::uint64_t bytes = trace->bytes_read;
    const std::size_t events = trace->events.size();
    const std::size_t flows = trace->flows.size();

    const CpuTime cpu1 = CpuTime::now();
    Timings build;
    std::optional<daydream::Graph> graph;
    for (int r = 0; r < runs; ++r) {
      graph.reset();
      const auto start = Clock::now();
      graph.emplace(daydream::build_graph(*trace));
      build.runs.push_back(seconds_since(start));
    }
    const CpuTime build_cpu = CpuTime::now() - cpu1;
    const double peak_build = peak_rss_mib();
    trace.reset();
    const double rss_graph = current_rss_mib();  // the graph alone

    const auto tasks = static_cast<double>(graph->num_tasks());
    const CpuTime cpu2 = CpuTime::now();
    Timings sim;
    daydream::TimeNs makespan = 0;
    std::uint64_t sim_events = 0;
    for (int r = 0; r < sim_runs; ++r) {
      const auto start = Clock::now();
      const daydream::SimulationResult result = daydream::simulate(*graph);
      sim.runs.push_back(seconds_since(start));
      makespan = result.makespan_ns;
      sim_events = result.events_processed;
    }
    const CpuTime sim_cpu = CpuTime::now() - cpu2;
    const double peak = peak_rss_mib();

    fmt::print(
        "{{\"trace\": {}, \"bytes\": {}, \"events\": {}, \"flows\": {}, \"tasks\": {}, \"edges\": {}, "
        "\"iterations\": {}, \"runs\": {}, \"sim_runs\": {}, "
        "\"read_s\": {:.6f}, \"ingest_s\": {:.6f}, \"ingest_s_median\": {:.6f}, \"ingest_s_first\": {:.6f}, "
        "\"ingest_mb_s\": {:.1f}, \"ingest_mb_s_first\": {:.1f}, "
        "\"build_s\": {:.6f}, \"build_s_median\": {:.6f}, \"build_s_first\": {:.6f}, \"build_tasks_s\": {:.0f}, "
        "\"sim_s\": {:.6f}, \"sim_s_median\": {:.6f}, \"sim_s_first\": {:.6f}, \"sim_tasks_s\": {:.0f}, "
        "\"sim_events\": {}, "
        "\"makespan_ms\": {:.3f}, "
        "\"ingest_user_s\": {:.3f}, \"ingest_sys_s\": {:.3f}, \"build_user_s\": {:.3f}, \"build_sys_s\": {:.3f}, "
        "\"sim_user_s\": {:.3f}, \"sim_sys_s\": {:.3f}, "
        "\"rss_trace_mib\": {:.1f}, \"rss_graph_mib\": {:.1f}, "
        "\"peak_rss_ingest_mib\": {:.1f}, \"peak_rss_build_mib\": {:.1f}, \"peak_rss_mib\": {:.1f}}}\n",
        json_string(label), bytes, events, flows, graph->num_tasks(), graph->num_edges(), graph->iterations().size(),
        runs, sim_runs, read_s, ingest.best(), ingest.median(), ingest.first(),
        rate(static_cast<double>(bytes) / 1e6, ingest.best()), rate(static_cast<double>(bytes) / 1e6, ingest.first()),
        build.best(), build.median(), build.first(), rate(tasks, build.best()), sim.best(), sim.median(), sim.first(),
        rate(tasks, sim.best()), sim_events,
        static_cast<double>(makespan) / 1e6, ingest_cpu.user / runs, ingest_cpu.sys / runs, build_cpu.user / runs,
        build_cpu.sys / runs, sim_cpu.user / sim_runs, sim_cpu.sys / sim_runs, rss_trace, rss_graph, peak_ingest,
        peak_build, peak);
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "daydream_bench_pipeline: %s\n", e.what());
    return 1;
  }
  return 0;
}
