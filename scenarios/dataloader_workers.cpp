// dataloader_workers: what if the DataLoader loaded batches in `workers` worker processes?
//
// Model (docs/scenarios/dataloader_workers.md). The trace was recorded with workers=0: the main
// thread spends each `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__` range reading,
// decoding and collating one batch. With W workers, as in PyTorch's _MultiProcessingDataLoaderIter:
//  - the main thread's loading work shrinks to taking a ready batch from the queue (`fetch`);
//  - batch k is produced by worker k mod W in a separate process, taking as long as the main
//    thread took to load it in the trace (the same Python work, on another core: contention for
//    cores is not modelled);
//  - a worker receives batch k's indices when the main thread takes batch k - W*prefetch (the
//    DataLoader keeps W*prefetch batches in flight), so it starts loading then, or when it has
//    finished its previous batch, whichever is later;
//  - the profiler window opens after warm-up steps, so the first W*prefetch batches of the trace
//    are already in the queue.
// The main thread waits in `fetch` when its batch is not ready yet (a cross-thread edge from the
// worker's load task), so too few workers show up as data-loading time on the critical path.
#include <fmt/format.h>

#include <algorithm>

#include "builtin.hpp"
#include "common/text.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

constexpr std::string_view kLoaderRange = "enumerate(DataLoader)";

/// One `__next__` of the DataLoader on a CPU thread: the batch it loads and the tasks doing it.
struct BatchLoad {
  CpuRange range;
  std::vector<TaskId> tasks;  // CPU tasks inside the range, in recorded order
};

/// The outermost DataLoader ranges of the trace with their CPU tasks, in time order.
std::vector<BatchLoad> batch_loads(Graph& graph) {
  std::vector<BatchLoad> loads;
  for (const CpuRange& r : graph.ranges()) {  // sorted by unit, then start, outer first
    if (!text::starts_with(graph.string(r.name), kLoaderRange)) continue;
    if (!loads.empty() && loads.back().range.unit == r.unit && r.start_ns < loads.back().range.end_ns) continue;
    loads.push_back({r, {}});
  }
  auto inside = graph.select(TaskFilter().unit_kind(UnitKind::cpu_thread).within("^enumerate\\(DataLoader\\)"));
  for (TaskId t : inside) {
    const Task& task = graph.task(t);
    for (auto& load : loads)
      if (load.range.unit == task.unit && task.recorded_start_ns >= load.range.start_ns &&
          task.recorded_start_ns < load.range.end_ns)
        load.tasks.push_back(t);
  }
  std::erase_if(loads, [](const BatchLoad& l) { return l.tasks.empty(); });
  std::stable_sort(loads.begin(), loads.end(), [](const BatchLoad& a, const BatchLoad& b) { return a.range.start_ns < b.range.start_ns; });
  for (auto& l : loads)
    std::sort(l.tasks.begin(), l.tasks.end(), [&](TaskId a, TaskId b) {
      return graph.task(a).recorded_start_ns < graph.task(b).recorded_start_ns;
    });
  return loads;
}

void require_single_process_loading(const Graph& graph, const std::vector<BatchLoad>& loads, bool load_given) {
  if (loads.empty())
    throw Error(fmt::format("dataloader_workers: {}: no '{}' ranges in the trace; the scenario needs the DataLoader's "
                            "__next__ recorded by the profiler",
                            graph.source_path, kLoaderRange));
  const auto name = graph.string(loads.front().range.name);
  if (text::contains(name, "MultiProcessing") && !load_given)
    throw Error(fmt::format("dataloader_workers: {}: the trace's DataLoader already uses worker processes ('{}'): the "
                            "time to load a batch is not in the trace; give it as load=<duration>",
                            graph.source_path, name));
}

/// Turns the first task of a batch's loading into "take a ready batch" and empties the rest.
TaskId shrink_to_fetch(Graph& graph, const BatchLoad& load, TimeNs fetch_ns) {
  const TaskId fetch = load.tasks.front();
  graph.task(fetch).duration_ns = fetch_ns;
  graph.task(fetch).name = graph.intern("DataLoader: take a ready batch");
  for (std::size_t i = 1; i < load.tasks.size(); ++i) graph.task(load.tasks[i]).duration_ns = 0;
  return fetch;
}

ScenarioOutcome apply(Graph& graph, const ScenarioParams& params) {
  const auto workers = static_cast<std::size_t>(params.integer("workers"));
  const auto in_flight = workers * static_cast<std::size_t>(params.integer("prefetch"));
  const std::vector<BatchLoad> loads = batch_loads(graph);
  require_single_process_loading(graph, loads, params.given("load"));
  if (workers == 0) return {nullptr, {"workers=0: batches are loaded on the main thread, as recorded"}};

  std::vector<UnitId> worker_units;
  for (std::size_t w = 0; w < workers; ++w)
    worker_units.push_back(graph.add_unit({UnitKind::cpu_thread, fmt::format("DataLoader worker {}", w), kNone,
                                           static_cast<std::int64_t>(w), false}));
  std::vector<TaskId> fetches, last_load(workers, kNoTask);
  TimeNs loading_total = 0;
  for (std::size_t k = 0; k < loads.size(); ++k) {
    const BatchLoad& load = loads[k];
    const TimeNs load_ns = params.given("load") ? static_cast<TimeNs>(params.number("load"))
                                                : load.range.end_ns - load.range.start_ns;
    loading_total += load_ns;
    fetches.push_back(shrink_to_fetch(graph, load, static_cast<TimeNs>(params.number("fetch"))));
    if (k < in_flight) continue;  // already in the queue when the profiler window opened
    NewTask task;
    task.name = fmt::format("DataLoader worker: load batch {}", k);
    task.kind = TaskKind::cpu;
    task.unit = worker_units[k % workers];
    task.duration_ns = load_ns;
    task.after = {fetches[k - in_flight]};  // the slot this batch fills was freed then
    if (last_load[k % workers] != kNoTask) task.after.push_back(last_load[k % workers]);
    task.before = {fetches[k]};
    task.iteration = graph.task(fetches[k]).iteration;
    task.phase = Phase::data_loading;
    last_load[k % workers] = graph.insert(task);
  }
  const auto loaded = loads.size() > in_flight ? loads.size() - in_flight : 0;
  return {nullptr,
          {fmt::format("{} batches: main-thread loading ({:.3f} ms per batch on average) replaced by a {:.3f} ms fetch",
                       loads.size(), static_cast<double>(loading_total) / 1e6 / static_cast<double>(loads.size()),
                       params.number("fetch") / 1e6),
           fmt::format("{} workers x prefetch {}: {} batches were already queued, {} loaded by workers in the window",
                       workers, params.integer("prefetch"), loads.size() - loaded, loaded)}};
}

}  // namespace

Scenario dataloader_workers() {
  Scenario s;
  s.name = "dataloader_workers";
  s.summary = "DataLoader with worker processes: the main thread only takes ready batches from a queue";
  s.params = {
      {"workers", ParamKind::integer, 4, "worker processes (0: as recorded)", 0, 1024},
      {"prefetch", ParamKind::integer, 2, "batches in flight per worker (PyTorch's prefetch_factor)", 1, 1024},
      {"fetch", ParamKind::duration, 50'000,
       "main-thread cost of taking a ready batch from the queue (a pipe read and unpickling tensor handles)", 0, 1e12},
      {"load", ParamKind::duration, 0, "time a worker takes per batch (default: as the main thread took in the trace)",
       0, 1e13, true},
  };
  s.apply = apply;
  return s;
}

}  // namespace daydream::scenarios
