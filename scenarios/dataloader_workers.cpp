// dataloader_workers: what if the DataLoader loaded batches in `workers` worker processes?
//
// Model (docs/scenarios/dataloader_workers.md), PyTorch's _MultiProcessingDataLoaderIter with W
// workers: batch b is loaded by worker b mod W in a separate process (contention for cores is not
// modelled); the DataLoader keeps W x prefetch batches in flight, so a worker receives batch b's
// indices when the main thread takes batch b - W x prefetch, and starts it then or when it has
// finished its previous batch, whichever is later. The main thread only takes ready batches
// (`fetch`); when its batch is not ready it waits for the worker (a cross-thread edge from the
// worker's load task), so too few workers show up as data loading on the critical path.
//
// Where the load time per batch comes from:
//  - recorded=0 (the trace loaded on the main thread): the length of each
//    `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__` range. The profiler window
//    opens after warm-up steps, so the first W x prefetch batches are already queued.
//  - recorded=k > 0: the main thread's waits (analyze.hpp). A batch waited for was
//    ready when the wait ended; worker b mod k went straight from batch b - k to batch b, so
//    load(b) = taken(b) - taken(b - k) when both were waited for. The recorded workers start
//    their first batch when the trace shows (they may be out of phase), new ones with the
//    earliest of them. Other threads idle across a whole wait (the autograd thread) get an edge
//    from the main thread instead of their fixed idle delay.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "builtin.hpp"
#include "daydream/analyze.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

/// The trace shows where the main thread loads its batches, or the user says how it was recorded.
void require_visible_loading(const Graph& graph, const std::vector<BatchLoad>& loads, const ScenarioParams& params) {
  const bool recorded = params.integer("recorded") > 0;
  const std::string_view range = loads.empty() ? "" : graph.string(loads.front().range.name);
  if (recorded && !loads.empty() && !loads.front().in_workers)
    throw Error(fmt::format("{}: the trace's DataLoader loads on the main thread ('{}'): recorded must be 0",
                            graph.source_path, range));
  if (!recorded && loads.empty())
    throw Error(fmt::format("{}: no '{}' ranges in the trace; the scenario needs the DataLoader's __next__ recorded by "
                            "the profiler, or, for a trace recorded with worker processes, their number as recorded=<k> "
                            "(the waits before each step then show the load time)", graph.source_path, kLoaderRange));
  if (!recorded && loads.front().in_workers && !params.given("load"))
    throw Error(fmt::format("{}: the trace's DataLoader already uses worker processes ('{}'): give their number as "
                            "recorded=<k> (the load time is then inferred from the waits), or the time to load a batch "
                            "as load=<duration>", graph.source_path, range));
}

/// The main thread takes batch b, once it is there, in `fetch_ns` (plus `inline_ns` loading it itself). Returns the
/// delay from the batch being ready to the take's start.
TimeNs take_ready_batch(Graph& graph, const std::vector<BatchLoad>& loads, const BatchTake& take, std::size_t b,
                        TimeNs fetch_ns, TimeNs inline_ns = 0) {
  if (!loads.empty()) {  // the first task of its DataLoader range, the others emptied
    // Renamed first: the rename copies the record's page where the graph shares it, and the
    // durations set after it go straight to that copy (set first, they would put the page behind
    // and the rename would copy it patching in the times from the columns).
    graph.rename(take.task, "DataLoader: take a ready batch");
    graph.set_duration(take.task, fetch_ns + inline_ns);
    for (std::size_t i = 1; i < loads[b].tasks.size(); ++i) graph.set_duration(loads[b].tasks[i], 0);
    return 0;
  }
  if (take.wait_from != kNoTask) {  // the wait before its step
    TimeNs& delay = graph.edge(take.wait_from, take.task).delay_ns;
    delay = inline_ns > 0 ? fetch_ns + inline_ns : std::min(delay, fetch_ns);
  }
  return fetch_ns;
}

