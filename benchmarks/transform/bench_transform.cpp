// daydream_bench_transform: what the transformation primitives cost on a large graph, printed as
// one JSON line per measurement (field "bench" names it).
//
//   daydream_bench_transform [--runs N] [--edit-runs M] [--edits K] [--label TEXT] TRACE
//
// The trace is loaded and built once (as `daydream replay` does; the trace is then dropped), and
// every measurement is taken on that graph, single-threaded, steady clock, best of N (default 5)
// with the median beside it:
//   graph     tasks, edges, kernels, load/build seconds, resident size of the graph alone
//   select    Graph::select(filter) alone, then TaskSet::scale on the selection, for each filter
//             below; tasks/s = every task of the graph (all are scanned) / select seconds.
//             Runs on one scratch copy of the graph, so repeated scaling changes durations there
//             but not the cost (llround of a double is constant time).
//   amp       the two AMP-like select+scale calls together (what an AMP what-if costs)
//   copy      Graph's copy constructor: seconds, heap bytes the first copy allocated (glibc
//             mallinfo2; RSS growth beside it, lower when glibc reuses freed pages), MB/s of that
//             size (MB = 10^6 bytes), peak RSS (ru_maxrss) after
//   simulate  simulate() of the original and of the AMP copy: tasks/s (best run; the first run of
//             a graph may also build a cached edge table), makespans, predicted speedup
//   first_edit  the first change (one Graph::remove) of a fresh copy: copies share the edge
//             structure until one changes it, so this pays the deferred deep copy (seconds, heap MiB)
//   remove    Graph::remove of K (default 10,000) kernels spread evenly over the graph, on a fresh
//             copy per run (the copy and its first change are not timed); M runs (default 3);
//             per-op microseconds
//   insert    Graph::insert of K communication tasks on a new comm_channel unit "net", each after
//             a kernel and before the next task on that kernel's stream (evenly spread); fresh
//             copy per run. The first insert also pays the topological ranks (one topological sort
//             of the graph); it is reported apart (first_op_ms) from the rest
//   edited    simulate() of the graph after those removals and insertions (it still runs)
#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/measure.hpp"
#include "daydream/error.hpp"
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/simulate.hpp"
#include "daydream/transform.hpp"

namespace {

using namespace daydream::bench;
using daydream::Graph;
using daydream::Phase;
using daydream::TaskFilter;
using daydream::TaskId;
using daydream::TaskKind;

[[noreturn]] void usage(const char* message) {
  if (message) std::fprintf(stderr, "daydream_bench_transform: %s\n", message);
  std::fprintf(stderr,
               "usage: daydream_bench_transform [--runs N] [--edit-runs M] [--edits K] [--label TEXT] TRACE\n");
  std::exit(2);
}

long integer(const char* text, long low, long high) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (!end || *end != '\0' || value < low || value > high) usage("--runs/--edit-runs take 1..1000, --edits 1..10000000");
  return value;
}

// The AMP-like patterns (Daydream paper: matrix multiplications and convolutions get 3x faster,
// every other kernel 2x).
constexpr const char* kTensorCore = "gemm|conv|wgrad";

struct FilterCase {
  std::string id;           // short key
  std::string description;  // the C++ call
  TaskFilter filter;
  std::optional<double> factor;  // scale after selecting
};

