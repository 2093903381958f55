// Backward passes, gradients and their sizes, DDP's buckets (analyze.hpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/text.hpp"
#include "daydream/analyze.hpp"
#include "daydream/transform.hpp"
#include "graph/graph_access.hpp"
#include "graph/graph_storage.hpp"

namespace daydream {

namespace {

/// The median duration of the graph's live launch calls, or kNone without any.
TimeNs launch_call_median(const Graph& graph) {
  // Columns skip every task but the live calls; each name's text is read once (0 unknown, 1 a
  // launch, 2 not).
  const auto columns = GraphAccess::task_columns(graph);
  const detail::TaskRecords& records = GraphAccess::records(graph);  // names
  std::vector<std::uint8_t> launch_by_name;
  std::vector<TimeNs> durations;
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    if (columns->removed[t] || columns->kind[t] != TaskKind::runtime) continue;
    const std::uint32_t name = records.at(t).name;
    if (name >= launch_by_name.size()) launch_by_name.resize(name + 1, 0);
    std::uint8_t& launch = launch_by_name[name];
    if (launch == 0) launch = graph.string(name).find("LaunchKernel") != std::string_view::npos ? 1 : 2;
    if (launch == 1) durations.push_back(columns->duration_ns[t]);
  }
  return durations.empty() ? kNone : text::median(durations, text::EvenCount::upper);
}

}  // namespace

TimeNs median_launch_call_ns(const Graph& graph, TimeNs fallback_ns) {
  // Kept with the graph: every what-if of a sweep asks its fresh copy of the base.
  const TimeNs median = GraphAccess::launch_call_median(
      graph, [&] { return std::make_shared<const TimeNs>(launch_call_median(graph)); });
  return median == kNone ? fallback_ns : median;
}

LaunchIndex::LaunchIndex(const Graph& graph) : by_thread_(graph.units().size()) {
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (task.removed || !is_gpu(task.kind)) continue;
    const TaskId call = predecessor(graph, t, EdgeType::launch);
    if (call != kNoTask) by_thread_[graph.task(call).unit].emplace_back(graph.task(call).recorded_start_ns, t);
  }
  for (auto& list : by_thread_) std::sort(list.begin(), list.end());
}

TaskId LaunchIndex::last_before(UnitId thread, TimeNs time_ns) const {
  const auto& list = by_thread_.at(thread);
  auto it = std::lower_bound(list.begin(), list.end(), std::make_pair(time_ns, TaskId{0}));
  return it == list.begin() ? kNoTask : std::prev(it)->second;
}

std::vector<TaskId> LaunchIndex::launched_in(UnitId thread, TimeNs from_ns, TimeNs to_ns) const {
  const auto& list = by_thread_.at(thread);
  std::vector<TaskId> tasks;
  for (auto it = std::lower_bound(list.begin(), list.end(), std::make_pair(from_ns, TaskId{0}));
       it != list.end() && it->first < to_ns; ++it)
    tasks.push_back(it->second);
  return tasks;
}

namespace {

bool is_accumulate_grad(std::string_view name) {
  constexpr std::string_view suffix = "AccumulateGrad";
  return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
}

bool is_optimizer_step(std::string_view name) {
  return text::starts_with(name, "Optimizer.step") || text::starts_with(name, "optimizer.step");
}

/// The AccumulateGrad ranges, nested ones merged into their outermost (the autograd engine wraps
/// each in "evaluate_function: ..."), by end.
std::vector<CpuRange> accumulate_grad_ranges(const Graph& graph) {
  std::vector<CpuRange> out;
  for (const CpuRange& r : graph.ranges()) {  // by unit, then start
    if (!is_accumulate_grad(graph.string(r.name))) continue;
    if (!out.empty() && out.back().unit == r.unit && r.start_ns < out.back().end_ns)
      out.back().end_ns = std::max(out.back().end_ns, r.end_ns);
    else
      out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.end_ns < b.end_ns; });
  return out;
}

std::vector<CpuRange> optimizer_steps(const Graph& graph) {
  std::vector<CpuRange> out;
  for (const CpuRange& r : graph.ranges())
    if (is_optimizer_step(graph.string(r.name))) out.push_back(r);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  return out;
}

/// Where passes are collected: one window per iteration; without iterations, the stretches that
/// optimizer steps end; without either, the whole trace.
std::vector<BackwardPass> pass_windows(const Graph& graph, const std::vector<CpuRange>& steps) {
  std::vector<BackwardPass> windows;
  constexpr TimeNs kForever = std::numeric_limits<TimeNs>::max();
  const auto window = [&](std::int32_t iteration, TimeNs start_ns, TimeNs end_ns) {
    BackwardPass w;
    w.iteration = iteration;
    w.start_ns = start_ns;
    w.end_ns = end_ns;
    windows.push_back(std::move(w));
  };
  const auto& iterations = graph.iterations();
  for (std::size_t i = 0; i < iterations.size(); ++i)
    window(static_cast<std::int32_t>(i), iterations[i].measured_start_ns,
           iterations[i].measured_start_ns + iterations[i].measured_ns);
  if (!windows.empty()) return windows;
  TimeNs from = std::numeric_limits<TimeNs>::min();
  for (const CpuRange& step : steps) window(-1, from, step.end_ns), from = step.end_ns;
  window(-1, from, kForever);
  return windows;
}

