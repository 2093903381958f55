// Each kernel's work and bound, and the roofline report by class, operator and layer
// (docs/gpu_model.md, "Work per kernel" and "Roofline report").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "daydream/error.hpp"
#include "daydream/roofline.hpp"

namespace daydream {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The roof a kernel's FLOPs run against: kernels without dense math run on the SIMT cores.
double kernel_peak(const DeviceSpec& device, const KernelClass& k) {
  const Engine engine = k.engine == Engine::none ? Engine::simt : k.engine;
  return kernel_flops(device, k, {engine, k.precision});
}

/// A name without a precision mark says nothing about the data: the operator's type does.
void take_operator_dtype(KernelClass& k, std::optional<Precision> dtype) {
  const bool default_rule = k.precision_rule == "default fp32" || k.precision_rule == "tensor-core kernel on fp32 data";
  if (!default_rule || !dtype || *dtype == Precision::fp32) return;
  k.precision = *dtype;
  k.precision_rule = "operator data type";
}

/// The operator whose work kernel `task` shares: from the innermost operator around its launch
/// outwards, the first with a rule; -1 when there is none, or when its shapes are unusable.
std::int32_t working_operator(const Graph& graph, const std::vector<OperatorWork>& work, const Task& task) {
  const OperatorRecord* record = graph.find_operator(task.op_event);
  if (record == nullptr) return -1;
  auto op = static_cast<std::int32_t>(record - graph.operators().data());
  while (op >= 0 && work[static_cast<std::size_t>(op)].status == OperatorWork::Status::no_rule)
    op = graph.operators()[static_cast<std::size_t>(op)].parent;
  if (op < 0 || work[static_cast<std::size_t>(op)].status != OperatorWork::Status::known) return -1;
  const OperatorWork& w = work[static_cast<std::size_t>(op)];
  return w.bytes > 0 ? op : -1;  // nothing left once the work of the operators inside is taken out
}

/// GEMMs, convolutions and attention: their FLOPs are the dense math of their GEMM and
/// convolution kernels, not of the helpers the libraries launch beside them.
bool dense_rule(std::string_view rule) {
  return rule == "gemm" || rule.substr(0, 11) == "convolution" || rule.substr(0, 9) == "attention";
}

/// A kernel of a dense operator without dense math (layout transform, offsets, split-k
/// reduction, scaling) keeps its name rule, when the operator has kernels with dense math.
void leave_helpers_out(const std::vector<OperatorWork>& work, std::vector<KernelWork>& kernels) {
  std::vector<std::uint8_t> has_dense(work.size(), 0);
  for (const KernelWork& k : kernels)
    if (k.op >= 0 && k.kernel.engine != Engine::none) has_dense[static_cast<std::size_t>(k.op)] = 1;
  for (KernelWork& k : kernels) {
    if (k.op < 0 || k.kernel.engine != Engine::none) continue;
    const auto op = static_cast<std::size_t>(k.op);
    if (dense_rule(work[op].rule) && has_dense[op]) k.op = -1;
  }
}

std::vector<TaskId> live_kernels(const Graph& graph) {
  std::vector<TaskId> out;
  for (TaskId t = 0; t < graph.num_tasks(); ++t)
    if (!graph.removed(t) && graph.task(t).kind == TaskKind::kernel) out.push_back(t);
  return out;
}

/// Shares each operator's work among its kernels by time (evenly when they took none).
void share_work(const Graph& graph, const std::vector<OperatorWork>& work, std::vector<KernelWork>& kernels) {
  std::map<std::int32_t, std::pair<double, std::int64_t>> totals;  // op -> (time, kernels)
  for (const KernelWork& k : kernels)
    if (k.op >= 0) {
      auto& [time, count] = totals[k.op];
      time += static_cast<double>(graph.task(k.task).duration_ns);
      ++count;
    }
  for (KernelWork& k : kernels) {
    if (k.op < 0) continue;
    const auto& [time, count] = totals[k.op];
    const double duration = static_cast<double>(graph.task(k.task).duration_ns);
    const double share = time > 0 ? duration / time : 1.0 / static_cast<double>(count);
    const OperatorWork& w = work[static_cast<std::size_t>(k.op)];
    k.flops = w.flops * share;
    k.bytes = w.bytes * share;
    k.by_shapes = true;
    k.kernel.bound = w.flops / w.bytes >= k.ridge ? Bound::compute : Bound::memory;
  }
}

std::vector<KernelWork> kernel_work_with(const Graph& graph, const DeviceSpec& device,
                                         const std::vector<OperatorWork>& work) {
  std::vector<KernelWork> out;
  for (TaskId t : live_kernels(graph)) {
    KernelWork k;
    k.task = t;
    k.kernel = classify_kernel(graph.name(t));
    k.op = working_operator(graph, work, graph.task(t));
    out.push_back(k);
  }
  leave_helpers_out(work, out);
  for (KernelWork& k : out) {
    if (k.op >= 0) take_operator_dtype(k.kernel, work[static_cast<std::size_t>(k.op)].dtype);
    k.peak_flops = kernel_peak(device, k.kernel);
    k.ridge = device.memory_bandwidth > 0 ? k.peak_flops / device.memory_bandwidth : 0;
  }
  share_work(graph, work, out);
  return out;
}

// --- aggregation ---

/// A row being summed, plus what decides its bound and basis.
struct Accumulator {
  RooflineRow row;
  std::map<std::string_view, TimeNs> name_rules;                          // engine rule -> time
  /// (engine, precision, fp32 as 3xTF32) -> time: the row's roof where no kernel has shapes.
  std::map<std::tuple<Engine, Precision, bool>, TimeNs> engines;
  TimeNs compute_ns = 0, memory_ns = 0;                                   // time by each kernel's bound

