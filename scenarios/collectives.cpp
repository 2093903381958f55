// Shared by ddp and p3: the ring all-reduce cost model and its fit, the trace's recorded
// collectives, gradient discovery and sizes, DDP's bucketing and the common parameters.
#include "collectives.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "common.hpp"
#include "common/text.hpp"
#include "daydream/error.hpp"
#include "daydream/job.hpp"

namespace daydream::scenarios {

// --- the cost model ---

double ring_traffic_bytes(std::int64_t ranks, double bytes) {
  if (ranks <= 1) return 0;
  const auto n = static_cast<double>(ranks);
  return 2 * (n - 1) / n * bytes;
}

TimeNs RingCost::allreduce_ns(std::int64_t bytes) const {
  if (ranks <= 1) return 0;
  const double ns = latency_ns + ns_per_byte * ring_traffic_bytes(ranks, static_cast<double>(bytes));
  if (!(ns >= 0 && ns < 9e18))  // an int64 of ns holds about 292 years
    throw Error(fmt::format("all-reduce of {} bytes over {} GPUs would take {:g} ns", bytes, ranks, ns));
  return static_cast<TimeNs>(std::llround(ns));
}

std::optional<RingFit> fit_latency_bandwidth(const std::vector<std::pair<double, TimeNs>>& samples) {
  std::set<double> sizes;
  for (const auto& s : samples) sizes.insert(s.first);
  if (sizes.size() < 2) return std::nullopt;
  // Columns: 1 and the traffic in MB (scaled so that both columns have similar magnitudes).
  const auto m = static_cast<Eigen::Index>(samples.size());
  Eigen::MatrixXd a(m, 2);
  Eigen::VectorXd y(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    const auto& [traffic, duration] = samples[static_cast<std::size_t>(i)];
    a(i, 0) = 1;
    a(i, 1) = traffic / 1e6;
    y(i) = static_cast<double>(duration);
  }
  const Eigen::Vector2d x = a.colPivHouseholderQr().solve(y);
  const double residual = (y - a * x).squaredNorm();
  const double spread = (y.array() - y.mean()).matrix().squaredNorm();
  RingFit fit;
  fit.latency_ns = x(0);
  fit.ns_per_byte = x(1) / 1e6;
  fit.rms_residual_ns = std::sqrt(residual / static_cast<double>(m));
  fit.r_squared = spread > 0 ? 1 - residual / spread : 1;
  fit.samples = samples.size();
  fit.distinct_sizes = sizes.size();
  return fit;
}

std::optional<RingFit> fit_ring(const std::vector<MeasuredCollective>& samples, std::int64_t ranks) {
  if (ranks < 2) return std::nullopt;
  std::vector<std::pair<double, TimeNs>> traffic;
  for (const auto& s : samples) traffic.emplace_back(ring_traffic_bytes(ranks, static_cast<double>(s.bytes)), s.duration_ns);
  return fit_latency_bandwidth(traffic);
}

// --- the trace's own collectives ---

namespace {

bool names_allreduce(std::string_view name) {
  return text::contains_ignore_case(name, "allreduce") || text::contains_ignore_case(name, "all_reduce");
}

std::int64_t message_bytes(const CollectiveInfo& info) {
  const std::int64_t element = dtype_element_bytes(info.dtype);
  const std::int64_t elements = info.in_elements != kNone ? info.in_elements : info.out_elements;
  return element > 0 && elements >= 0 ? elements * element : kNone;
}

TraceCollective make_collective(std::string name, std::int64_t bytes, UnitId thread, TimeNs start_ns, TimeNs end_ns) {
  TraceCollective c;
  c.allreduce = names_allreduce(name);
  c.name = std::move(name);
  c.bytes = bytes;
  c.thread = thread;
  c.start_ns = start_ns;
  c.end_ns = end_ns;
  return c;
}

/// The record_param_comms range the call lies in, or nullptr.
TraceCollective* collective_around(std::vector<TraceCollective>& list, const Task& call) {
  for (auto& c : list)
    if (c.thread == call.unit && c.start_ns <= call.recorded_start_ns && call.recorded_start_ns < c.end_ns) return &c;
  return nullptr;
}

/// Attaches each traced communication task to the record_param_comms range its launch call lies
/// in; all-reduce kernels outside any range become collectives of unknown size.
void attach_comm_tasks(const Graph& graph, TraceCollectives& out) {
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (task.removed || task.kind != TaskKind::communication || task.source_event == kNone) continue;
    const TaskId call = launching_call(graph, t);
    TraceCollective* c = call == kNoTask ? nullptr : collective_around(out.list, graph.task(call));
    if (c == nullptr) {
      if (!names_allreduce(graph.name(t))) continue;
      const UnitId thread = call == kNoTask ? 0 : graph.task(call).unit;
      out.list.push_back(
          make_collective(std::string(graph.name(t)), kNone, thread, task.recorded_start_ns, task.recorded_start_ns));
      c = &out.list.back();
    }
    c->tasks.push_back(t);
    c->tasks_ns += task.duration_ns;
    c->allreduce = c->allreduce || names_allreduce(graph.name(t));  // DLRM's records name no collective
  }
}

}  // namespace