Gradient gradient_at(const Graph& graph, const LaunchIndex& launches, const CpuRange& range) {
  Gradient g;
  g.ready = launches.last_before(range.unit, range.end_ns);
  g.ready_ns = range.end_ns;
  for (TaskId t : launches.launched_in(range.unit, range.start_ns, range.end_ns))
    g.own_gpu_ns += graph.task(t).duration_ns;
  return g;
}

/// The optimizer step after the pass's last gradient (inside its window) sets the barrier.
void find_barrier(const Graph& graph, const LaunchIndex& launches, const std::vector<CpuRange>& steps,
                  BackwardPass& pass, TimeNs last_ready_ns) {
  for (const CpuRange& step : steps) {
    if (step.start_ns < last_ready_ns || step.start_ns >= pass.end_ns) continue;
    pass.update_tasks = launches.launched_in(step.unit, step.start_ns, step.end_ns);
    if (!pass.update_tasks.empty()) break;
  }
  pass.barrier = !pass.update_tasks.empty() ? pass.update_tasks.front()
                 : pass.gradients.empty()   ? kNoTask
                                            : successor(graph, pass.gradients.back().ready, EdgeType::gpu_sequential);
}

}  // namespace

std::vector<BackwardPass> find_backward_passes(const Graph& graph, const TraceCollectives& collectives) {
  const LaunchIndex launches(graph);
  const auto steps = optimizer_steps(graph);
  const auto accumulates = accumulate_grad_ranges(graph);
  std::vector<BackwardPass> passes;
  for (BackwardPass& pass : pass_windows(graph, steps)) {
    TimeNs last_ready_ns = std::numeric_limits<TimeNs>::min();
    for (const CpuRange& r : accumulates) {
      if (r.start_ns < pass.start_ns || r.start_ns >= pass.end_ns) continue;
      Gradient g = gradient_at(graph, launches, r);
      if (g.ready == kNoTask) continue;
      pass.gradients.push_back(g);
      last_ready_ns = std::max(last_ready_ns, r.end_ns);
    }
    for (std::size_t i = 0; i < collectives.list.size(); ++i) {
      const TraceCollective& c = collectives.list[i];
      if (!c.allreduce || c.bytes == kNone || c.start_ns < pass.start_ns || c.start_ns >= pass.end_ns) continue;
      pass.recorded_allreduce_bytes += c.bytes;
      if (c.tasks.empty()) pass.recorded_buckets.push_back(i);
      last_ready_ns = std::max(last_ready_ns, c.end_ns);
    }
    if (pass.gradients.empty() && pass.recorded_buckets.empty()) continue;
    find_barrier(graph, launches, steps, pass, last_ready_ns);
    passes.push_back(std::move(pass));
  }
  return passes;
}

std::vector<std::int64_t> spread_bytes(std::int64_t total_bytes, const std::vector<double>& weights) {
  std::vector<std::int64_t> parts(weights.size(), 0);
  if (weights.empty()) return parts;
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  const bool uniform = !(sum > 0);
  const double whole = uniform ? static_cast<double>(weights.size()) : sum;
  double running = 0;
  std::int64_t given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    running += uniform ? 1.0 : weights[i];
    const bool last = i + 1 == weights.size();
    const std::int64_t upto = last ? total_bytes : std::llround(static_cast<double>(total_bytes) * (running / whole));
    parts[i] = std::max<std::int64_t>(0, upto - given);
    given += parts[i];
  }
  return parts;
}

namespace {

/// Durations of each parameter's optimizer update, in backward order, above the shortest one (its
/// fixed cost): memory-bound kernels whose time grows with the parameter's size. Empty when the
/// step's GPU tasks do not split evenly over the parameters.
std::vector<double> update_kernel_proxy(const Graph& graph, const BackwardPass& pass) {
  const std::size_t params = pass.gradients.size(), kernels = pass.update_tasks.size();
  const std::size_t per_param = update_tasks_per_gradient(pass);
  if (per_param == 0) return {};
  std::vector<double> time(params, 0);  // backward order: parameter j of the step is gradient params-1-j
  for (std::size_t k = 0; k < kernels; ++k)
    time[params - 1 - k / per_param] += static_cast<double>(graph.task(pass.update_tasks[k]).duration_ns);
  const double floor = *std::min_element(time.begin(), time.end());
  for (double& t : time) t -= floor;
  return time;
}

/// GPU time each AccumulateGrad launched (accumulating into .grad), above the shortest; empty
/// when some launched nothing.
std::vector<double> accumulate_kernel_proxy(const BackwardPass& pass) {
  std::vector<double> time;
  for (const Gradient& g : pass.gradients) {
    if (g.own_gpu_ns <= 0) return {};
    time.push_back(static_cast<double>(g.own_gpu_ns));
  }
  const double floor = time.empty() ? 0 : *std::min_element(time.begin(), time.end());
  for (double& t : time) t -= floor;
  return time;
}

bool has_weight(const std::vector<double>& w) { return std::accumulate(w.begin(), w.end(), 0.0) > 0; }

}  // namespace

