#pragma once
/// @file device.hpp
/// @brief The GPU model's hardware facts: a catalogue of training GPUs (peak throughput per
/// precision, memory bandwidth, SMs, clocks, power) with the source of every figure, extendable
/// from a JSON file, and the identification of a trace's GPU by the name it records (Kineto
/// `deviceProperties`, Nsight `TARGET_INFO_GPU`, the CUPTI collector). docs/gpu_model.md.
///
/// @code
///   const auto catalog = daydream::DeviceCatalog::builtin();
///   const daydream::DeviceSpec& a100 = catalog.at("A100-SXM4-40GB");
///   double ratio = a100.peak_flops(daydream::Precision::fp16) / a100.peak_flops(daydream::Precision::tf32);  // 2
/// @endcode

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daydream/trace.hpp"

namespace daydream {

/// The number format a kernel computes in. `fp32` is plain single precision on the SIMT cores;
/// `tf32`, `fp16`, `bf16` and `fp8` are the tensor-core (matrix-core) formats, with fp32
/// accumulation as PyTorch uses them.
enum class Precision : std::uint8_t { fp32, tf32, fp16, bf16, fp8 };
inline constexpr std::size_t kPrecisionCount = 5;
std::string_view to_string(Precision precision);
/// "fp32", "tf32", "fp16", "bf16", "fp8" (also "float16", "half", "bfloat16", "float32");
/// nullopt for anything else.
std::optional<Precision> parse_precision(std::string_view text);

/// One GPU model. Throughputs are dense peaks (no structured sparsity) in FLOP/s at the boost
/// clock, as the vendor's datasheet gives them; 0 means the GPU has no such unit.
struct DeviceSpec {
  std::string name;                  ///< canonical, e.g. "A100-SXM4-40GB"
  /// Case-insensitive substrings of the names traces record for this GPU ("A100-SXM4-40GB",
  /// "A100-PG509-200"); the longest match wins (see DeviceCatalog::identify).
  std::vector<std::string> aliases;
  std::string vendor;                ///< "NVIDIA", "AMD"
  std::int32_t compute_major = 0;    ///< CUDA compute capability (0 for AMD)
  std::int32_t compute_minor = 0;
  std::int32_t sm_count = 0;         ///< streaming multiprocessors (AMD: compute units)
  double boost_clock_mhz = 0;
  double fp32_flops = 0;             ///< SIMT (vector) fp32
  double fp16_simt_flops = 0;        ///< SIMT (vector) fp16, without tensor cores
  double tf32_flops = 0;             ///< tensor cores (AMD: fp32 matrix cores, xf32)
  double fp16_flops = 0;             ///< tensor cores, fp32 accumulate
  double bf16_flops = 0;             ///< tensor cores, fp32 accumulate
  double fp8_flops = 0;              ///< tensor cores
  double memory_bandwidth = 0;       ///< bytes/s of device memory (DRAM/HBM)
  double memory_bytes = 0;
  double l2_bytes = 0;               ///< 0 when the vendor does not publish it
  double power_watts = 0;            ///< board power (TDP/TBP)
  double host_bandwidth = 0;         ///< bytes/s per direction of the host link (PCIe), for copies
  std::string source;                ///< where the figures come from (datasheet, whitepaper)

  /// Peak FLOP/s of a tensor-core kernel at `precision` (fp32: the SIMT rate); 0 when the GPU
  /// has no unit for it.
  double peak_flops(Precision precision) const;
  /// FLOP per byte at which a kernel at `precision` turns from memory- to compute-bound:
  /// peak_flops / memory_bandwidth (the roofline's ridge point); 0 when either is unknown.
  double ridge_point(Precision precision) const;
  /// SM resources for the CUDA occupancy rules: SM count and compute capability, and what the
  /// capability implies (threads, resident blocks, registers per SM). No name or memory: only
  /// the occupancy rules read it.
  GpuResources resources() const;
};

/// One numeric field of a devices file, as `daydream gpus --json` and Python's daydream.gpus()
/// also write it: its key, the DeviceSpec member it sets, and the factor from the file's unit
/// (TFLOP/s, GB/s, GiB, MiB) to the member's (FLOP/s, bytes/s, bytes).
struct DeviceNumberField {
  std::string_view key;
  double DeviceSpec::*member;
  double unit;
};
/// The numeric fields, in the order they are written: boost_clock_mhz, fp32_tflops,
/// fp16_simt_tflops, tf32_tflops, fp16_tflops, bf16_tflops, fp8_tflops, memory_bandwidth_gbps,
/// memory_gib, l2_mib, power_watts, host_bandwidth_gbps.
const std::vector<DeviceNumberField>& device_number_fields();

/// The catalogue of GPUs: the built-in table (docs/gpu_model.md lists it with sources) plus
/// user entries. Lookups ignore case.
class DeviceCatalog {
 public:
  /// The built-in table.
  static DeviceCatalog builtin();
  /// The built-in table plus the GPUs of the devices file `path` (load_json); the built-in table
  /// alone when `path` is empty. Every `--devices FILE` and `devices=` goes through it.
  static DeviceCatalog with_file(const std::string& path);