TraceCollectives read_trace_collectives(const Graph& graph) {
  TraceCollectives out;
  out.world_size = graph.world_size;
  for (const CollectiveRecord& r : graph.collectives()) {
    if (out.world_size == kNone || out.world_size < 1) out.world_size = r.info.group_size;
    out.list.push_back(make_collective(r.info.name, message_bytes(r.info), r.unit, r.start_ns, r.end_ns));
  }
  attach_comm_tasks(graph, out);
  std::stable_sort(out.list.begin(), out.list.end(),
                   [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  return out;
}

std::vector<TaskId> traced_allreduce_tasks(const TraceCollectives& collectives) {
  std::vector<TaskId> tasks;
  for (const auto& c : collectives.list)
    if (c.allreduce) tasks.insert(tasks.end(), c.tasks.begin(), c.tasks.end());
  std::sort(tasks.begin(), tasks.end());
  return tasks;
}

// --- gradients ---

LaunchIndex::LaunchIndex(const Graph& graph) : by_thread_(graph.units().size()) {
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (task.removed || !is_gpu(task.kind)) continue;
    const TaskId call = launch_call_of(graph, t);
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

TaskId stream_successor(const Graph& graph, TaskId task) {
  if (task == kNoTask) return kNoTask;
  for (const auto& s : graph.successors(task))
    if (s.edge.type == EdgeType::gpu_sequential && graph.task(s.task).unit == graph.task(task).unit) return s.task;
  return kNoTask;
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
                                            : stream_successor(graph, pass.gradients.back().ready);
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

// --- a traced DDP run ---

namespace {

/// When the CPU launched a GPU task: its launching call's start, else (launched before the trace
/// began) the task's own.
TimeNs launch_start_ns(const Graph& graph, TaskId task) {
  const TaskId call = launching_call(graph, task);
  return graph.task(call == kNoTask ? task : call).recorded_start_ns;
}

void sort_by_launch(const Graph& graph, TracedPass& pass) {
  std::vector<std::size_t> order(pass.allreduces.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return launch_start_ns(graph, pass.allreduces[a]) < launch_start_ns(graph, pass.allreduces[b]);
  });
  TracedPass sorted = pass;
  for (std::size_t i = 0; i < order.size(); ++i) {
    sorted.allreduces[i] = pass.allreduces[order[i]];
    sorted.recorded_bytes[i] = pass.recorded_bytes[order[i]];
  }
  pass = std::move(sorted);
}

bool names_broadcast(std::string_view name) { return text::contains_ignore_case(name, "broadcast"); }

/// A copy that coalesces tensors: a device-to-device copy, or a kernel named "copy".
bool is_copy_task(const Graph& graph, TaskId task) {
  return is_device_to_device_copy(graph, task) ||
         (graph.task(task).kind == TaskKind::kernel && text::contains_ignore_case(graph.name(task), "copy"));
}

/// The unbroken run of copy tasks of the broadcast's iteration in `launches` (its thread's, by
/// launch start) on either side of the broadcast's launch, appended to `out`.
void append_copies_around(const Graph& graph, const std::vector<std::pair<TimeNs, TaskId>>& launches,
                          TaskId broadcast, TimeNs launch_ns, std::vector<TaskId>& out) {
  const auto belongs = [&](TaskId t) {
    return is_copy_task(graph, t) && graph.task(t).iteration == graph.task(broadcast).iteration;
  };
  const auto at = std::lower_bound(launches.begin(), launches.end(), std::make_pair(launch_ns, TaskId{0}));
  for (auto it = at; it != launches.begin() && belongs(std::prev(it)->second); --it) out.push_back(std::prev(it)->second);
  for (auto it = at; it != launches.end() && belongs(it->second); ++it) out.push_back(it->second);
}

}  // namespace

std::vector<TracedPass> traced_passes(const Graph& graph, const TraceCollectives& collectives) {
  const auto& iterations = graph.iterations();
  std::vector<TracedPass> passes(iterations.size());
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    passes[i].iteration = static_cast<std::int32_t>(i);
    passes[i].end_ns = iterations[i].measured_start_ns + iterations[i].measured_ns;
  }
  for (const TraceCollective& c : collectives.list) {
    if (!c.allreduce) continue;
    const auto kernels = static_cast<std::int64_t>(c.tasks.size());
    for (TaskId t : c.tasks) {
      const std::int32_t iteration = graph.task(t).iteration;  // its launch's iteration
      if (iteration < 0 || static_cast<std::size_t>(iteration) >= passes.size()) continue;
      passes[iteration].allreduces.push_back(t);
      passes[iteration].recorded_bytes.push_back(c.bytes == kNone ? kNone : c.bytes / kernels);
    }
  }
  std::erase_if(passes, [](const TracedPass& p) { return p.allreduces.empty(); });
  for (TracedPass& pass : passes) sort_by_launch(graph, pass);
  return passes;
}

bool is_device_to_device_copy(const Graph& graph, TaskId task) {
  if (graph.task(task).kind != TaskKind::memcpy) return false;
  const std::string_view name = graph.name(task);
  return text::contains(name, "DtoD") || text::contains(name, "Device -> Device");
}

std::vector<TaskId> copy_back_copies(const Graph& graph, const LaunchIndex& launches, const TracedPass& pass) {
  if (pass.allreduces.empty()) return {};
  const TaskId call = launching_call(graph, pass.allreduces.back());
  if (call == kNoTask) return {};
  const Task& last_launch = graph.task(call);
  std::vector<TaskId> copies;
  for (TaskId t : launches.launched_in(last_launch.unit, last_launch.recorded_start_ns + 1, pass.end_ns))
    if (!graph.removed(t) && is_device_to_device_copy(graph, t)) copies.push_back(t);
  return copies;
}

std::vector<TaskId> buffer_broadcast_tasks(const Graph& graph, const LaunchIndex& launches) {
  const bool any_iteration = graph.iterations().empty();  // no steps marked: every broadcast counts
  std::vector<TaskId> tasks;
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    if (task.removed || task.kind != TaskKind::communication || !names_broadcast(graph.name(t))) continue;
    if (task.iteration < 0 && !any_iteration) continue;  // DDP's construction broadcasts parameters once, before
    tasks.push_back(t);
    const TaskId call = launching_call(graph, t);
    if (call != kNoTask)
      append_copies_around(graph, launches.launches_of(graph.task(call).unit), t, graph.task(call).recorded_start_ns,
                           tasks);
  }
  std::sort(tasks.begin(), tasks.end());
  tasks.erase(std::unique(tasks.begin(), tasks.end()), tasks.end());
  return tasks;
}

// --- gradient sizes ---

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

/// Per-parameter counts, in forward (model.parameters()) order, from
/// {"parameters": [{"name": "conv1.weight", "count": 9408}, ...]}.
std::vector<std::int64_t> read_param_file(const std::string& path, std::string_view scenario) {
  const auto fail = [&](const std::string& problem) {
    return Error(
        fmt::format("{}: param_file '{}': {} (expected {{\"parameters\": [{{\"name\": \"conv1.weight\", "
                    "\"count\": 9408}}, ...]}} in forward order)",
                    scenario, path, problem));
  };
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (const auto error = parser.load(path).get(doc)) throw fail(simdjson::error_message(error));
  simdjson::dom::array list;
  if (doc["parameters"].get(list)) throw fail("no \"parameters\" array");
  std::vector<std::int64_t> counts;
  for (simdjson::dom::element entry : list) {
    std::int64_t count = 0;
    if (entry["count"].get(count) || count < 0)
      throw fail(fmt::format("parameter #{} has no whole, non-negative \"count\"", counts.size()));
    counts.push_back(count);
  }
  if (counts.empty()) throw fail("the list is empty");
  return counts;
}

/// Durations of each parameter's optimizer update, in backward order, above the shortest one (its
/// fixed cost): memory-bound kernels whose time grows with the parameter's size. Empty when the
/// step's GPU tasks do not split evenly over the parameters.
std::vector<double> update_kernel_proxy(const Graph& graph, const BackwardPass& pass) {
  const std::size_t params = pass.gradients.size(), kernels = pass.update_tasks.size();
  if (params == 0 || kernels < params || kernels % params != 0) return {};
  const std::size_t per_param = kernels / params;
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

/// Spreads `total` over the pass's gradients; returns the proxy's name.
std::string spread_over_pass(const Graph& graph, BackwardPass& pass, std::int64_t total) {
  std::vector<double> weights = update_kernel_proxy(graph, pass);
  std::string proxy = "the optimizer's per-parameter update kernels";
  if (!has_weight(weights)) weights = accumulate_kernel_proxy(pass), proxy = "the AccumulateGrad kernels";
  if (!has_weight(weights))
    weights.assign(pass.gradients.size(), 1.0), proxy = "equal shares (no size proxy in the trace)";
  const auto parts = spread_bytes(total, weights);
  for (std::size_t i = 0; i < parts.size(); ++i) pass.gradients[i].bytes = parts[i];
  return proxy;
}

std::string proxies_text(const std::set<std::string>& proxies) {
  std::string text;
  for (const auto& p : proxies) text += (text.empty() ? "" : " / ") + p;
  return text;
}

std::string sizes_from_file(std::vector<BackwardPass>& passes, const ScenarioParams& params,
                            std::string_view scenario) {
  const std::string& path = params.text("param_file");
  const auto counts = read_param_file(path, scenario);
  const double per_param = params.number("bytes_per_param");
  for (BackwardPass& pass : passes) {
    const std::size_t n = pass.gradients.size();
    if (n == 0) continue;
    if (n != counts.size())
      throw Error(
          fmt::format("param_file '{}' lists {} parameters but the backward pass of iteration {} has {} "
                      "AccumulateGrad ranges",
                      path, counts.size(), pass.iteration, n));
    for (std::size_t i = 0; i < n; ++i)  // gradients become ready in reverse forward order
      pass.gradients[i].bytes = std::llround(static_cast<double>(counts[n - 1 - i]) * per_param);
  }
  return fmt::format(
      "gradient sizes from param_file '{}' ({} parameters, matched to the AccumulateGrad ranges in "
      "reverse order)",
      path, counts.size());
}

}  // namespace

std::int64_t given_total_bytes(const ScenarioParams& params, std::string_view scenario) {
  const double per_param = params.number("bytes_per_param");
  if (params.given("param_file")) {
    const auto counts = read_param_file(params.text("param_file"), scenario);
    return std::llround(static_cast<double>(std::accumulate(counts.begin(), counts.end(), std::int64_t{0})) *
                        per_param);
  }
  return params.given("params") ? std::llround(params.number("params") * per_param) : kNone;
}

std::string assign_sizes(const Graph& graph, std::vector<BackwardPass>& passes, const ScenarioParams& params,
                         std::string_view scenario) {
  if (params.given("param_file")) return sizes_from_file(passes, params, scenario);
  std::set<std::string> proxies;
  if (params.given("params")) {
    const auto total = std::llround(params.number("params") * params.number("bytes_per_param"));
    for (BackwardPass& pass : passes)
      if (!pass.gradients.empty()) proxies.insert(spread_over_pass(graph, pass, total));
    return fmt::format("gradient sizes: params = {:g} x {:g} bytes spread in proportion to {}", params.number("params"),
                       params.number("bytes_per_param"), proxies_text(proxies));
  }
  const bool recorded = std::all_of(passes.begin(), passes.end(), [](const BackwardPass& p) {
    return p.gradients.empty() || p.recorded_allreduce_bytes > 0;
  });
  if (!recorded)
    throw Error(
        "the trace records no gradient sizes; give param_file (a JSON file of per-parameter counts) or params "
        "(the total parameter count, e.g. params=25.6e6 for ResNet-50)");
  for (BackwardPass& pass : passes)
    if (!pass.gradients.empty()) proxies.insert(spread_over_pass(graph, pass, pass.recorded_allreduce_bytes));
  return fmt::format(
      "gradient sizes: each pass's all_reduce sizes recorded in the trace (record_param_comms), spread "
      "in proportion to {}",
      proxies_text(proxies));
}

// --- DDP buckets ---

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

// --- what ddp and p3 share ---

std::vector<ScenarioParam> data_parallel_params() {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr double kMinLink = 1e3;  // bytes/s: slower links would overflow the ns clock on large models
  auto param_file = ScenarioParam::text("param_file", "",
                                        "JSON file of per-parameter counts in forward order: {\"parameters\": "
                                        "[{\"name\": \"conv1.weight\", \"count\": 9408}, ...]}");
  return {
      ScenarioParam("machines", ParamKind::integer, 1, "machines (nodes) in the job", 1, 1e6),
      ScenarioParam("gpus", ParamKind::integer, 1, "GPUs per machine", 1, 1e6),
      ScenarioParam("intra", ParamKind::bandwidth, 100e9, "ring bandwidth between the GPUs of one machine (NVLink class)",
            kMinLink, kInf),
      ScenarioParam("inter", ParamKind::bandwidth, 10e9 / 8, "ring bandwidth between machines (10 Gb Ethernet)", kMinLink,
            kInf),
      ScenarioParam("bandwidth", ParamKind::bandwidth, 0,
            "the ring's bandwidth, overriding intra/inter (unset: intra on one machine, inter across machines)",
            kMinLink, kInf),
      ScenarioParam("latency", ParamKind::duration, 20e3, "fixed cost of one all-reduce (ring start-up)", 0, 1e15),
      ScenarioParam("bucket", ParamKind::bytes, 25 * kMiB, "DDP bucket cap (bucket_cap_mb = 25)", 0, kInf, true),
      ScenarioParam("first_bucket", ParamKind::bytes, 1 * kMiB, "cap of DDP's first bucket", 0, kInf, true),
      ScenarioParam("params", ParamKind::number, 0,
            "total parameter count, when the trace records no gradient sizes (e.g. 25.6e6 for ResNet-50)", 0, 1e13,
            true),
      ScenarioParam("bytes_per_param", ParamKind::number, 4, "bytes per gradient element (4 = fp32, 2 = fp16)", 0, 64, true),
      param_file,
  };
}

std::int64_t ranks_of(const ScenarioParams& params) { return params.integer("machines") * params.integer("gpus"); }

std::string format_bytes(double bytes) { return fmt::format("{:.2f} MB", bytes / 1e6); }

namespace {

std::string bandwidth_text(double ns_per_byte) {
  return ns_per_byte > 0 ? fmt::format("{:.3g} GB/s", 1.0 / ns_per_byte) : std::string("infinite");
}

/// A fit explaining less of the variance of the traced times than this is not used.
constexpr double kMinRSquared = 0.5;

/// The fit of the ring model to the trace's all-reduces of known size, when it explains them;
/// notes say what was fitted and whether it is used.
std::optional<RingFit> fit_trace(const TraceCollectives& collectives, std::vector<std::string>& notes) {
  std::vector<MeasuredCollective> samples;
  std::size_t unsized = 0;
  for (const auto& c : collectives.list) {
    if (!c.allreduce || c.tasks.empty()) continue;
    if (c.bytes == kNone)
      ++unsized;
    else
      samples.push_back({c.bytes, c.tasks_ns});
  }
  if (unsized > 0) notes.push_back(fmt::format("{} traced all-reduces record no size: left out of the fit", unsized));
  if (samples.empty()) return std::nullopt;
  const auto fit = fit_ring(samples, collectives.world_size);
  if (!fit) {
    notes.push_back(
        fmt::format("no fit: the trace's {} all-reduces of known size have fewer than 2 distinct sizes or "
                    "the world size ({}) is under 2",
                    samples.size(), collectives.world_size));
    return std::nullopt;
  }
  notes.push_back(
      fmt::format("fit to the trace's {} all-reduces ({} sizes, n = {}): latency {:.1f} us, bandwidth {}, "
                  "rms residual {:.1f} us, R^2 {:.2f}",
                  fit->samples, fit->distinct_sizes, collectives.world_size, fit->latency_ns / 1e3,
                  bandwidth_text(fit->ns_per_byte), fit->rms_residual_ns / 1e3, fit->r_squared));
  if (fit->r_squared >= kMinRSquared && fit->latency_ns >= 0 && fit->ns_per_byte > 0) return fit;
  notes.push_back(
      fmt::format("fit not used (needs R^2 >= {} and positive latency and bandwidth): the traced "
                  "all-reduce times are not explained by their sizes (NCCL kernels also wait for the "
                  "slowest rank)",
                  kMinRSquared));
  return std::nullopt;
}

}  // namespace

RingCost cluster_cost(const ScenarioParams& params, const TraceCollectives& collectives,
                      std::vector<std::string>& notes) {
  RingCost cost;
  cost.ranks = ranks_of(params);
  const bool one_machine = params.integer("machines") == 1;
  const std::string link = params.given("bandwidth") ? "bandwidth" : one_machine ? "intra" : "inter";
  const double bytes_per_s = params.number(link);
  cost.ns_per_byte = std::isinf(bytes_per_s) ? 0 : 1e9 / bytes_per_s;
  cost.latency_ns = params.number("latency");
  std::string latency_source = params.given("latency") ? "given" : "default";
  std::string link_source = (params.given(link) ? "given " : "default ") + link;
  if (const auto fit = fit_trace(collectives, notes)) {
    if (!params.given("latency")) cost.latency_ns = fit->latency_ns, latency_source = "fitted";
    if (!params.given(link)) cost.ns_per_byte = fit->ns_per_byte, link_source = "fitted";
  }
  notes.push_back(fmt::format("ring all-reduce over n = {} GPUs ({} x {}): latency {:.1f} us ({}), bandwidth {} ({})",
                              cost.ranks, params.integer("machines"), params.integer("gpus"), cost.latency_ns / 1e3,
                              latency_source, bandwidth_text(cost.ns_per_byte), link_source));
  return cost;
}

namespace {

/// The bandwidth at which latency + ns_per_byte * traffic adds up to the measured durations of
/// the all-reduces in `bytes`; 0 (an infinite link) when nothing is left after the latencies.
double measured_ns_per_byte(const Graph& graph, const std::map<TaskId, std::int64_t>& bytes, const RingCost& cost) {
  double busy_ns = 0, traffic = 0;
  for (const auto& [task, size] : bytes) {
    busy_ns += static_cast<double>(graph.task(task).duration_ns) - cost.latency_ns;
    traffic += ring_traffic_bytes(cost.ranks, static_cast<double>(size));
  }
  return traffic > 0 && busy_ns > 0 ? busy_ns / traffic : 0;
}

}  // namespace

RingCost traced_cluster_cost(const Graph& graph, const TraceCollectives& collectives,
                             const std::map<TaskId, std::int64_t>& bytes, const ScenarioParams& params,
                             std::vector<std::string>& notes) {
  RingCost cost;
  const bool known_ranks = collectives.world_size >= 2;
  cost.ranks = known_ranks ? collectives.world_size : 2;
  cost.latency_ns = params.number("latency");
  const std::string ranks_text =
      known_ranks ? fmt::format("n = {} (the trace's world size)", cost.ranks)
                  : std::string("n unknown (the trace has no world size; its 2(n-1)/n cancels out)");
  if (const auto fit = fit_trace(collectives, notes)) {
    if (!params.given("latency")) cost.latency_ns = fit->latency_ns;
    cost.ns_per_byte = fit->ns_per_byte;
    notes.push_back(fmt::format("merged all-reduces on the traced cluster, {}: latency {:.1f} us, bandwidth {} (fitted)",
                                ranks_text, cost.latency_ns / 1e3, bandwidth_text(cost.ns_per_byte)));
    return cost;
  }
  cost.ns_per_byte = measured_ns_per_byte(graph, bytes, cost);
  notes.push_back(fmt::format(
      "merged all-reduces on the traced cluster, {}: latency {:.1f} us ({}), bandwidth {} (from the measured "
      "durations of the {} traced all-reduces of known size: their time beyond the latency over their traffic; "
      "no fit, their sizes are not recorded or do not explain their times)",
      ranks_text, cost.latency_ns / 1e3, params.given("latency") ? "given" : "default", bandwidth_text(cost.ns_per_byte),
      bytes.size()));
  return cost;
}

UnitId add_comm_channel(Graph& graph, const std::string& name) {
  std::string unique = name;
  for (int k = 2; graph.find_unit(unique); ++k) unique = fmt::format("{} #{}", name, k);
  return graph.add_unit({UnitKind::comm_channel, unique, kNone, kNone, false});
}

}  // namespace daydream::scenarios
