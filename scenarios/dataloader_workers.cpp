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

#include "builtin.hpp"
#include "common/text.hpp"
#include "daydream/analyze.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

bool loads_in_workers(const Graph& graph, const std::vector<BatchLoad>& loads) {
  return !loads.empty() && text::contains(graph.string(loads.front().range.name), "MultiProcessing");
}

/// The trace shows where the main thread loads its batches, or the user says how it was recorded.
void require_visible_loading(const Graph& graph, const std::vector<BatchLoad>& loads, const ScenarioParams& params) {
  if (params.integer("recorded") > 0) {
    if (!loads.empty() && !loads_in_workers(graph, loads))
      throw Error(fmt::format("{}: the trace's DataLoader loads on the main thread ('{}'): "
                              "recorded must be 0",
                              graph.source_path, graph.string(loads.front().range.name)));
    return;
  }
  if (loads.empty())
    throw Error(fmt::format("{}: no '{}' ranges in the trace; the scenario needs the DataLoader's "
                            "__next__ recorded by the profiler, or, for a trace recorded with worker processes, their "
                            "number as recorded=<k> (the waits before each step then show the load time)",
                            graph.source_path, kLoaderRange));
  if (loads_in_workers(graph, loads) && !params.given("load"))
    throw Error(fmt::format("{}: the trace's DataLoader already uses worker processes ('{}'): "
                            "give their number as recorded=<k> (the load time is then inferred from the waits), or "
                            "the time to load a batch as load=<duration>",
                            graph.source_path, graph.string(loads.front().range.name)));
}

/// Turns the first task of a batch's loading into "take a ready batch" and empties the rest.
TaskId shrink_to_fetch(Graph& graph, const BatchLoad& load, TimeNs fetch_ns) {
  const TaskId fetch = load.tasks.front();
  graph.set_duration(fetch, fetch_ns);
  graph.rename(fetch, "DataLoader: take a ready batch");
  for (std::size_t i = 1; i < load.tasks.size(); ++i) graph.set_duration(load.tasks[i], 0);
  return fetch;
}

std::vector<UnitId> add_workers(Graph& graph, std::size_t workers) {
  std::vector<UnitId> units;
  for (std::size_t w = 0; w < workers; ++w)
    units.push_back(graph.add_unit({UnitKind::cpu_thread, fmt::format("DataLoader worker {}", w), kNone,
                                    static_cast<std::int64_t>(w), false}));
  return units;
}

