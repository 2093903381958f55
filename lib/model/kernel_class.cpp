// A kernel's engine and precision from its name (docs/gpu_model.md, "Kernel classes"). The
// patterns are those of NVIDIA's libraries and PyTorch's own kernels: cuBLAS/cuDNN/CUTLASS name
// their tensor-core kernels by the MMA instruction (hmma, imma, s1688, s16816, h884, ...) or by
// the xmma/tensorop family, their SIMT ones by the BLAS routine (sgemm, hgemm) or an "engine"
// of a precision; PyTorch names the element type in the template arguments (float, c10::Half,
// c10::BFloat16). Matching is by substring of the lower-cased name before its parameter list,
// so a pattern can neither blow up nor depend on a library version beyond these families.
#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "daydream/device.hpp"
#include "model/kernel_signature.hpp"

namespace daydream {
namespace {

struct Pattern {
  std::string_view text;
  std::string_view rule;
};

template <std::size_t N>
const Pattern* first_in(const std::string& signature, const std::array<Pattern, N>& patterns) {
  for (const Pattern& p : patterns)
    if (signature.find(p.text) != std::string::npos) return &p;
  return nullptr;
}

// Helpers of the GEMM/convolution libraries that do no dense math (layout changes, split-k
// reductions, Winograd tile transforms, offsets): memory-bound whatever family they belong to.
constexpr std::array<Pattern, 8> kLibraryHelpers{{{"nchwtonhwc", "layout transform"},
                                                  {"nhwctonchw", "layout transform"},
                                                  {"splitkreduce", "split-k reduction"},  // not cuDNN's *_splitK_* GEMMs
                                                  {"split_k", "split-k reduction"},
                                                  {"winogradtiles", "Winograd tile transform"},
                                                  {"offsets", "offsets helper"},
                                                  {"settensor", "tensor fill"},
                                                  {"reduce", "reduction"}}};

// A GEMM or convolution of a tensor-core family that names the SIMT instruction it runs on:
// cuBLAS's fp32 kernels without TF32 (sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma_..., what
// PyTorch's fp32 matmuls run on an A100 while TF32 is off for matmul, its default). Read before
// the families, so that "xmma" does not make them tensor-core kernels.
constexpr std::array<Pattern, 1> kSimtInstruction{{{"_ffma_", "ffma (SIMT fp32 FMA)"}}};

// Tensor-core kernels: the MMA instruction or the library family that only runs on tensor cores.
constexpr std::array<Pattern, 16> kTensorEngine{{{"hmma", "hmma"},
                                                 {"imma", "imma"},
                                                 {"xmma", "xmma"},
                                                 {"tensorop", "tensorop"},
                                                 {"s16816", "s16816"},
                                                 {"h16816", "h16816"},
                                                 {"s1688", "s1688"},
                                                 {"h1688", "h1688"},
                                                 {"s884", "s884"},
                                                 {"h884", "h884"},
                                                 {"wmma", "wmma"},
                                                 {"nvjet", "nvjet (cuBLAS 12)"},
                                                 {"gmma", "gmma (Hopper)"},
                                                 {"flash_fwd", "flash attention"},
                                                 {"flash_bwd", "flash attention"},
                                                 {"fmha", "fused multi-head attention"}}};

// GEMMs and convolutions on the SIMT cores.
constexpr std::array<Pattern, 9> kSimtEngine{{{"sgemm", "sgemm"},
                                              {"hgemm", "hgemm"},
                                              {"scudnn", "scudnn"},
                                              {"float_engine", "cuDNN float engine"},
                                              {"dgrad_engine", "cuDNN dgrad engine"},
                                              {"wgrad_alg", "cuDNN wgrad engine"},
                                              {"winograd", "Winograd convolution"},
                                              {"fft", "FFT convolution"},
                                              {"gemm", "gemm"}}};

// Precision markers, most specific first: a tensor kernel's MMA format, then the element type.
constexpr std::array<Pattern, 19> kPrecisionMarks{{{"e4m3", "e4m3"},
                                                   {"e5m2", "e5m2"},
                                                   {"fp8", "fp8"},
                                                   {"tf32", "tf32"},
                                                   {"bf16", "bf16"},
                                                   {"bfloat16", "bfloat16"},
                                                   {"hmma_fp32", "hmma_fp32 (fp16 inputs)"},
                                                   {"fp16", "fp16"},
                                                   {"f16", "f16"},
                                                   {"c10::half", "c10::Half"},
                                                   {"__half", "__half"},
                                                   {"h16816", "h16816"},
                                                   {"h1688", "h1688"},
                                                   {"h884", "h884"},
                                                   {"s884", "s884 (fp16 inputs)"},
                                                   {"hgemm", "hgemm"},
                                                   {"<half", "half"},
                                                   {" half", "half"},
                                                   {"s1688", "s1688 (tf32)"}}};

bool names_convolution(const std::string& signature) {
  for (std::string_view mark : {"conv", "cudnn", "fprop", "dgrad", "wgrad", "winograd", "fft"})
    if (signature.find(mark) != std::string::npos) return true;
  return false;
}

/// PyTorch's (and xformers') memory-efficient attention kernels name their element type:
/// fmha_cutlassF_f32_aligned_64x64_rf_sm80, fmha_cutlassB_f32_..., against _f16_ and _bf16_.
bool is_fp32_memory_efficient_attention(const std::string& signature) {
  return signature.find("fmha_cutlass") != std::string::npos && signature.find("_f32_") != std::string::npos;
}

Precision precision_of_mark(std::string_view text) {
  if (text == "e4m3" || text == "e5m2" || text == "fp8") return Precision::fp8;
  if (text == "tf32" || text == "s1688") return Precision::tf32;
  if (text == "bf16" || text == "bfloat16") return Precision::bf16;
  return Precision::fp16;
}

}  // namespace

std::string kernel_signature(std::string_view name) {
  constexpr std::string_view anonymous = "(anonymous namespace)";  // part of the name, not its parameters
  std::size_t depth = 0, end = name.size();
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    else if (name[i] == '>' && depth > 0) --depth;
    else if (name.substr(i, anonymous.size()) == anonymous) i += anonymous.size() - 1;
    else if (name[i] == '(' && depth == 0 && i > 0) { end = i; break; }
  }
  std::string out(name.substr(0, end));
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view to_string(Engine engine) {
  switch (engine) {
    case Engine::tensor: return "tensor";
    case Engine::simt: return "simt";
    case Engine::none: return "none";
  }
  return "?";
}

std::string_view to_string(Bound bound) { return bound == Bound::compute ? "compute" : "memory"; }

KernelClass classify_kernel(std::string_view name) {
  const std::string signature = kernel_signature(name);
  KernelClass out;
  if (const Pattern* helper = first_in(signature, kLibraryHelpers)) {
    out.engine_rule = helper->rule;
  } else if (const Pattern* simt_mma = first_in(signature, kSimtInstruction)) {
    out.engine = Engine::simt;
    out.engine_rule = simt_mma->rule;
  } else if (const Pattern* tensor = first_in(signature, kTensorEngine)) {
    out.engine = Engine::tensor;
    out.engine_rule = tensor->rule;
  } else if (const Pattern* simt = first_in(signature, kSimtEngine)) {
    out.engine = Engine::simt;
    out.engine_rule = simt->rule;
  } else {
    out.engine_rule = "no GEMM or convolution in the name";
  }
  out.bound = out.engine == Engine::none ? Bound::memory : Bound::compute;
  out.convolution = out.bound == Bound::compute && names_convolution(signature);
  if (is_fp32_memory_efficient_attention(signature)) {
    out.precision = Precision::fp32;
    out.fp32_as_3xtf32 = true;
    out.precision_rule = "fmha_cutlass f32 (3xTF32 on sm80+)";
  } else if (const Pattern* mark = first_in(signature, kPrecisionMarks)) {
    out.precision = precision_of_mark(mark->text);
    out.precision_rule = mark->rule;
  } else if (out.engine == Engine::tensor) {
    out.precision = Precision::tf32;  // fp32 data on tensor cores: TF32 (cuDNN's default for convolutions)
    out.precision_rule = "tensor-core kernel on fp32 data";
  } else {
    out.precision_rule = "default fp32";
  }
  if (out.engine != Engine::tensor && out.precision == Precision::tf32) out.precision = Precision::fp32;
  return out;
}

}  // namespace daydream
