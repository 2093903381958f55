#pragma once
/// @file roofline.hpp
/// @brief The work per kernel and the roofline report of the GPU model (docs/gpu_model.md,
/// "Work per kernel" and "Roofline report"): FLOPs and bytes of the operators that dominate
/// training, read off the shapes a trace records (Kineto `record_shapes`), shared out to the
/// kernels each operator launched; each kernel's bound from its arithmetic intensity against the
/// device's ridge point (from its name where there are no shapes); and time, work, achieved rates
/// and share of peak per kernel class, operator and layer.
///
/// @code
///   const auto graph = daydream::build_graph(daydream::load_trace("resnet50.json.gz"));
///   const auto catalog = daydream::DeviceCatalog::builtin();
///   const daydream::RooflineReport report = daydream::make_roofline(graph, daydream::roofline_device(catalog, graph));
///   for (const daydream::RooflineRow& row : report.classes) std::cout << row.name << " " << row.decided_by << "\n";
/// @endcode

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daydream/device.hpp"
#include "daydream/graph.hpp"

namespace daydream {

// --- work per operator ---

/// What one recorded operator computes, from its input shapes.
struct OperatorWork {
  enum class Status : std::uint8_t {
    known,     ///< a rule for its name, and shapes it can read
    no_rule,   ///< no rule for its name: its kernels take the work of a recorded operator around it
    unusable,  ///< a rule, but shapes it cannot read (`problem` says why): its kernels are classed by name
  };
  Status status = Status::no_rule;
  double flops = 0;  ///< floating-point operations (a multiply-add is 2)
  double bytes = 0;  ///< bytes read and written, each tensor once
  /// The rule's family: "gemm", "convolution forward", "convolution backward", "attention",
  /// "attention backward", "elementwise", "normalization", "reduction", "optimizer".
  std::string_view rule;
  /// The element type of its first floating-point tensor input, when one records it.
  std::optional<Precision> dtype;
  std::string problem;  ///< unusable: what is wrong with the shapes
};

/// The work of every recorded operator of `graph` (Graph::operators(), same order). Work is the
/// operator's own: that of recorded operators inside it with a rule is taken out (aten::conv2d
/// keeps none of the FLOPs of the aten::cudnn_convolution inside it), so that no FLOP is counted
/// twice. Backward convolutions take their forward output from the autograd node of the same
/// sequence number; docs/gpu_model.md lists every rule and its formula.
std::vector<OperatorWork> operator_work(const Graph& graph);

// --- work and bound per kernel ---

/// One kernel on the roofline.
struct KernelWork {
  TaskId task = kNoTask;
  /// Its class by name (classify_kernel), with the precision its operator's data type gives when
  /// the name gives none, and `bound` as decided: by shapes when `by_shapes`, else by the name rule.
  KernelClass kernel;
  bool by_shapes = false;
  double flops = 0;      ///< by_shapes: its share (by time) of its operator's work
  double bytes = 0;
  double peak_flops = 0; ///< FLOP/s of its engine at its precision on the device (engine_flops)
  double ridge = 0;      ///< peak_flops / memory bandwidth: FLOP per byte
  std::int32_t op = -1;  ///< index into Graph::operators() of the operator whose work it shares, or -1
};

/// Every live kernel of `graph` (TaskKind::kernel; collectives are the network's) in id order,
/// with its work and bound on `device`.
std::vector<KernelWork> kernel_work(const Graph& graph, const DeviceSpec& device);

// --- the report ---

/// Kernels grouped by class, operator or layer.
struct RooflineRow {
  std::string name;  ///< "tensor fp16" (class), the operator's name, the layer path
  Engine engine = Engine::none;          ///< class rows; others: the engine with most of the time
  Precision precision = Precision::fp32; ///< likewise
  Bound bound = Bound::memory;
  /// How the bound was decided: "shapes: intensity 52.31 vs ridge 17.44", "name rule: sgemm",
  /// or for rows that have both, "shapes for 62.5% of the time: intensity ... vs ridge ...; name
  /// rule for the rest".
  std::string decided_by;
  TimeNs time_ns = 0;  ///< recorded kernel time
  std::int64_t kernels = 0;
  TimeNs shaped_ns = 0;  ///< time of the kernels whose work is known (the rates below are over it)
  std::int64_t shaped_kernels = 0;
  double flops = 0, bytes = 0;  ///< of the kernels whose work is known
  double compute_ns = 0;        ///< the time those FLOPs take at each kernel's peak
  double memory_ns = 0;         ///< the time those bytes take at the memory bandwidth
  /// The row's compute roof: its FLOPs over compute_ns (its kernels' peaks, weighted by their
  /// FLOPs); without FLOPs, the peak of its engine and precision.
  double peak_flops = 0;
  double memory_bandwidth = 0;  ///< the device's, bytes/s