std::string spread_over_gradients(const Graph& graph, BackwardPass& pass, std::int64_t total) {
  std::vector<double> weights = update_kernel_proxy(graph, pass);
  std::string proxy = "the optimizer's per-parameter update kernels";
  if (!has_weight(weights)) weights = accumulate_kernel_proxy(pass), proxy = "the AccumulateGrad kernels";
  if (!has_weight(weights))
    weights.assign(pass.gradients.size(), 1.0), proxy = "equal shares (no size proxy in the trace)";
  const auto parts = spread_bytes(total, weights);
  for (std::size_t i = 0; i < parts.size(); ++i) pass.gradients[i].bytes = parts[i];
  return proxy;
}

std::size_t update_tasks_per_gradient(const BackwardPass& pass) {
  const std::size_t params = pass.gradients.size(), tasks = pass.update_tasks.size();
  return params > 0 && tasks >= params && tasks % params == 0 ? tasks / params : 0;
}

std::vector<TaskId> next_forward(const Graph& graph, const BackwardPass& pass, const BackwardPass& next) {
  if (next.gradients.empty() || pass.update_tasks.empty()) return {};
  const TaskId stop = next.gradients.front().ready;
  std::vector<TaskId> tasks;
  for (TaskId t = successor(graph, pass.update_tasks.back(), EdgeType::gpu_sequential); t != kNoTask;
       t = successor(graph, t, EdgeType::gpu_sequential)) {
    if (t == stop) return tasks;
    tasks.push_back(t);
  }
  return {};
}

std::vector<TaskId> forward_use_tasks(const Graph& graph, const BackwardPass& pass,
                                      const std::vector<TaskId>& forward) {
  std::vector<double> start(forward.size(), 0);  // cumulative GPU time before each forward task
  for (std::size_t i = 1; i < forward.size(); ++i)
    start[i] = start[i - 1] + static_cast<double>(graph.task(forward[i - 1]).duration_ns);
  const double total = start.back() + static_cast<double>(graph.task(forward.back()).duration_ns);
  const auto& g = pass.gradients;
  const double first = static_cast<double>(g.front().ready_ns), last = static_cast<double>(g.back().ready_ns);
  std::vector<TaskId> uses(g.size());
  for (std::size_t j = 0; j < g.size(); ++j) {
    const double still_to_run =
        last > first ? (last - static_cast<double>(g[g.size() - 1 - j].ready_ns)) / (last - first) : 0;
    const auto at = std::upper_bound(start.begin(), start.end(), still_to_run * total) - start.begin() - 1;
    uses[j] = forward[static_cast<std::size_t>(std::max<std::ptrdiff_t>(at, 0))];
  }
  return uses;
}

std::vector<Bucket> fill_buckets(const std::vector<Gradient>& gradients, std::int64_t first_cap, std::int64_t cap) {
  std::vector<Bucket> buckets;
  Bucket current;
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    current.last = i + 1;
    current.bytes += gradients[i].bytes;
    if (current.bytes >= (buckets.empty() ? first_cap : cap)) {
      buckets.push_back(current);
      current = Bucket{i + 1, i + 1, 0};
    }
  }
  if (current.last > current.first) buckets.push_back(current);
  return buckets;
}

std::vector<ReadyBucket> gradient_buckets(const BackwardPass& pass, std::int64_t first_cap, std::int64_t cap) {
  std::vector<ReadyBucket> buckets;
  for (const Bucket& b : fill_buckets(pass.gradients, first_cap, cap))
    buckets.push_back({pass.gradients[b.last - 1].ready, b.bytes});
  return buckets;
}

std::vector<ReadyBucket> ready_recorded_buckets(const BackwardPass& pass, const TraceCollectives& collectives,
                                                const LaunchIndex& launches) {
  std::vector<ReadyBucket> buckets;
  for (std::size_t i : pass.recorded_buckets) {
    const TraceCollective& c = collectives.list[i];
    if (const TaskId ready = launches.last_before(c.thread, c.start_ns); ready != kNoTask)
      buckets.push_back({ready, c.bytes});
  }
  return buckets;
}

}  // namespace daydream