  void add(const Graph& graph, const KernelWork& k, const DeviceSpec& device) {
    const TimeNs duration = graph.task(k.task).duration_ns;
    row.time_ns += duration;
    ++row.kernels;
    engines[{k.kernel.engine, k.kernel.precision, k.kernel.fp32_as_3xtf32}] += duration;
    (k.kernel.bound == Bound::compute ? compute_ns : memory_ns) += duration;
    if (!k.by_shapes) {
      name_rules[k.kernel.engine_rule] += duration;
      return;
    }
    row.shaped_ns += duration;
    ++row.shaped_kernels;
    row.flops += k.flops;
    row.bytes += k.bytes;
    if (k.peak_flops > 0) row.compute_ns += k.flops / k.peak_flops * 1e9;
    if (device.memory_bandwidth > 0) row.memory_ns += k.bytes / device.memory_bandwidth * 1e9;
  }

  RooflineRow finish(const DeviceSpec& device) {
    const auto dominant = std::max_element(engines.begin(), engines.end(), [](const auto& a, const auto& b) {
      return a.second < b.second;  // ties: the first in (engine, precision, 3xTF32) order
    });
    KernelClass dominant_class;
    if (dominant != engines.end())
      std::tie(dominant_class.engine, dominant_class.precision, dominant_class.fp32_as_3xtf32) = dominant->first;
    row.engine = dominant_class.engine;
    row.precision = dominant_class.precision;
    row.memory_bandwidth = device.memory_bandwidth;
    row.peak_flops = row.flops > 0 && row.compute_ns > 0 ? row.flops / (row.compute_ns * 1e-9)
                                                         : kernel_peak(device, dominant_class);
    const std::string shapes = row.has_work() ? fmt::format("intensity {:.2f} vs ridge {:.2f}", row.intensity(), row.ridge()) : "";
    if (row.has_work() && row.shaped_ns == row.time_ns && row.shaped_kernels == row.kernels) {
      row.bound = row.compute_ns >= row.memory_ns ? Bound::compute : Bound::memory;
      row.decided_by = "shapes: " + shapes;
      return row;
    }
    row.bound = compute_ns > memory_ns ? Bound::compute : Bound::memory;
    const std::string names = "name rule" + rule_text();
    if (!row.has_work()) {
      row.decided_by = names;
      return row;
    }
    const double share = row.time_ns > 0 ? 100.0 * static_cast<double>(row.shaped_ns) / static_cast<double>(row.time_ns) : 0;
    row.decided_by = fmt::format("shapes for {:.1f}% of the time: {}; {} for the rest", share, shapes, names);
    return row;
  }