std::vector<FilterCase> filter_cases() {
  std::vector<FilterCase> cases;
  cases.push_back({"kernel_name", "select(kind(kernel).name(\"gemm|conv|wgrad\")).scale(1.0/3)",
                   TaskFilter().kind(TaskKind::kernel).name(kTensorCore), 1.0 / 3});
  cases.push_back({"kernel_name_not", "select(kind(kernel).name_not(\"gemm|conv|wgrad\")).scale(0.5)",
                   TaskFilter().kind(TaskKind::kernel).name_not(kTensorCore), 0.5});
  cases.push_back({"phase_backward", "select(phase(backward))", TaskFilter().phase(Phase::backward), std::nullopt});
  cases.push_back({"kind_kernel", "select(kind(kernel))", TaskFilter().kind(TaskKind::kernel), std::nullopt});
  cases.push_back({"all", "select()", TaskFilter(), std::nullopt});
  cases.push_back({"name_all_kinds", "select(name(\"gemm|conv|wgrad\")).scale(1.0/3)", TaskFilter().name(kTensorCore),
                   1.0 / 3});
  // where(): a C++ callable, called once per task that passed the other criteria.
  const auto has_gemm = [](const Graph& g, TaskId t) { return g.name(t).find("gemm") != std::string_view::npos; };
  cases.push_back({"where_name_all", "select(where(name contains \"gemm\"))", TaskFilter().where(has_gemm),
                   std::nullopt});
  cases.push_back({"where_name_kernel", "select(kind(kernel).where(name contains \"gemm\"))",
                   TaskFilter().kind(TaskKind::kernel).where(has_gemm), std::nullopt});
  cases.push_back({"where_duration_all", "select(where(duration > 10 us)).scale(0.9)",
                   TaskFilter().where([](const Graph& g, TaskId t) { return g.task(t).duration_ns > 10'000; }), 0.9});
  return cases;
}

// `count` live kernels spread evenly over the graph (by id).
std::vector<TaskId> spread_kernels(const Graph& g, std::size_t count) {
  std::vector<TaskId> kernels;
  for (TaskId t = 0; t < g.num_tasks(); ++t)
    if (!g.task(t).removed && g.task(t).kind == TaskKind::kernel) kernels.push_back(t);
  std::vector<TaskId> out;
  if (kernels.empty()) return out;
  count = std::min(count, kernels.size());
  for (std::size_t i = 0; i < count; ++i) out.push_back(kernels[i * kernels.size() / count]);
  return out;
}

// For each kernel: the next task on its stream (its gpu_sequential successor), when it has one.
std::vector<std::pair<TaskId, TaskId>> stream_pairs(const Graph& g, const std::vector<TaskId>& kernels) {
  std::vector<std::pair<TaskId, TaskId>> out;
  for (TaskId k : kernels)
    for (const auto& s : g.successors(k))
      if (s.edge.type == daydream::EdgeType::gpu_sequential) {
        out.emplace_back(k, s.task);
        break;
      }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5, edit_runs = 3;
  std::size_t edits = 10'000;
  std::string label, path;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--runs" && has_value) runs = static_cast<int>(integer(argv[++i], 1, 1000));
    else if (arg == "--edit-runs" && has_value) edit_runs = static_cast<int>(integer(argv[++i], 1, 1000));
    else if (arg == "--edits" && has_value) edits = static_cast<std::size_t>(integer(argv[++i], 1, 10'000'000));
    else if (arg == "--label" && has_value) label = argv[++i];
    else if (arg == "-h" || arg == "--help") usage(nullptr);
    else if (!arg.empty() && arg[0] == '-') usage("unknown option");
    else if (path.empty()) path = arg;
    else usage("one trace only");
  }
  if (path.empty()) usage("no trace given");
  if (label.empty()) label = path;
  const std::string jlabel = json_string(label);
  auto emit = [&](std::string_view bench, const std::string& fields) {
    fmt::print("{{\"bench\": \"{}\", \"label\": {}, {}}}\n", bench, jlabel, fields);
    std::fflush(stdout);
  };

  try {
    // --- the graph ---
    auto start = Clock::now();
    std::optional<daydream::Trace> trace(daydream::load_trace(path));
    const double load_s = seconds_since(start);
    start = Clock::now();
    Graph graph = daydream::build_graph(*trace);
    const double build_s = seconds_since(start);
    trace.reset();
    const double rss_graph = current_rss_mib();
    const double heap_graph = heap_in_use_mib();
    const auto tasks = static_cast<double>(graph.num_tasks());
    const auto kinds = graph.task_counts();
    emit("graph", fmt::format("\"tasks\": {}, \"live_tasks\": {}, \"edges\": {}, \"kernels\": {}, \"units\": {}, "
                              "\"iterations\": {}, \"load_s\": {:.3f}, \"build_s\": {:.3f}, \"rss_graph_mib\": {:.1f}, "
                              "\"heap_graph_mib\": {:.1f}, \"peak_rss_mib\": {:.1f}",
                              graph.num_tasks(), graph.num_live_tasks(), graph.num_edges(),
                              kinds[static_cast<std::size_t>(TaskKind::kernel)], graph.units().size(),
                              graph.iterations().size(), load_s, build_s, rss_graph, heap_graph, peak_rss_mib()));

    // --- copy ---
    Timings copy;
    double copy_mib = 0, copy_rss_mib = 0;
    for (int r = 0; r < runs; ++r) {
      const double before = heap_in_use_mib(), rss_before = current_rss_mib();
      start = Clock::now();
      std::optional<Graph> clone(std::in_place, graph);
      copy.add(seconds_since(start));
      if (r == 0) copy_mib = heap_in_use_mib() - before, copy_rss_mib = current_rss_mib() - rss_before;
      if (clone->num_tasks() != graph.num_tasks()) throw daydream::Error("copy lost tasks");
      start = Clock::now();
      clone.reset();
      if (r == 0) {
        emit("copy_free", fmt::format("\"free_s\": {:.4f}", seconds_since(start)));
      }
    }
    emit("copy", fmt::format("\"runs\": {}, \"copy_s\": {:.4f}, \"copy_s_median\": {:.4f}, \"copy_s_first\": {:.4f}, "
                             "\"copy_mib\": {:.1f}, \"copy_rss_mib\": {:.1f}, \"copy_mb_s\": {:.0f}, \"copy_tasks_s\": {:.0f}, "
                             "\"peak_rss_mib\": {:.1f}",
                             runs, copy.best(), copy.median(), copy.first(), copy_mib, copy_rss_mib,
                             rate(copy_mib * 1048576.0 / 1e6, copy.best()), rate(tasks, copy.best()), peak_rss_mib()));

    // --- select (+ scale) ---
    {
      Graph work = graph;
      for (const FilterCase& c : filter_cases()) {
        Timings select, scale, total;
        std::size_t selected = 0;
        for (int r = 0; r < runs; ++r) {
          start = Clock::now();
          daydream::TaskSet set = work.select(c.filter);
          const double s = seconds_since(start);
          double k = 0;
          if (c.factor) {
            start = Clock::now();
            set.scale(*c.factor);
            k = seconds_since(start);
          }
          select.add(s);
          scale.add(k);
          total.add(s + k);
          selected = set.size();
        }
        emit("select",
             fmt::format("\"case\": \"{}\", \"call\": {}, \"runs\": {}, \"scanned\": {}, \"selected\": {}, "
                         "\"select_s\": {:.5f}, \"select_s_median\": {:.5f}, \"scale_s\": {:.5f}, \"total_s\": {:.5f}, "
                         "\"select_tasks_s\": {:.0f}, \"total_tasks_s\": {:.0f}, \"scaled\": {}",
                         c.id, json_string(c.description), runs, graph.num_tasks(), selected, select.best(),
                         select.median(), scale.best(), total.best(), rate(tasks, select.best()),
                         rate(tasks, total.best()), c.factor ? "true" : "false"));
      }
    }

    // --- AMP: both select+scale calls on a fresh copy (the what-if as a user writes it) ---
    Timings amp_t;
    std::optional<Graph> amp;
    for (int r = 0; r < runs; ++r) {
      amp.reset();
      amp.emplace(graph);
      start = Clock::now();
      amp->select(TaskFilter().kind(TaskKind::kernel).name(kTensorCore)).scale(1.0 / 3);
      amp->select(TaskFilter().kind(TaskKind::kernel).name_not(kTensorCore)).scale(0.5);
      amp_t.add(seconds_since(start));
    }
    emit("amp", fmt::format("\"runs\": {}, \"amp_s\": {:.5f}, \"amp_s_median\": {:.5f}, \"amp_tasks_s\": {:.0f}",
                            runs, amp_t.best(), amp_t.median(), rate(2 * tasks, amp_t.best())));

    // --- simulate: original and after AMP ---
    auto time_sim = [&](const Graph& g, std::string_view which) {
      Timings t;
      daydream::TimeNs makespan = 0;
      std::uint64_t events = 0;
      const CpuTime cpu0 = CpuTime::now();
      for (int r = 0; r < runs; ++r) {
        start = Clock::now();
        const auto result = daydream::simulate(g);
        t.add(seconds_since(start));
        makespan = result.makespan_ns;
        events = result.events_processed;
      }
      const CpuTime cpu = CpuTime::now() - cpu0;
      emit("simulate", fmt::format("\"graph\": \"{}\", \"runs\": {}, \"tasks\": {}, \"sim_s\": {:.4f}, "
                                   "\"sim_s_median\": {:.4f}, \"sim_s_first\": {:.4f}, \"sim_user_s\": {:.4f}, \"sim_sys_s\": {:.4f}, "
                                   "\"sim_tasks_s\": {:.0f}, \"events\": {}, \"makespan_ms\": {:.3f}",
                                   which, runs, g.num_live_tasks(), t.best(), t.median(), t.first(), cpu.user / runs, cpu.sys / runs,
                                   rate(static_cast<double>(g.num_live_tasks()), t.best()), events,
                                   static_cast<double>(makespan) / 1e6));
      return makespan;
    };
    const auto base_ms = time_sim(graph, "original");
    const auto amp_ms = time_sim(*amp, "amp");
    emit("amp_speedup", fmt::format("\"original_ms\": {:.3f}, \"amp_ms\": {:.3f}, \"speedup\": {:.3f}",
                                    static_cast<double>(base_ms) / 1e6, static_cast<double>(amp_ms) / 1e6,
                                    amp_ms > 0 ? static_cast<double>(base_ms) / static_cast<double>(amp_ms) : 0.0));
    amp.reset();

    // --- remove / insert ---
    // 2K kernels spread evenly: the even ones are removed, the odd ones anchor the insertions
    // (each with its stream successor; a pair that lost a task to the removals is skipped).
    const auto spread = spread_kernels(graph, 2 * edits);
    std::vector<TaskId> victims, anchors;
    for (std::size_t i = 0; i < spread.size(); ++i) (i % 2 == 0 ? victims : anchors).push_back(spread[i]);
    const auto pairs = stream_pairs(graph, anchors);

    // One more kernel, in none of those sets: its removal is the first change of each fresh copy,
    // which pays for the copy of the shared edge structure (copies share it until one changes it).
    TaskId warm = daydream::kNoTask;
    {
      std::vector<std::uint8_t> used(graph.num_tasks(), 0);
      for (TaskId t : spread) used[t] = 1;
      for (const auto& [a, b] : pairs) used[a] = used[b] = 1;
      for (TaskId t = static_cast<TaskId>(graph.num_tasks()); t-- > 0;)
        if (!used[t] && graph.task(t).kind == TaskKind::kernel) {
          warm = t;
          break;
        }
      if (warm == daydream::kNoTask) throw daydream::Error("no spare kernel for the first edit");
    }

    Timings first_edit_t, remove_t, insert_t, insert_rest_t;
    double insert_first = 0, first_edit_mib = 0;
    std::size_t edges_before = 0, edges_after_remove = 0, edges_after_insert = 0;
    std::optional<Graph> edited;
    for (int r = 0; r < edit_runs; ++r) {
      edited.reset();
      edited.emplace(graph);
      const double heap0 = heap_in_use_mib();
      start = Clock::now();
      edited->remove(warm);
      first_edit_t.add(seconds_since(start));
      if (r == 0) first_edit_mib = heap_in_use_mib() - heap0;
      edges_before = edited->num_edges();
      start = Clock::now();
      for (TaskId t : victims) edited->remove(t);
      remove_t.add(seconds_since(start));
      edges_after_remove = edited->num_edges();

      const daydream::UnitId net = edited->add_unit({daydream::UnitKind::comm_channel, "net", 0, 0});
      start = Clock::now();
      double first = 0;
      bool first_done = false;
      for (const auto& [a, b] : pairs) {
        if (edited->removed(a) || edited->removed(b)) continue;
        daydream::NewTask spec;
        spec.name = "allreduce";
        spec.kind = TaskKind::communication;
        spec.unit = net;
        spec.duration_ns = 50'000;
        spec.after = {a};
        spec.before = {b};
        edited->insert(spec);
        if (!first_done) first = seconds_since(start), first_done = true;
      }
      const double all = seconds_since(start);
      insert_t.add(all);
      insert_rest_t.add(all - first);
      if (r == 0) insert_first = first;
      edges_after_insert = edited->num_edges();
    }
    emit("first_edit", fmt::format("\"runs\": {}, \"first_edit_s\": {:.4f}, \"first_edit_s_median\": {:.4f}, "
                                   "\"first_edit_mib\": {:.1f}",
                                   edit_runs, first_edit_t.best(), first_edit_t.median(), first_edit_mib));
    const std::size_t inserted = edited->num_tasks() - graph.num_tasks();
    const double per_remove_us = 1e6 * remove_t.best() / static_cast<double>(victims.size());
    emit("remove", fmt::format("\"runs\": {}, \"ops\": {}, \"remove_s\": {:.4f}, \"remove_s_median\": {:.4f}, "
                               "\"per_op_us\": {:.2f}, \"edges_before\": {}, \"edges_after\": {}",
                               edit_runs, victims.size(), remove_t.best(), remove_t.median(), per_remove_us,
                               edges_before, edges_after_remove));
    emit("insert", fmt::format("\"runs\": {}, \"ops\": {}, \"insert_s\": {:.4f}, \"insert_s_median\": {:.4f}, "
                               "\"first_op_ms\": {:.2f}, \"rest_per_op_us\": {:.2f}, \"per_op_us\": {:.2f}, "
                               "\"edges_after\": {}",
                               edit_runs, inserted, insert_t.best(), insert_t.median(), 1e3 * insert_first,
                               inserted > 1 ? 1e6 * insert_rest_t.best() / static_cast<double>(inserted - 1) : 0.0,
                               inserted ? 1e6 * insert_t.best() / static_cast<double>(inserted) : 0.0,
                               edges_after_insert));
    time_sim(*edited, "edited");
    edited.reset();
    emit("peak", fmt::format("\"peak_rss_mib\": {:.1f}", peak_rss_mib()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "daydream_bench_transform: %s\n", e.what());
    return 1;
  }
  return 0;
}