/// Worker b mod W loads batch b (from batch `first` on) once the take of batch b - in_flight has freed its slot
/// and it has finished its previous batch; the take of batch b waits for it. begin_ns[w]: when worker w starts its
/// back-to-back loads; simulated times are >= 0, so of a load begun before the trace only its part inside it stays.
void insert_worker_loads(Graph& graph, const std::vector<BatchTake>& takes, const std::vector<TimeNs>& load_ns,
                         const std::vector<TimeNs>& ready_delay_ns, std::vector<TimeNs> begin_ns, std::size_t in_flight,
                         std::size_t first) {
  std::vector<UnitId> units;
  for (std::size_t w = 0; w < begin_ns.size(); ++w)
    units.push_back(graph.add_unit({UnitKind::cpu_thread, fmt::format("DataLoader worker {}", w), kNone,
                                    static_cast<std::int64_t>(w), false}));
  std::vector<TaskId> last(units.size(), kNoTask);
  for (std::size_t b = first; b < takes.size(); ++b) {
    const std::size_t w = b % units.size();
    NewTask task;
    task.name = fmt::format("DataLoader worker: load batch {}", b);
    task.kind = TaskKind::cpu;
    task.unit = units[w];
    task.duration_ns = begin_ns[w] >= 0 ? load_ns[b] : std::max<TimeNs>(0, begin_ns[w] + load_ns[b]);
    if (b >= in_flight) task.after.push_back(takes[b - in_flight].task);
    if (last[w] != kNoTask) task.after.push_back(last[w]);
    task.before = {takes[b].task};
    task.before_delay_ns = ready_delay_ns[b];
    task.iteration = graph.task(takes[b].task).iteration;
    task.phase = Phase::data_loading;
    last[w] = graph.insert(task);
    if (task.after.empty()) graph.set_release(last[w], std::max<TimeNs>(begin_ns[w], 0));
    begin_ns[w] += load_ns[b];
  }
}

/// A trace recorded with workers=0: each `__next__` range is the main thread loading a batch.
ScenarioOutcome from_main_thread_loading(Graph& graph, const ScenarioParams& params, const std::vector<BatchLoad>& loads) {
  const auto workers = static_cast<std::size_t>(params.integer("workers"));
  const auto in_flight = workers * static_cast<std::size_t>(params.integer("prefetch"));
  if (workers == 0) return {nullptr, {"workers=0: batches are loaded on the main thread, as recorded"}};
  const std::vector<BatchTake> takes = takes_in_ranges(loads);
  std::vector<TimeNs> load_ns, ready_delay_ns;
  for (std::size_t b = 0; b < loads.size(); ++b) {
    load_ns.push_back(params.given("load") ? static_cast<TimeNs>(params.number("load"))
                                           : loads[b].range.end_ns - loads[b].range.start_ns);
    ready_delay_ns.push_back(take_ready_batch(graph, loads, takes[b], b, static_cast<TimeNs>(params.number("fetch"))));
  }
  // The first W x prefetch batches were already queued when the profiler window opened.
  insert_worker_loads(graph, takes, load_ns, ready_delay_ns, std::vector<TimeNs>(workers, 0), in_flight, in_flight);
  const auto loaded = loads.size() > in_flight ? loads.size() - in_flight : 0;
  const auto loading_total = std::accumulate(load_ns.begin(), load_ns.end(), TimeNs{0});
  return {nullptr,
          {fmt::format("{} batches: main-thread loading ({:.3f} ms per batch on average) replaced by a {:.3f} ms fetch",
                       loads.size(), static_cast<double>(loading_total) / 1e6 / static_cast<double>(loads.size()),
                       params.number("fetch") / 1e6),
           fmt::format("{} workers x prefetch {}: {} batches were already queued, {} loaded by workers in the window",
                       workers, params.integer("prefetch"), loads.size() - loaded, loaded)}};
}

std::vector<std::string> recorded_notes(const std::vector<BatchTake>& takes, bool ranges, const LoadEstimate& e,
                                        TimeNs fetch_ns, const ScenarioParams& params) {
  const double typical_ms = static_cast<double>(e.typical_ns) / 1e6;
  const auto k = params.integer("recorded");
  return {fmt::format("recorded with {} workers: {} batches ({}), {} waited for", k, takes.size(),
                      ranges ? "DataLoader ranges" : "waits before each step", e.waited),
          params.given("load") ? fmt::format("load={:.3f} ms per batch (given)", params.number("load") / 1e6)
          : e.upper_bound ? fmt::format("no batch was waited for twice {} apart: load time at most {:.3f} ms (median of "
                                        "taken(b) - taken(b-k)), used for every batch", k, typical_ms)
                          : fmt::format("load time per batch: from the waits of its worker for {} batches (taken(b) - "
                                        "taken(b-k), shared between waits 2k apart), median {:.3f} ms for the other {}",
                                        e.measured_count, typical_ms, takes.size() - e.measured_count),
          fmt::format("fetch {:.3f} ms per batch ({})", static_cast<double>(fetch_ns) / 1e6,
                      params.given("fetch") ? "given" : "the smallest recorded gap")};
}