  /// ": sgemm", or ": sgemm and 2 more" (the rule with most time first).
  std::string rule_text() const {
    if (name_rules.empty()) return "";
    const auto top = std::max_element(name_rules.begin(), name_rules.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
    if (name_rules.size() == 1) return fmt::format(": {}", top->first);
    return fmt::format(": {} and {} more", top->first, name_rules.size() - 1);
  }
};

/// Rows by time (longest first), then name.
std::vector<RooflineRow> sorted_rows(std::map<std::string, Accumulator>& groups, const DeviceSpec& device) {
  std::vector<RooflineRow> rows;
  for (auto& [key, acc] : groups) rows.push_back(acc.finish(device));
  std::stable_sort(rows.begin(), rows.end(), [](const RooflineRow& a, const RooflineRow& b) {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.name < b.name;
  });
  return rows;
}

std::string class_name(const KernelWork& k) {
  return fmt::format("{} {}", to_string(k.kernel.engine), to_string(k.kernel.precision));
}

/// Class rows: one per engine, precision, bound and basis (shapes, or the name rule). Kernels of
/// one engine and precision share a ridge, so a class decided by shapes has its kernels' bound.
std::vector<RooflineRow> class_rows(const Graph& graph, const std::vector<KernelWork>& kernels, const DeviceSpec& device) {
  std::map<std::string, Accumulator> groups;
  for (const KernelWork& k : kernels) {
    const std::string_view basis = k.by_shapes ? std::string_view("shapes") : k.kernel.engine_rule;
    Accumulator& acc = groups[fmt::format("{}\n{}\n{}", class_name(k), to_string(k.kernel.bound), basis)];
    acc.row.name = class_name(k);
    acc.add(graph, k, device);
  }
  return sorted_rows(groups, device);
}

std::string operator_name(const Graph& graph, const KernelWork& k) {
  if (k.op >= 0) return std::string(graph.string(graph.operators()[static_cast<std::size_t>(k.op)].name));
  const Task& t = graph.task(k.task);
  return t.op_name != 0 ? std::string(graph.string(t.op_name)) : std::string("(no operator)");
}

template <class KeyOf>
std::vector<RooflineRow> grouped_rows(const Graph& graph, const std::vector<KernelWork>& kernels,
                                      const DeviceSpec& device, KeyOf key_of) {
  std::map<std::string, Accumulator> groups;
  for (const KernelWork& k : kernels) {
    std::string key = key_of(k);
    if (key.empty()) continue;
    Accumulator& acc = groups[key];
    acc.row.name = key;
    acc.add(graph, k, device);
  }
  return sorted_rows(groups, device);
}

std::vector<RooflineRow> expected_rows(const std::vector<RooflineRow>& rows) {
  std::vector<RooflineRow> out;
  for (const RooflineRow& row : rows)
    if (row.has_work()) out.push_back(row);
  std::stable_sort(out.begin(), out.end(), [](const RooflineRow& a, const RooflineRow& b) {
    return a.shaped_ns != b.shaped_ns ? a.shaped_ns > b.shaped_ns : a.name < b.name;
  });
  return out;
}

std::vector<RooflinePeak> peaks_of(const DeviceSpec& device) {
  std::vector<RooflinePeak> peaks = {{Engine::simt, Precision::fp32},   {Engine::simt, Precision::fp16},
                                     {Engine::tensor, Precision::tf32}, {Engine::tensor, Precision::fp16},
                                     {Engine::tensor, Precision::bf16}, {Engine::tensor, Precision::fp8}};
  for (RooflinePeak& p : peaks) {
    // The units the device has: no fallback (a V100 has no tf32 roof, whatever runs instead).
    p.flops = p.engine == Engine::simt ? engine_flops(device, Engine::simt, p.precision) : device.peak_flops(p.precision);
    p.ridge = p.flops > 0 && device.memory_bandwidth > 0 ? p.flops / device.memory_bandwidth : 0;
  }
  return peaks;
}

void count_operators(const Graph& graph, const std::vector<OperatorWork>& work, RooflineReport& report) {
  report.recorded_operators = static_cast<std::int64_t>(work.size());
  report.malformed_operators = graph.report().get(stats::stat(stats::malformed_input_shapes).key);
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (work[i].status != OperatorWork::Status::unusable) continue;
    if (report.unusable_operators++ == 0) {
      const OperatorRecord& op = graph.operators()[i];
      report.first_unusable = fmt::format("{} (event #{}): {}", graph.string(op.name), op.event, work[i].problem);
    }
  }
}

}  // namespace