  bool has_work() const { return shaped_kernels > 0; }
  double intensity() const;           ///< FLOP per byte; NaN without work
  double ridge() const;               ///< peak_flops / memory_bandwidth, FLOP per byte
  double achieved_flops() const;      ///< FLOP/s over shaped_ns; NaN without work
  double achieved_bandwidth() const;  ///< bytes/s over shaped_ns; NaN without work
  /// Compute-bound: achieved FLOP/s over the peak of the row's engines and precisions
  /// (compute_ns / shaped_ns); memory-bound: achieved bytes/s over the memory bandwidth. NaN
  /// without work.
  double share_of_peak() const;
  double expected_ns() const { return compute_ns > memory_ns ? compute_ns : memory_ns; }  ///< at peak
};

/// One peak of the device, for the header: an engine at a precision, its FLOP/s and ridge point.
struct RooflinePeak {
  Engine engine = Engine::simt;
  Precision precision = Precision::fp32;
  double flops = 0;  ///< 0: the device has no such unit
  double ridge = 0;
};

struct RooflineReport {
  std::string trace;
  DeviceSpec device;
  std::string recorded_gpu;  ///< the GPU name the trace records (empty when it records none)
  std::vector<RooflinePeak> peaks;  ///< simt fp32, simt fp16, tensor tf32, fp16, bf16, fp8
  std::int64_t kernels = 0, shaped_kernels = 0;
  TimeNs kernel_ns = 0, shaped_ns = 0;
  std::int64_t recorded_operators = 0;  ///< operators with shapes the graph keeps (Graph::operators())
  std::int64_t malformed_operators = 0; ///< operators whose shapes were dropped at import (malformed_input_shapes)
  std::int64_t unusable_operators = 0;  ///< operators with a rule whose shapes it cannot read
  std::string first_unusable;           ///< "aten::convolution (event #541): ..." for the first of them
  std::vector<RooflineRow> classes;     ///< by engine, precision, bound and basis; by time, then name
  std::vector<RooflineRow> operators;   ///< by operator name (kernels outside any: "(no operator)")
  std::vector<RooflineRow> layers;      ///< by layer path; empty when no kernel has a layer
  /// Expected time at peak vs measured, per layer (per operator when no kernel has a layer):
  /// the rows with work, by measured time.
  std::vector<RooflineRow> expected;
  bool expected_by_layer = false;
};

/// The roofline report of `graph`'s kernels on `device` (docs/gpu_model.md, "Roofline report").
RooflineReport make_roofline(const Graph& graph, const DeviceSpec& device);

/// The device of a roofline: the catalogue's `name` when given (throws Error listing the known
/// names when it is unknown), else the GPU the trace ran on (traced_device: throws Error naming
/// the recorded GPU when the catalogue does not know it, or when the trace names none).
const DeviceSpec& roofline_device(const DeviceCatalog& catalog, const Graph& graph, std::string_view name = {});

}  // namespace daydream
