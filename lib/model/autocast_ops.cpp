// Which kernels torch.autocast leaves in fp32 (docs/gpu_model.md, "Under autocast"). The source
// is PyTorch's autocast op reference ("CUDA Ops that can autocast to float32", torch.amp docs):
// autocast casts those operators' inputs to fp32, so their kernels, and the kernels of their
// backward pass, run in fp32 under fp16 or bf16 autocast.
#include <algorithm>
#include <array>
#include <string>

#include "daydream/device.hpp"
#include "model/kernel_signature.hpp"

namespace daydream {
namespace {

// The listed operators as the profiler records the innermost one around a kernel's launch
// (`aten::` stripped): the public name and, where it dispatches to another, the native one
// (softmax -> _softmax, layer_norm -> native_layer_norm, nll_loss -> nll_loss_forward). Sorted.
// Only forward-pass operators: autocast does not reach the backward pass, where the same
// operators (sum, pow, exp) run in the gradients' dtype.
constexpr std::array<std::string_view, 66> kForwardOps{
    "__pow__", "__rdiv__", "__rpow__", "__rtruediv__", "_cdist_forward", "_log_softmax", "_pdist_forward",
    "_softmax", "acos", "asin", "binary_cross_entropy_with_logits", "cdist", "cosh", "cosine_embedding_loss",
    "cosine_similarity", "cross_entropy_loss", "cumprod", "cumsum", "dist", "erfinv", "exp", "expm1",
    "frobenius_norm", "group_norm", "hinge_embedding_loss", "huber_loss", "kl_div", "l1_loss", "layer_norm",
    "linalg_vector_norm", "log", "log10", "log1p", "log2", "log_softmax", "logsumexp", "margin_ranking_loss",
    "mse_loss", "multi_margin_loss", "multilabel_margin_loss", "multilabel_margin_loss_forward",
    "native_group_norm", "native_layer_norm", "nll_loss", "nll_loss2d", "nll_loss2d_forward", "nll_loss_forward",
    "nll_loss_nd", "norm", "normalize", "nuclear_norm", "pdist", "poisson_nll_loss", "pow", "prod", "reciprocal",
    "renorm", "rsqrt", "sinh", "smooth_l1_loss", "soft_margin_loss", "softmax", "softplus", "sum", "tan",
    "triplet_margin_loss"};

// The backward operators of listed ones: they run in fp32 because their forward did, in any
// phase the trace gives them. Sorted.
constexpr std::array<std::string_view, 16> kBackwardOps{
    "_cdist_backward", "_log_softmax_backward_data", "_pdist_backward", "_softmax_backward_data",
    "huber_loss_backward", "l1_loss_backward", "mse_loss_backward", "multi_margin_loss_backward",
    "multilabel_margin_loss_backward", "native_group_norm_backward", "native_layer_norm_backward",
    "nll_loss2d_backward", "nll_loss_backward", "smooth_l1_loss_backward", "soft_margin_loss_backward",
    "softplus_backward"};
static_assert(std::ranges::is_sorted(kForwardOps) && std::ranges::is_sorted(kBackwardOps),
              "binary search needs them sorted");

struct KernelMark {
  std::string_view text;  // found in the kernel's lower-cased signature
  std::string_view rule;
};

// PyTorch's own CUDA kernels of listed operators, for traces without operator events (Nsight):
// the persistent softmax of PersistentSoftmax.cuh (in an anonymous namespace; other libraries'
// fused softmax kernels, such as Megatron's scaled_masked_softmax_warp_forward, run in the
// input's dtype and do not match) and at::native's softmax, layer_norm, group_norm and nll_loss
// kernels (apex's cuApplyLayerNorm, outside autocast, does not match either).
constexpr std::string_view kPersistentSoftmax = "(anonymous namespace)::softmax_warp_";
constexpr std::string_view kNative = "at::native::";
constexpr std::array<KernelMark, 8> kNativeKernels{{{"cunn_softmax", "softmax kernel"},
                                                    {"cunn_spatialsoftmax", "softmax kernel"},
                                                    {"layer_norm", "layer_norm kernel"},
                                                    {"layernorm", "layer_norm kernel"},
                                                    {"gammabetabackward", "layer_norm kernel"},
                                                    {"groupnorm", "group_norm kernel"},
                                                    {"group_norm", "group_norm kernel"},
                                                    {"nll_loss", "nll_loss kernel"}}};

std::string_view in_list(std::string_view op, const auto& sorted) {
  const auto it = std::lower_bound(sorted.begin(), sorted.end(), op);
  return it != sorted.end() && *it == op ? *it : std::string_view{};
}

}  // namespace

std::string_view autocast_fp32_operator(std::string_view operator_name, bool forward) {
  constexpr std::string_view aten = "aten::";
  if (operator_name.starts_with(aten)) operator_name.remove_prefix(aten.size());
  if (forward) {
    if (const std::string_view op = in_list(operator_name, kForwardOps); !op.empty()) return op;
  }
  return in_list(operator_name, kBackwardOps);
}

std::string_view autocast_fp32_kernel(std::string_view kernel_name) {
  const std::string signature = kernel_signature(kernel_name);
  const auto has = [&](std::string_view text) { return signature.find(text) != std::string::npos; };
  if (has(kPersistentSoftmax)) return "softmax kernel";
  if (!has(kNative)) return {};
  for (const KernelMark& mark : kNativeKernels)
    if (has(mark.text)) return mark.rule;
  return {};
}

std::string_view autocast_fp32(std::string_view kernel_name, std::string_view operator_name, bool forward) {
  if (!operator_name.empty()) {
    if (const std::string_view op = autocast_fp32_operator(operator_name, forward); !op.empty()) return op;
  }
  return autocast_fp32_kernel(kernel_name);
}

}  // namespace daydream