/// A trace recorded with k > 0 workers: the load time per batch comes from the main thread's waits (analyze.hpp).
ScenarioOutcome from_recorded_workers(Graph& graph, const ScenarioParams& params, const std::vector<BatchLoad>& loads) {
  const auto recorded = static_cast<std::size_t>(params.integer("recorded"));
  const auto workers = static_cast<std::size_t>(params.integer("workers"));
  const std::vector<BatchTake> takes = batch_takes(graph, loads);
  if (takes.size() <= recorded)
    throw Error(fmt::format("{}: {} batches (steps) in the trace, recorded={}: the load time of a worker shows only "
                            "across more than {} batches", graph.source_path, takes.size(), recorded, recorded));
  LoadEstimate estimate = estimate_loads(takes, recorded);
  if (params.given("load")) std::ranges::fill(estimate.load_ns, static_cast<TimeNs>(params.number("load")));
  const TimeNs fetch_ns = params.given("fetch") ? static_cast<TimeNs>(params.number("fetch")) : estimate.fetch_ns;
  // Another thread idle across a whole wait was waiting for the main thread, not for a fixed time.
  const std::vector<IdleAcross> idle = idle_across(graph, wait_windows(graph, takes, estimate.waited_for));
  for (const IdleAcross& i : idle) {
    graph.edge(i.from, i.to).delay_ns = 0;
    graph.connect(i.waker, i.to, {EdgeType::cross_thread, Timing::finish_to_start, i.lag_ns, true});
  }
  std::vector<TimeNs> ready_delay_ns;  // workers=0: the main thread loads each batch itself, as long as a worker took
  for (std::size_t b = 0; b < takes.size(); ++b)
    ready_delay_ns.push_back(take_ready_batch(graph, loads, takes[b], b, fetch_ns, workers ? 0 : estimate.load_ns[b]));
  ScenarioOutcome outcome;
  if (workers == 0)
    outcome.notes.push_back(fmt::format("workers=0: the main thread loads each batch itself ({:.3f} ms typical)",
                                        static_cast<double>(estimate.typical_ns) / 1e6));
  else {  // recorded workers start their first batch as the trace shows, new ones with the earliest of them
    const std::vector<TimeNs> first = recorded_first_starts(takes, estimate, recorded, fetch_ns);
    std::vector<TimeNs> begin_ns(workers, std::ranges::min(first));
    std::copy_n(first.begin(), std::min(workers, first.size()), begin_ns.begin());
    insert_worker_loads(graph, takes, estimate.load_ns, ready_delay_ns, std::move(begin_ns),
                        workers * static_cast<std::size_t>(params.integer("prefetch")), 0);
  }
  for (auto& note : recorded_notes(takes, !loads.empty(), estimate, fetch_ns, params)) outcome.notes.push_back(note);
  outcome.notes.push_back(
      fmt::format("{} resumptions of other threads idle across a wait now follow the main thread", idle.size()));
  return outcome;
}

ScenarioOutcome apply(Graph& graph, const ScenarioParams& params) {
  const std::vector<BatchLoad> loads = batch_loads(graph);
  require_visible_loading(graph, loads, params);
  if (params.integer("recorded") > 0) return from_recorded_workers(graph, params, loads);
  return from_main_thread_loading(graph, params, loads);
}

}  // namespace

Scenario dataloader_workers() {
  return {"dataloader_workers", "DataLoader with worker processes: the main thread only takes ready batches from a queue",
          {{"workers", ParamKind::integer, 4, "worker processes (0: loading on the main thread)", 0, 1024},
           {"prefetch", ParamKind::integer, 2, "batches in flight per worker (PyTorch's prefetch_factor)", 1, 1024},
           {"fetch", ParamKind::duration, 50'000, "main-thread cost of taking a ready batch from the queue (a pipe read "
            "and unpickling tensor handles; with recorded>0: the smallest recorded gap)", 0, 1e12},
           ScenarioParam("load", ParamKind::duration, 0, "time a worker takes per batch", 0, 1e13, true)
               .automatic("as the main thread took in the trace, or inferred from the waits with recorded>0"),
           {"recorded", ParamKind::integer, 0, "worker processes the trace was recorded with (0: loading on the main "
            "thread); >0: the load time per batch is inferred from the main thread's waits", 0, 1024}},
          apply};
}

}  // namespace daydream::scenarios