double RooflineRow::intensity() const { return has_work() && bytes > 0 ? flops / bytes : kNaN; }

double RooflineRow::ridge() const {
  return peak_flops > 0 && memory_bandwidth > 0 ? peak_flops / memory_bandwidth : kNaN;
}

double RooflineRow::achieved_flops() const {
  return has_work() && shaped_ns > 0 ? flops / (static_cast<double>(shaped_ns) * 1e-9) : kNaN;
}

double RooflineRow::achieved_bandwidth() const {
  return has_work() && shaped_ns > 0 ? bytes / (static_cast<double>(shaped_ns) * 1e-9) : kNaN;
}

double RooflineRow::share_of_peak() const {
  if (!has_work() || shaped_ns <= 0) return kNaN;
  return (bound == Bound::compute ? compute_ns : memory_ns) / static_cast<double>(shaped_ns);
}

std::vector<KernelWork> kernel_work(const Graph& graph, const DeviceSpec& device) {
  return kernel_work_with(graph, device, operator_work(graph));
}

RooflineReport make_roofline(const Graph& graph, const DeviceSpec& device) {
  RooflineReport report;
  report.trace = graph.source_path;
  report.device = device;
  if (!graph.gpus().empty()) report.recorded_gpu = graph.gpus().front().name;
  report.peaks = peaks_of(device);
  const std::vector<OperatorWork> work = operator_work(graph);
  count_operators(graph, work, report);
  const std::vector<KernelWork> kernels = kernel_work_with(graph, device, work);
  for (const KernelWork& k : kernels) {
    const TimeNs duration = graph.task(k.task).duration_ns;
    ++report.kernels;
    report.kernel_ns += duration;
    if (k.by_shapes) ++report.shaped_kernels, report.shaped_ns += duration;
  }
  report.classes = class_rows(graph, kernels, device);
  report.operators = grouped_rows(graph, kernels, device, [&](const KernelWork& k) { return operator_name(graph, k); });
  report.layers = grouped_rows(graph, kernels, device, [&](const KernelWork& k) {
    const Task& t = graph.task(k.task);
    return t.layer != 0 ? std::string(graph.string(t.layer)) : std::string();
  });
  report.expected_by_layer = !report.layers.empty();
  report.expected = expected_rows(report.expected_by_layer ? report.layers : report.operators);
  return report;
}

const DeviceSpec& roofline_device(const DeviceCatalog& catalog, const Graph& graph, std::string_view name) {
  if (!name.empty()) return catalog.at(name);
  try {
    return traced_device(catalog, graph.gpus(), graph.source_path);
  } catch (const Error& e) {
    throw Error(fmt::format("{} (roofline: name the GPU with --device NAME, Python device=NAME)", e.what()));
  }
}

}  // namespace daydream
