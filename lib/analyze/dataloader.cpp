// Reading the DataLoader's batches off a trace: where the main thread took each one, how long it
// waited, and the per-batch load time of the worker processes that the waits imply.
#include "daydream/analyze.hpp"

#include <algorithm>
#include <map>

#include "common/text.hpp"
#include "daydream/transform.hpp"

namespace daydream {

std::vector<BatchLoad> batch_loads(Graph& graph) {
  std::vector<BatchLoad> loads;
  for (const CpuRange& r : graph.ranges()) {  // sorted by unit, then start, outer first
    if (!text::starts_with(graph.string(r.name), kLoaderRange)) continue;
    if (!loads.empty() && loads.back().range.unit == r.unit && r.start_ns < loads.back().range.end_ns) continue;
    loads.push_back({r, {}, text::contains(graph.string(r.name), "MultiProcessing")});
  }
  // Each range's tasks on its thread, from that thread's stretch of the recorded order (one per
  // thread), without the tasks a transformation inserted (they record no trace event).
  std::map<UnitId, std::vector<TaskId>> thread_tasks;
  for (BatchLoad& load : loads) {
    auto [it, fresh] = thread_tasks.try_emplace(load.range.unit);
    if (fresh) it->second = tasks_of_unit(graph, load.range.unit);
    load.tasks = tasks_in(graph, it->second, {load.range.unit, load.range.start_ns, load.range.end_ns});
    std::erase_if(load.tasks, [&](TaskId t) { return graph.task(t).source_event == kNone; });
  }
  std::erase_if(loads, [](const BatchLoad& l) { return l.tasks.empty(); });
  std::stable_sort(loads.begin(), loads.end(), [](const BatchLoad& a, const BatchLoad& b) { return a.range.start_ns < b.range.start_ns; });
  return loads;
}

std::vector<BatchTake> takes_in_ranges(const std::vector<BatchLoad>& loads) {
  std::vector<BatchTake> takes;
  for (const BatchLoad& load : loads)
    takes.push_back({load.tasks.front(), kNoTask, load.range.end_ns - load.range.start_ns, load.range.end_ns});
  return takes;
}

namespace {

/// The finish-to-start edge into `task` with the largest delay: the time the thread spent before
/// it that no recorded task explains.
BatchTake take_before(const Graph& graph, TaskId task) {
  BatchTake take{task, kNoTask, -1, graph.task(task).recorded_start_ns};
  for (const auto& pred : graph.predecessors(task)) {
    if (pred.edge.timing != Timing::finish_to_start || pred.edge.delay_ns <= take.gap_ns) continue;
    take.wait_from = pred.task;
    take.gap_ns = pred.edge.delay_ns;
  }
  return take;
}

}  // namespace

std::vector<BatchTake> takes_before_steps(const Graph& graph) {
  std::vector<BatchTake> takes;
  for (const Iteration& it : graph.iterations())
    if (it.first_task != kNoTask) takes.push_back(take_before(graph, it.first_task));
  return takes;
}

std::vector<BatchTake> batch_takes(const Graph& graph, const std::vector<BatchLoad>& loads) {
  return loads.empty() ? takes_before_steps(graph) : takes_in_ranges(loads);
}

namespace {

TimeNs smallest_gap(const std::vector<BatchTake>& takes) {
  TimeNs smallest = -1;
  for (const BatchTake& t : takes)
    if (t.gap_ns >= 0 && (smallest < 0 || t.gap_ns < smallest)) smallest = t.gap_ns;
  return std::max<TimeNs>(smallest, 0);
}

/// taken(b) - taken(b - k) for each b >= k passing `use`, by batch (-1 elsewhere).
template <class Use>
std::vector<TimeNs> worker_intervals(const std::vector<BatchTake>& takes, std::size_t k, Use use) {
  std::vector<TimeNs> out(takes.size(), -1);
  for (std::size_t b = k; b < takes.size(); ++b)
    if (use(b)) out[b] = takes[b].taken_ns - takes[b - k].taken_ns;
  return out;
}

/// Worker j's loads between two waits for its batches b1 < b2 at most kMaxSpan of its batches
/// apart: it was loading back to back from taken(b1) to taken(b2) (it held the next indices:
/// prefetch >= 2), so those batches share that time evenly (the remainder, < 1 ns per batch, goes
/// to b2). Farther apart, the worker may have idled for a free slot in between.
constexpr std::size_t kMaxSpan = 2;

void share_spans(const std::vector<BatchTake>& takes, const std::vector<bool>& waited, std::size_t k, std::size_t j,
                 std::vector<TimeNs>& per_batch) {
  std::size_t last = takes.size();  // the chain's previous batch waited for, none yet
  for (std::size_t b = j; b < takes.size(); b += k) {
    if (!waited[b]) continue;
    const std::size_t span = last < takes.size() ? (b - last) / k : 0;
    if (span >= 1 && span <= kMaxSpan) {
      const TimeNs total = takes[b].taken_ns - takes[last].taken_ns;
      const auto each = total / static_cast<TimeNs>(span);
      for (std::size_t c = last + k; c <= b; c += k) per_batch[c] = each;
      per_batch[b] += total - each * static_cast<TimeNs>(span);
    }
    last = b;
  }
}

/// Per batch, its load where the waits of its worker show it (-1 elsewhere).
std::vector<TimeNs> loads_between_waits(const std::vector<BatchTake>& takes, const std::vector<bool>& waited,
                                        std::size_t k) {
  std::vector<TimeNs> per_batch(takes.size(), -1);
  for (std::size_t j = 0; j < k; ++j) share_spans(takes, waited, k, j, per_batch);
  return per_batch;
}

std::vector<TimeNs> known(const std::vector<TimeNs>& per_batch) {
  std::vector<TimeNs> out;
  for (TimeNs v : per_batch)
    if (v >= 0) out.push_back(v);
  return out;
}

/// The typical load, within what one of the two waits says about batch b. Worker b mod k started
/// batch b no later than the end of the wait for batch b - k (it held b's indices and had finished
/// b - k by then), so a batch waited for took at least taken(b) - taken(b - k); after a wait for
/// batch b - k it started right then, so a batch not waited for took at most that.
TimeNs bounded_typical(const std::vector<BatchTake>& takes, const std::vector<bool>& waited, std::size_t k,
                       std::size_t b, TimeNs typical_ns) {
  if (b < k || waited[b] == waited[b - k]) return typical_ns;
  const TimeNs interval = takes[b].taken_ns - takes[b - k].taken_ns;
  return waited[b] ? std::max(typical_ns, interval) : std::min(typical_ns, interval);
}

}  // namespace

LoadEstimate estimate_loads(const std::vector<BatchTake>& takes, std::size_t recorded) {
  LoadEstimate e;
  e.fetch_ns = smallest_gap(takes);
  std::vector<bool> waited(takes.size());
  for (std::size_t b = 0; b < takes.size(); ++b) waited[b] = takes[b].gap_ns > e.fetch_ns + kWaitedMinNs;
  e.waited = static_cast<std::size_t>(std::count(waited.begin(), waited.end(), true));
  e.waited_for = waited;
  const std::vector<TimeNs> per_batch = loads_between_waits(takes, waited, recorded);
  std::vector<TimeNs> samples = known(per_batch);
  if (samples.empty()) {
    // The workers kept up: k of them loaded a batch in at most the time k steps took.
    samples = known(worker_intervals(takes, recorded, [](std::size_t) { return true; }));
    e.upper_bound = true;
  }
  e.measured_count = e.upper_bound ? 0 : samples.size();
  e.typical_ns = text::median(samples, text::EvenCount::upper);
  for (std::size_t b = 0; b < takes.size(); ++b) {
    const bool own = !e.upper_bound && per_batch[b] >= 0;
    e.measured.push_back(own);
    e.load_ns.push_back(own ? per_batch[b] : bounded_typical(takes, waited, recorded, b, e.typical_ns));
  }
  return e;
}

namespace {

TimeNs first_start(const std::vector<BatchTake>& takes, const LoadEstimate& e, std::size_t k, std::size_t j,
                   TimeNs fetch_ns) {
  TimeNs loading = 0;  // worker j's loads from its first batch up to b
  for (std::size_t b = j; b < takes.size(); b += k) {
    loading += e.load_ns[b];
    if (e.waited_for[b]) return takes[b].taken_ns - fetch_ns - loading;
  }
  return takes[j].taken_ns - fetch_ns - e.load_ns[j];
}

}  // namespace

std::vector<TimeNs> recorded_first_starts(const std::vector<BatchTake>& takes, const LoadEstimate& estimate,
                                          std::size_t recorded, TimeNs fetch_ns) {
  std::vector<TimeNs> starts;
  for (std::size_t j = 0; j < recorded && j < takes.size(); ++j)
    starts.push_back(first_start(takes, estimate, recorded, j, fetch_ns));
  return starts;
}

std::vector<RangeWindow> wait_windows(const Graph& graph, const std::vector<BatchTake>& takes,
                                      const std::vector<bool>& waited_for) {
  std::vector<RangeWindow> windows;
  for (std::size_t b = 0; b < takes.size(); ++b)
    if (waited_for[b])
      windows.push_back({graph.task(takes.front().task).unit, takes[b].taken_ns - takes[b].gap_ns, takes[b].taken_ns});
  return windows;
}

namespace {

/// The window that last ended at or before `time_ns`, or nullptr.
const RangeWindow* window_before(const std::vector<RangeWindow>& windows, TimeNs time_ns) {
  const auto w = std::upper_bound(windows.begin(), windows.end(), time_ns,
                                  [](TimeNs t, const RangeWindow& window) { return t < window.end_ns; });
  return w == windows.begin() ? nullptr : &*std::prev(w);
}

/// Does the edge (on one thread) hold its thread idle from before a window starts to after it ends?
bool idle_across_window(const Graph& graph, const Graph::EdgeRecord& e, const std::vector<RangeWindow>& windows) {
  const Task &from = graph.task(e.from), &to = graph.task(e.to);
  const RangeWindow* window = window_before(windows, to.recorded_start_ns);
  return window && from.recorded_start_ns + from.duration_ns <= window->start_ns &&
         e.edge.delay_ns >= window->end_ns - window->start_ns;
}

}  // namespace

std::vector<IdleAcross> idle_across(const Graph& graph, const std::vector<RangeWindow>& windows) {
  if (windows.empty()) return {};
  const UnitId thread = windows.front().unit;
  const std::vector<TaskId> thread_tasks = tasks_by_unit(graph)[thread];
  std::vector<IdleAcross> out;
  for (const auto& e : graph.edges()) {
    const Task& to = graph.task(e.to);
    if (to.unit == thread || graph.task(e.from).unit != to.unit || e.edge.timing != Timing::finish_to_start) continue;
    if (graph.units()[to.unit].kind != UnitKind::cpu_thread || !idle_across_window(graph, e, windows)) continue;
    const auto w = std::upper_bound(thread_tasks.begin(), thread_tasks.end(), to.recorded_start_ns,
                                    [&](TimeNs t, TaskId m) { return t < graph.task(m).recorded_start_ns; });
    if (w == thread_tasks.begin()) continue;  // no task of the thread before `to` (windows not of the thread)
    const TaskId waker = *std::prev(w);
    const Task& before = graph.task(waker);
    out.push_back({e.from, e.to, waker,
                   std::max<TimeNs>(0, to.recorded_start_ns - before.recorded_start_ns - before.duration_ns)});
  }
  return out;
}

}  // namespace daydream