  /// Adds the GPUs of a JSON file `{"devices": [...]}`: objects with the fields of DeviceSpec,
  /// throughputs in TFLOP/s (`fp32_tflops`, `fp16_simt_tflops`, `tf32_tflops`, `fp16_tflops`,
  /// `bf16_tflops`, `fp8_tflops`), bandwidths in GB/s (`memory_bandwidth_gbps`,
  /// `host_bandwidth_gbps`), sizes in GiB and MiB (`memory_gib`, `l2_mib`). An entry named as a
  /// known GPU changes only the fields it gives. Throws Error naming the file, the entry and the
  /// field for anything malformed (docs/gpu_model.md, "Your own GPUs").
  void load_json(const std::string& path);
  /// Adds or replaces one GPU; throws Error when it has no name or no memory bandwidth.
  void add(DeviceSpec spec);

  const std::vector<DeviceSpec>& devices() const { return devices_; }
  /// The GPU of this canonical name or alias; nullptr when none.
  const DeviceSpec* find(std::string_view name) const;
  /// The GPU a user names: as identify() without a memory size, so a catalogue name, an alias or
  /// the name the driver prints (`NVIDIA H200`, `NVIDIA A100-SXM4-80GB`, as nvidia-smi and
  /// torch.cuda.get_device_name give it) all work; throws Error listing the known names when
  /// none matches.
  const DeviceSpec& at(std::string_view name) const;
  /// The GPU a trace records as `trace_name`: the entry of that name or alias, else the entry whose alias is the longest substring of
  /// it (ignoring case); among entries with equally long aliases, the one whose memory is
  /// closest to `memory_bytes` (when the trace records it, else the first listed). nullptr
  /// when none matches.
  const DeviceSpec* identify(std::string_view trace_name, double memory_bytes = 0) const;

 private:
  std::vector<DeviceSpec> devices_;
};

/// The GPU a trace ran on, identified from its device records (`gpus`, as Graph::gpus()). Throws
/// Error naming the recorded GPU when the catalogue does not know it, when the trace records no
/// GPU name, or when it records GPUs of different kinds: the caller then names the GPU itself.
const DeviceSpec& traced_device(const DeviceCatalog& catalog, const std::vector<GpuResources>& gpus,
                                std::string_view source_path);

}  // namespace daydream

