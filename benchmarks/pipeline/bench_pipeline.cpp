// daydream_bench_pipeline: what one trace costs, stage by stage, printed as ONE JSON line.
//
//   daydream_bench_pipeline [--runs N] [--sim-runs M] [--label TEXT] [--program-heap] TRACE
//
// --program-heap: the heap as the `daydream` program has it (reserve_huge_page_heap first).
//
// Stages, each timed on its own (single thread, steady clock):
//   read    read_input_file(): file read + gzip inflate only (one run, for the split); for a file
//           load_trace streams (ingest/input_stream.hpp), the same read block by block
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
// the trace is dropped once the graph is built, before simulating. The resident size of the graph
// alone also counts heap memory freed with the trace but kept by the allocator between the graph's
// blocks, so two more figures say what the graph itself holds: heap_graph_mib, the heap bytes in
// use (mallinfo2) with the graph alone less those in use before ingest, and rss_graph_trimmed_mib,
// the resident size at the end, the graph alone, once the allocator returned its free memory
// (malloc_trim), with rss_graph_trimmed_bytes_per_task that size less the resident size before
// ingest, per task. All three are 0 where the C library is not glibc.
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

#include "common/huge_pages.hpp"
#include "common/measure.hpp"
#include "daydream/error.hpp"
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/simulate.hpp"
#include "ingest/input_stream.hpp"

namespace {

using namespace daydream::bench;

[[noreturn]] void usage(const char* message) {
  if (message) std::fprintf(stderr, "daydream_bench_pipeline: %s\n", message);
  std::fprintf(stderr, "usage: daydream_bench_pipeline [--runs N] [--sim-runs M] [--label TEXT] [--program-heap] TRACE\n");
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
    else if (arg == "--program-heap") (void)daydream::reserve_huge_page_heap();
    else if (arg == "-h" || arg == "--help") usage(nullptr);
    else if (!arg.empty() && arg[0] == '-') usage("unknown option");
    else if (path.empty()) path = arg;
    else usage("one trace only");
  }
  if (path.empty()) usage("no trace given");
  if (label.empty()) label = path;

  try {
    const double heap_before = heap_in_use_mib();
    const double rss_before = current_rss_mib();
    // read + inflate alone (the part of ingest that is not JSON parsing).
    double read_s = 0;
    {
      const auto start = Clock::now();
      if (daydream::worth_streaming(path)) {  // as load_trace reads it: in blocks, never whole
        daydream::InputStream in(path);
        std::vector<char> block(std::size_t{8} << 20);
        while (in.read(block.data(), block.size()) > 0) {
        }
      } else {
        const daydream::InputFile file = daydream::read_input_file(path);
      }
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
    const double heap_graph = heap_in_use_mib() - heap_before;

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
    const double rss_graph_trimmed = trim_heap() ? current_rss_mib() : 0.0;  // the results are gone

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
        "\"rss_trace_mib\": {:.1f}, \"rss_graph_mib\": {:.1f}, \"heap_graph_mib\": {:.1f}, "
        "\"heap_graph_bytes_per_task\": {:.1f}, \"rss_graph_trimmed_mib\": {:.1f}, "
        "\"rss_graph_trimmed_bytes_per_task\": {:.1f}, "
        "\"peak_rss_ingest_mib\": {:.1f}, \"peak_rss_build_mib\": {:.1f}, \"peak_rss_mib\": {:.1f}}}\n",
        json_string(label), bytes, events, flows, graph->num_tasks(), graph->num_edges(), graph->iterations().size(),
        runs, sim_runs, read_s, ingest.best(), ingest.median(), ingest.first(),
        rate(static_cast<double>(bytes) / 1e6, ingest.best()), rate(static_cast<double>(bytes) / 1e6, ingest.first()),
        build.best(), build.median(), build.first(), rate(tasks, build.best()), sim.best(), sim.median(), sim.first(),
        rate(tasks, sim.best()), sim_events,
        static_cast<double>(makespan) / 1e6, ingest_cpu.user / runs, ingest_cpu.sys / runs, build_cpu.user / runs,
        build_cpu.sys / runs, sim_cpu.user / sim_runs, sim_cpu.sys / sim_runs, rss_trace, rss_graph, heap_graph,
        heap_graph * 1024.0 * 1024.0 / tasks, rss_graph_trimmed,
        rss_graph_trimmed > 0 ? (rss_graph_trimmed - rss_before) * 1024.0 * 1024.0 / tasks : 0.0, peak_ingest,
        peak_build, peak);
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "daydream_bench_pipeline: %s\n", e.what());
    return 1;
  }
  return 0;
}