/// A trace recorded with workers=0: each `__next__` range is the main thread loading a batch.
ScenarioOutcome from_main_thread_loading(Graph& graph, const ScenarioParams& params,
                                         const std::vector<BatchLoad>& loads) {
  const auto workers = static_cast<std::size_t>(params.integer("workers"));
  const auto in_flight = workers * static_cast<std::size_t>(params.integer("prefetch"));
  if (workers == 0) return {nullptr, {"workers=0: batches are loaded on the main thread, as recorded"}};
  const std::vector<UnitId> worker_units = add_workers(graph, workers);
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

// --- A trace recorded with k > 0 workers: the load time comes from the main thread's waits ---

/// The recorded batches and what their waits imply.
struct RecordedRun {
  std::vector<BatchLoad> loads;   // the DataLoader ranges (empty: waits between steps)
  std::vector<BatchTake> takes;
  LoadEstimate estimate;
  TimeNs fetch_ns = 0;            // main-thread cost of taking a ready batch
  std::size_t recorded = 0;       // workers of the recorded run
};

RecordedRun read_recorded_run(const Graph& graph, std::vector<BatchLoad> loads, const ScenarioParams& params) {
  RecordedRun run{std::move(loads), {}, {}, 0, static_cast<std::size_t>(params.integer("recorded"))};
  run.takes = run.loads.empty() ? takes_before_steps(graph) : takes_in_ranges(run.loads);
  const std::size_t recorded = run.recorded;
  if (run.takes.size() <= recorded)
    throw Error(fmt::format("{}: {} batches (steps) in the trace, recorded={}: the load time of "
                            "a worker shows only across more than {} batches",
                            graph.source_path, run.takes.size(), recorded, recorded));
  run.estimate = estimate_loads(run.takes, recorded);
  if (params.given("load"))
    std::fill(run.estimate.load_ns.begin(), run.estimate.load_ns.end(), static_cast<TimeNs>(params.number("load")));
  run.fetch_ns = params.given("fetch") ? static_cast<TimeNs>(params.number("fetch")) : run.estimate.fetch_ns;
  return run;
}

/// Makes the main thread spend only `fetch_ns + inline_ns` taking batch b once it is there
/// (inline_ns: loading it itself, workers=0). Returns the delay from the batch being ready to
/// the take task's start.
TimeNs rewrite_take(Graph& graph, const RecordedRun& run, std::size_t b, TimeNs inline_ns) {
  const BatchTake& take = run.takes[b];
  if (!run.loads.empty()) {  // the wait and the fetch are the range's tasks
    shrink_to_fetch(graph, run.loads[b], run.fetch_ns + inline_ns);
    return 0;
  }
  if (take.wait_from != kNoTask) {  // the wait is the delay of the edge into the step's first task
    TimeNs& delay = graph.edge(take.wait_from, take.task).delay_ns;
    delay = inline_ns > 0 ? run.fetch_ns + inline_ns : std::min(delay, run.fetch_ns);
  }
  return run.fetch_ns;
}

/// The recorded waits for a batch as [start, end) windows of the main thread, by end.
std::vector<std::pair<TimeNs, TimeNs>> wait_windows(const RecordedRun& run) {
  std::vector<std::pair<TimeNs, TimeNs>> windows;
  for (std::size_t b = 0; b < run.takes.size(); ++b)
    if (run.estimate.waited_for[b]) windows.emplace_back(run.takes[b].taken_ns - run.takes[b].gap_ns, run.takes[b].taken_ns);
  return windows;
}

/// A thread's live tasks, by recorded start.
std::vector<TaskId> thread_tasks(const Graph& graph, UnitId unit) {
  std::vector<TaskId> tasks;
  for (TaskId t = 0; t < graph.num_tasks(); ++t)
    if (!graph.task(t).removed && graph.task(t).unit == unit) tasks.push_back(t);
  std::stable_sort(tasks.begin(), tasks.end(), [&](TaskId a, TaskId b) {
    return graph.task(a).recorded_start_ns < graph.task(b).recorded_start_ns;
  });
  return tasks;
}

/// Does the edge p -> t (one thread) hold the thread idle across a whole window?
bool idle_across(const Graph& graph, const Graph::EdgeRecord& e, const std::vector<std::pair<TimeNs, TimeNs>>& windows) {
  const Task &from = graph.task(e.from), &to = graph.task(e.to);
  const auto w = std::upper_bound(windows.begin(), windows.end(), to.recorded_start_ns,
                                  [](TimeNs t, const auto& win) { return t < win.second; });
  if (w == windows.begin()) return false;
  const auto& [start, end] = *std::prev(w);
  return from.recorded_start_ns + from.duration_ns <= start && e.edge.delay_ns >= end - start;
}

/// Other threads idle across a whole wait for a batch (the autograd thread, whose backward
/// launches follow the main thread's backward() call) were waiting for the main thread. Where the
/// trace shows no hand-off, the idle time is a fixed delay that would pin them to the recorded
/// time; it becomes an edge from the main-thread task that last started before the thread
/// resumed (delay: the recorded lag after it), as docs/graph.md's idle-gap rule infers between
/// operator threads.
std::size_t wake_threads_idle_across_waits(Graph& graph, const RecordedRun& run) {
  const auto windows = wait_windows(run);
  const UnitId main = graph.task(run.takes.front().task).unit;
  const std::vector<TaskId> main_tasks = thread_tasks(graph, main);
  std::size_t woken = 0;
  for (const auto& e : graph.edges()) {
    const Task& to = graph.task(e.to);
    if (to.unit == main || graph.task(e.from).unit != to.unit || e.edge.timing != Timing::finish_to_start) continue;
    if (graph.units()[to.unit].kind != UnitKind::cpu_thread || !idle_across(graph, e, windows)) continue;
    const auto w = std::upper_bound(main_tasks.begin(), main_tasks.end(), to.recorded_start_ns,
                                    [&](TimeNs t, TaskId m) { return t < graph.task(m).recorded_start_ns; });
    const Task& waker = graph.task(*std::prev(w));  // exists: a window lies before `to`
    graph.edge(e.from, e.to).delay_ns = 0;
    const TimeNs lag = std::max<TimeNs>(0, to.recorded_start_ns - waker.recorded_start_ns - waker.duration_ns);
    graph.connect(*std::prev(w), e.to, {EdgeType::cross_thread, Timing::finish_to_start, lag, true});
    ++woken;
  }
  return woken;
}

/// workers=0: the main thread loads every batch itself, as long as a worker took.
ScenarioOutcome load_on_main_thread(Graph& graph, const RecordedRun& run) {
  for (std::size_t b = 0; b < run.takes.size(); ++b) rewrite_take(graph, run, b, run.estimate.load_ns[b]);
  return {nullptr, {fmt::format("workers=0: the main thread loads each batch itself ({:.3f} ms typical)",
                                static_cast<double>(run.estimate.typical_ns) / 1e6)}};
}

/// Simulated times are >= 0 (the graph origin): a worker whose first load starts before the trace
/// keeps, of the loads it made back to back from then, only their parts inside the trace.
struct WorkerClock {
  TimeNs now = 0;       ///< where the worker's back-to-back loads have got to
  bool started = false;
  /// The duration to give a load of `load_ns`; starts the clock at `start` on the first load.
  TimeNs inside_trace(TimeNs load_ns, TimeNs start) {
    if (!started) now = start, started = true;
    const TimeNs before = now;
    now += load_ns;
    return before >= 0 ? load_ns : std::max<TimeNs>(0, now);
  }
};

/// One load task per batch on worker b mod N. It starts when the worker has finished its previous
/// batch and the batch's slot is free (the main thread took batch b - N x prefetch). The first
/// batch of a recorded worker starts as it did in the trace (recorded_first_starts); a worker the
/// trace did not have starts with the earliest of them (the workers start together).
void insert_worker_loads(Graph& graph, const RecordedRun& run, std::size_t workers, std::size_t in_flight) {
  const std::vector<UnitId> units = add_workers(graph, workers);
  std::vector<TimeNs> ready_delay(run.takes.size());
  for (std::size_t b = 0; b < run.takes.size(); ++b) ready_delay[b] = rewrite_take(graph, run, b, 0);
  const auto first_starts = recorded_first_starts(run.takes, run.estimate, run.recorded, run.fetch_ns);
  const TimeNs earliest = *std::min_element(first_starts.begin(), first_starts.end());
  std::vector<TaskId> last_load(workers, kNoTask);
  std::vector<WorkerClock> clocks(workers);
  for (std::size_t b = 0; b < run.takes.size(); ++b) {
    const TimeNs start = b < first_starts.size() ? first_starts[b] : earliest;  // used on first loads only
    NewTask task;
    task.name = fmt::format("DataLoader worker: load batch {}", b);
    task.kind = TaskKind::cpu;
    task.unit = units[b % workers];
    task.duration_ns = clocks[b % workers].inside_trace(run.estimate.load_ns[b], start);
    if (b >= in_flight) task.after.push_back(run.takes[b - in_flight].task);  // the slot was freed then
    if (last_load[b % workers] != kNoTask) task.after.push_back(last_load[b % workers]);
    task.before = {run.takes[b].task};
    task.before_delay_ns = ready_delay[b];
    task.iteration = graph.task(run.takes[b].task).iteration;
    task.phase = Phase::data_loading;
    last_load[b % workers] = graph.insert(task);
    if (task.after.empty()) graph.set_release(last_load[b % workers], std::max<TimeNs>(start, 0));
  }
}

std::vector<std::string> recorded_notes(const RecordedRun& run, const ScenarioParams& params) {
  const LoadEstimate& e = run.estimate;
  const double typical_ms = static_cast<double>(e.typical_ns) / 1e6;
  std::string load;
  if (params.given("load"))
    load = fmt::format("load={:.3f} ms per batch (given)", params.number("load") / 1e6);
  else if (e.upper_bound)
    load = fmt::format("no batch was waited for twice {} apart: load time at most {:.3f} ms (median of taken(b) - "
                       "taken(b-k)), used for every batch",
                       params.integer("recorded"), typical_ms);
  else
    load = fmt::format("load time per batch: from the waits of its worker for {} batches (taken(b) - taken(b-k), "
                       "shared between waits 2k apart), median {:.3f} ms for the other {}",
                       e.measured_count, typical_ms, run.takes.size() - e.measured_count);
  return {fmt::format("recorded with {} workers: {} batches ({}), {} waited for", params.integer("recorded"),
                      run.takes.size(), run.loads.empty() ? "waits before each step" : "DataLoader ranges", e.waited),
          load,
          fmt::format("fetch {:.3f} ms per batch ({})", static_cast<double>(run.fetch_ns) / 1e6,
                      params.given("fetch") ? "given" : "the smallest recorded gap")};
}

ScenarioOutcome from_recorded_workers(Graph& graph, const ScenarioParams& params, std::vector<BatchLoad> loads) {
  const RecordedRun run = read_recorded_run(graph, std::move(loads), params);
  const std::size_t woken = wake_threads_idle_across_waits(graph, run);
  const auto workers = static_cast<std::size_t>(params.integer("workers"));
  ScenarioOutcome outcome;
  if (workers == 0) outcome = load_on_main_thread(graph, run);
  else insert_worker_loads(graph, run, workers, workers * static_cast<std::size_t>(params.integer("prefetch")));
  for (auto& note : recorded_notes(run, params)) outcome.notes.push_back(std::move(note));
  outcome.notes.push_back(fmt::format("{} resumptions of other threads idle across a wait now follow the main thread", woken));
  return outcome;
}

ScenarioOutcome apply(Graph& graph, const ScenarioParams& params) {
  std::vector<BatchLoad> loads = batch_loads(graph);
  require_visible_loading(graph, loads, params);
  if (params.integer("recorded") > 0) return from_recorded_workers(graph, params, std::move(loads));
  return from_main_thread_loading(graph, params, loads);
}

}  // namespace

Scenario dataloader_workers() {
  Scenario s;
  s.name = "dataloader_workers";
  s.summary = "DataLoader with worker processes: the main thread only takes ready batches from a queue";
  s.params = {
      {"workers", ParamKind::integer, 4, "worker processes (0: loading on the main thread)", 0, 1024},
      {"prefetch", ParamKind::integer, 2, "batches in flight per worker (PyTorch's prefetch_factor)", 1, 1024},
      {"fetch", ParamKind::duration, 50'000,
       "main-thread cost of taking a ready batch from the queue (a pipe read and unpickling tensor handles; with "
       "recorded>0: the smallest recorded gap)",
       0, 1e12},
      ScenarioParam("load", ParamKind::duration, 0, "time a worker takes per batch", 0, 1e13, true)
          .automatic("as the main thread took in the trace, or inferred from the waits with recorded>0"),
      {"recorded", ParamKind::integer, 0,
       "worker processes the trace was recorded with (0: loading on the main thread); >0: the load time per batch is "
       "inferred from the main thread's waits",
       0, 1024},
  };
  s.apply = apply;
  return s;
}

}  // namespace daydream::scenarios