namespace daydream {

// --- what a kernel computes, read off its name (docs/gpu_model.md, "Kernel classes") ---

/// Where a kernel's arithmetic runs.
enum class Engine : std::uint8_t {
  tensor,  ///< tensor (matrix) cores: GEMMs and convolutions of cuBLAS/cuDNN/CUTLASS, attention
  simt,    ///< GEMMs and convolutions on the SIMT cores (sgemm, cuDNN's float engines)
  none,    ///< no dense math worth the name: elementwise, reductions, norms, copies, optimizers
};
std::string_view to_string(Engine engine);

/// What bounds a kernel on the roofline.
enum class Bound : std::uint8_t { compute, memory };
std::string_view to_string(Bound bound);

/// A kernel's class: its engine, the precision it computes in (for Engine::none, the element
/// type of its data), the bound that follows, and which documented rule decided each.
struct KernelClass {
  Engine engine = Engine::none;
  Precision precision = Precision::fp32;
  Bound bound = Bound::memory;
  /// A convolution (cuDNN: "conv", "cudnn", "fprop", "dgrad", "wgrad", "winograd", "fft" in the
  /// name) rather than a GEMM (cuBLAS): PyTorch's TF32 switches differ for the two (run_on).
  bool convolution = false;
  /// fp32 computed as three TF32 products on the tensor cores where the GPU has TF32 (CUTLASS's
  /// OpMultiplyAddFastF32), on the SIMT cores where it has not: PyTorch's memory-efficient
  /// attention in fp32 (`fmha_cutlassF_f32_*`, `fmha_cutlassB_f32_*`; its gemm_kernel_utils.h
  /// picks FastF32 tensor-core GEMMs for float on sm80 and newer).
  bool fp32_as_3xtf32 = false;
  std::string_view engine_rule;     ///< the name pattern that set the engine ("hmma", "sgemm", ...)
  std::string_view precision_rule;  ///< the name pattern that set the precision ("tf32", "c10::half", "default fp32")
};

/// Classifies a kernel by its name (the part before the parameter list: function name and
/// template arguments), ignoring case. Without shapes this is the documented estimate: tensor-
/// and SIMT-engine kernels are compute-bound, every other kernel memory-bound.
KernelClass classify_kernel(std::string_view name);

// --- moving a kernel to another GPU or precision ---

/// Peak FLOP/s of `device` for work on `engine` at `precision`. A tensor precision the device
/// lacks falls back as PyTorch does: tf32 and bf16 to the fp32 SIMT rate (V100, T4), fp8 to
/// fp16 tensor cores; fp16 SIMT to fp32 SIMT where the vendor gives no fp16 SIMT rate.
double engine_flops(const DeviceSpec& device, Engine engine, Precision precision);

/// How a kernel runs: on which engine, at which precision.
struct KernelRun {
  Engine engine = Engine::none;
  Precision precision = Precision::fp32;
};

/// The peak rate (FLOP/s) of a kernel of class `kernel` running as `run` on `device`:
/// engine_flops, except an fp32 run of a 3xTF32 kernel (KernelClass::fp32_as_3xtf32), which
/// gets a third of the TF32 peak where the device has TF32.
double kernel_flops(const DeviceSpec& device, const KernelClass& kernel, KernelRun run);

/// How many times longer a kernel of class `kernel` takes when it runs as `run` on `to` than it
/// took as traced on `from`:
///  - compute-bound: engine_flops(from, traced) / engine_flops(to, run), times the wave
///    quantization (waves_to x SMs_to) / (waves_from x SMs_from) when the launch configuration
///    gives both wave counts (a grid of SMs + 1 blocks takes two waves on `from` and one on a
///    GPU with more SMs);
///  - memory-bound: bandwidth_from / bandwidth_to, times the ratio of element sizes (a kernel
///    moving fp16 instead of fp32 data moves half the bytes).
/// Exactly 1 when `to` is `from` and `run` is the traced engine and precision.
double kernel_time_ratio(const KernelClass& kernel, const LaunchConfig* launch, const DeviceSpec& from,
                         const DeviceSpec& to, KernelRun run);

/// How PyTorch runs a kernel traced on `from` when it runs on `to`: a tf32 kernel on a GPU
/// without TF32 runs in fp32 on the SIMT cores; an fp32 SIMT convolution (cuDNN) traced on a GPU
/// without TF32 runs in TF32 on the tensor cores of a GPU with it when `tf32_convolutions`
/// (torch.backends.cudnn.allow_tf32, default True), an fp32 SIMT GEMM (cuBLAS) likewise when
/// `tf32_matmul` (torch.backends.cuda.matmul.allow_tf32, default False since PyTorch 1.12).
/// Everything else keeps its engine and precision (a SIMT kernel traced on a GPU with TF32 is
/// one the library chose over TF32).
KernelRun run_on(const KernelClass& kernel, const DeviceSpec& from, const DeviceSpec& to, bool tf32_convolutions,
                 bool tf32_matmul);

/// How a kernel traced on `device` runs under torch.autocast to `dtype` (fp16 or bf16):
///  - a kernel already at a reduced precision (fp16, bf16, fp8) is unchanged;
///  - a GEMM or convolution (tensor or SIMT engine) runs on the tensor cores at `dtype`;
///  - a memory-bound kernel moves `dtype`-sized elements.
KernelRun autocast_run(const KernelClass& kernel, Precision dtype);

/// How many times longer a kernel takes under autocast to `dtype` on the GPU it was traced on:
/// kernel_time_ratio(kernel, launch, device, device, autocast_run(kernel, dtype)), except for a
/// SIMT convolution traced on a GPU with TF32. cuDNN chose it over the TF32 tensor-core
/// algorithms, so those took at least as long; taken as equal (the one estimate the trace
/// gives), the tensor-core algorithm at `dtype` takes its time times the TF32-to-`dtype` peak
/// ratio. (cuDNN's SIMT engines gain no arithmetic rate in half precision: PyTorch runs half
/// convolutions with fp32 compute.)
double autocast_time_ratio(const KernelClass& kernel, const LaunchConfig* launch, const DeviceSpec& device,
                           Precision dtype);

/// Whether torch.autocast runs the kernels of operator `operator_name` (as the profiler names it,
/// "aten::native_layer_norm") in fp32: those of PyTorch's "CUDA ops that can autocast to float32"
/// (softmax, log_softmax, layer_norm, group_norm, the losses, sum, pow, exp, ...; their native
/// names too, such as _softmax and nll_loss_forward) when `forward` (autocast only dispatches the
/// forward pass: in the backward pass sum, pow and exp run in the gradients' dtype), and the
/// backward operators of listed ones (native_layer_norm_backward, _softmax_backward_data, ...) in
/// any phase. Returns the listed name that decided, empty when autocast runs it at its dtype.
std::string_view autocast_fp32_operator(std::string_view operator_name, bool forward);

/// The same from a kernel's name, for traces without operator events: PyTorch's own kernels of
/// listed operators (its persistent softmax, at::native's softmax, layer_norm, group_norm and
/// nll_loss kernels). Returns the rule ("softmax kernel", ...), empty for any other kernel.
std::string_view autocast_fp32_kernel(std::string_view kernel_name);

/// Why autocast runs kernel `kernel_name` in fp32, or empty: the operator around its launch
/// (`operator_name`, empty when the trace records none) by autocast_fp32_operator, else the
/// kernel's own name by autocast_fp32_kernel. What `amp` keeps, and daydream.autocast_fp32.
std::string_view autocast_fp32(std::string_view kernel_name, std::string_view operator_name, bool forward);

/// Bytes of one element at `precision` (fp32/tf32: 4, fp16/bf16: 2, fp8: 1).
double element_bytes(Precision precision);

}  // namespace daydream
