// FLOPs and bytes of recorded operators from their input shapes (docs/gpu_model.md, "Work per
// kernel"). Every product is taken in double: shapes come from the trace, and a product of
// dimensions may exceed any integer type without being an error worth more than a count.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

#include "daydream/roofline.hpp"

namespace daydream {
namespace {

using Status = OperatorWork::Status;
using Dims = std::span<const std::int64_t>;

/// Bytes per element of a tensor type as record_shapes writes it; nullopt for what is not a
/// tensor ("Scalar", "Int", "GenericList", ...).
std::optional<double> element_size(std::string_view type) {
  struct Entry { std::string_view type; double bytes; };
  static constexpr std::array<Entry, 19> kTypes{{
      {"float", 4}, {"double", 8}, {"c10::Half", 2}, {"c10::BFloat16", 2}, {"long int", 8}, {"long", 8},
      {"int", 4}, {"short int", 2}, {"short", 2}, {"signed char", 1}, {"unsigned char", 1}, {"bool", 1},
      {"c10::Float8_e4m3fn", 1}, {"c10::Float8_e5m2", 1}, {"c10::Float8_e4m3fnuz", 1},
      {"c10::Float8_e5m2fnuz", 1}, {"c10::complex<float>", 8}, {"c10::complex<double>", 16},
      {"c10::complex<c10::Half>", 4}}};
  for (const Entry& e : kTypes)
    if (e.type == type) return e.bytes;
  return std::nullopt;
}

std::optional<Precision> precision_of_type(std::string_view type) {
  if (type == "float" || type == "double") return Precision::fp32;
  if (type == "c10::Half") return Precision::fp16;
  if (type == "c10::BFloat16") return Precision::bf16;
  if (type.substr(0, 11) == "c10::Float8") return Precision::fp8;
  return std::nullopt;
}

double product(Dims dims, std::size_t from = 0, std::size_t to = SIZE_MAX) {
  double p = 1;
  for (std::size_t i = from; i < std::min(to, dims.size()); ++i) p *= static_cast<double>(dims[i]);
  return p;
}

/// One operator's inputs, read the way every rule needs them.
class Inputs {
 public:
  Inputs(const ShapeTable& table, std::size_t op) : table_(table), op_(op) {
    for (std::size_t i = 0; i < count(); ++i) {
      const OperandShape o = operand(i);
      if (o.tensor_list || o.type.empty()) continue;
      if (const auto size = element_size(o.type)) {
        default_size_ = *size;
        break;
      }
    }
  }
  std::size_t count() const { return table_.operand_count(op_); }
  OperandShape operand(std::size_t i) const { return table_.operand(op_, i); }
  Dims dims(std::size_t i) const { return i < count() ? operand(i).dims : Dims(); }

  /// Whether input i is a tensor (a known tensor type; an untyped input with dimensions, as
  /// traces without "Input type" record them; or a tensor list).
  bool tensor(std::size_t i) const {
    if (i >= count()) return false;
    const OperandShape o = operand(i);
    if (o.tensor_list) return true;
    return o.type.empty() ? !o.dims.empty() : element_size(o.type).has_value();
  }
  /// Bytes per element of input i: its type's; a tensor list's or an untyped input's, that of
  /// the first typed tensor input (4, fp32, when none records one).
  double size_of(std::size_t i) const {
    const OperandShape o = operand(i);
    if (o.tensor_list || o.type.empty()) return default_size_;
    return element_size(o.type).value_or(default_size_);
  }
  double elements(std::size_t i) const { return tensor(i) ? product(dims(i)) : 0; }
  double bytes(std::size_t i) const { return tensor(i) ? elements(i) * size_of(i) : 0; }
  /// Bytes of every tensor input.
  double input_bytes() const {
    double sum = 0;
    for (std::size_t i = 0; i < count(); ++i) sum += bytes(i);
    return sum;
  }
  double output_size() const { return default_size_; }
  std::optional<Precision> dtype() const {
    for (std::size_t i = 0; i < count(); ++i)
      if (const auto p = precision_of_type(operand(i).type)) return p;
    return std::nullopt;
  }

 private:
  const ShapeTable& table_;
  std::size_t op_;
  double default_size_ = 4;
};

OperatorWork known(double flops, double bytes, std::string_view rule) {
  OperatorWork w;
  w.status = Status::known;
  w.flops = flops;
  w.bytes = bytes;
  w.rule = rule;
  return w;
}

OperatorWork unusable(std::string problem, std::string_view rule) {
  OperatorWork w;
  w.status = Status::unusable;
  w.rule = rule;
  w.problem = std::move(problem);
  return w;
}

std::string shape_text(Dims dims) { return fmt::format("[{}]", fmt::join(dims, ", ")); }

/// What rules may look at beyond the operator itself: the recorded operator around it and the
/// autograd node of the same sequence number (the output shape of a forward convolution).
class WorkContext {
 public:
  explicit WorkContext(const Graph& graph) : graph_(graph) {
    const auto& ops = graph.operators();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].sequence_number == kNone) continue;
      const std::string_view name = graph.string(ops[i].name);
      if (name.find("Backward") != std::string_view::npos && name.substr(0, 10) != "autograd::")
        backward_nodes_.emplace(ops[i].sequence_number, i);
    }
  }
  Inputs inputs(std::size_t op) const { return Inputs(graph_.operator_shapes(), graph_.operators()[op].shapes); }
  std::string_view name(std::size_t op) const { return graph_.string(graph_.operators()[op].name); }
  std::optional<std::size_t> parent(std::size_t op) const {
    const std::int32_t p = graph_.operators()[op].parent;
    return p < 0 ? std::nullopt : std::optional<std::size_t>(static_cast<std::size_t>(p));
  }
  /// The output shape of forward operator `op`: the first input of the autograd node of its
  /// sequence number (the gradient of its output) whose rank is `rank`; empty when none.
  Dims forward_output(std::size_t op, std::size_t rank) const {
    const auto [first, last] = backward_nodes_.equal_range(graph_.operators()[op].sequence_number);
    for (auto it = first; it != last; ++it) {
      const Inputs node = inputs(it->second);
      if (node.count() > 0 && node.dims(0).size() == rank) return node.dims(0);
    }
    return {};
  }

 private:
  const Graph& graph_;
  std::multimap<std::int64_t, std::size_t> backward_nodes_;
};

// --- GEMMs: 2 * M * N * K (a multiply-add is two FLOPs) ---

constexpr std::string_view kGemm = "gemm";

/// A [.., M, K] x [.., K, N] product with `batch` independent products; bytes: A, B, C (and bias).
OperatorWork gemm(double batch, double m, double n, double k, double extra_bytes, const Inputs& in, std::size_t a) {
  const double size = in.size_of(a);
  const double bytes = (batch * m * k + batch * k * n + batch * m * n) * size + extra_bytes;
  return known(2 * batch * m * n * k, bytes, kGemm);
}

OperatorWork matrix_product(const Inputs& in, std::size_t a, std::size_t b, double extra_bytes, bool batched) {
  const Dims da = in.dims(a), db = in.dims(b);
  const std::size_t rank = batched ? 3 : 2;
  if (da.size() != rank || db.size() != rank || da[rank - 1] != db[rank - 2])
    return unusable(fmt::format("operands {} x {} are not {}-d matrices with equal inner dimensions", shape_text(da),
                                shape_text(db), rank),
                    kGemm);
  const double batch = batched ? static_cast<double>(da[0]) : 1;
  return gemm(batch, static_cast<double>(da[rank - 2]), static_cast<double>(db[rank - 1]),
              static_cast<double>(da[rank - 1]), extra_bytes, in, a);
}

OperatorWork mm(const WorkContext&, const Inputs& in, std::size_t) { return matrix_product(in, 0, 1, 0, false); }
OperatorWork addmm(const WorkContext&, const Inputs& in, std::size_t) { return matrix_product(in, 1, 2, in.bytes(0), false); }
OperatorWork bmm(const WorkContext&, const Inputs& in, std::size_t) { return matrix_product(in, 0, 1, 0, true); }
OperatorWork baddbmm(const WorkContext&, const Inputs& in, std::size_t) { return matrix_product(in, 1, 2, in.bytes(0), true); }

/// torch.matmul: vectors as one-row (column) matrices, batch dimensions broadcast.
OperatorWork matmul(const WorkContext&, const Inputs& in, std::size_t) {
  const Dims da = in.dims(0), db = in.dims(1);
  if (da.empty() || db.empty()) return unusable("matmul of a scalar", kGemm);
  const double k = static_cast<double>(da.back());
  const double k_b = static_cast<double>(db.size() == 1 ? db[0] : db[db.size() - 2]);
  if (k != k_b) return unusable(fmt::format("matmul {} x {}: inner dimensions differ", shape_text(da), shape_text(db)), kGemm);
  const double m = da.size() >= 2 ? static_cast<double>(da[da.size() - 2]) : 1;
  const double n = db.size() >= 2 ? static_cast<double>(db.back()) : 1;
  const std::size_t batch_a = da.size() >= 2 ? da.size() - 2 : 0, batch_b = db.size() >= 2 ? db.size() - 2 : 0;
  double batch = 1;
  for (std::size_t i = 0; i < std::max(batch_a, batch_b); ++i) {  // aligned from the right
    const double x = i < batch_a ? static_cast<double>(da[batch_a - 1 - i]) : 1;
    const double y = i < batch_b ? static_cast<double>(db[batch_b - 1 - i]) : 1;
    if (x != y && x != 1 && y != 1) return unusable(fmt::format("matmul {} x {}: batch dimensions do not broadcast", shape_text(da), shape_text(db)), kGemm);
    batch *= std::max(x, y);
  }
  const double bytes = (in.elements(0) + in.elements(1) + batch * m * n) * in.size_of(0);
  return known(2 * batch * m * n * k, bytes, kGemm);
}

/// linear(x[..., K], w[N, K], bias[N]): M = the product of x's leading dimensions.
OperatorWork linear(const WorkContext&, const Inputs& in, std::size_t) {
  const Dims dx = in.dims(0), dw = in.dims(1);
  if (dx.empty() || dw.size() != 2 || dx.back() != dw[1])
    return unusable(fmt::format("linear {} x {}^T: not [.., K] x [N, K]", shape_text(dx), shape_text(dw)), kGemm);
  const double m = product(dx, 0, dx.size() - 1);
  return gemm(1, m, static_cast<double>(dw[0]), static_cast<double>(dw[1]), in.bytes(2), in, 0);
}

// --- convolutions: 2 * N * K * (C / groups) * prod(kernel) * prod(output spatial) ---

constexpr std::string_view kConvForward = "convolution forward", kConvBackward = "convolution backward";

/// A convolution's sizes: input [N, C, spatial], weight [K, C/g, kernel], output [N, K, out spatial].
struct ConvShape {
  Dims input, weight, output;
  double flops() const {  // forward
    return 2 * static_cast<double>(output[0]) * static_cast<double>(weight[0]) * product(weight, 1) * product(output, 2);
  }
};

std::optional<std::string> conv_problem(Dims input, Dims weight, Dims output) {
  if (weight.size() < 3 || (!input.empty() && input.size() != weight.size()))
    return fmt::format("input {} and weight {} are not [N, C, ...] and [K, C/groups, ...]", shape_text(input), shape_text(weight));
  if (output.size() != weight.size() || output[1] != weight[0] || (!input.empty() && output[0] != input[0]))
    return fmt::format("output {} does not fit input {} and weight {}", shape_text(output), shape_text(input),
                       shape_text(weight));
  return std::nullopt;
}

/// Forward: input and weight are recorded; the output comes from the autograd node of the same
/// sequence number (the gradient of the output), since strides and padding are not.
OperatorWork conv_forward(const WorkContext& ctx, const Inputs& in, std::size_t op) {
  const Dims input = in.dims(0), weight = in.dims(1);
  if (weight.size() < 3 || input.size() != weight.size())
    return unusable(fmt::format("input {} and weight {} are not [N, C, ...] and [K, C/groups, ...]", shape_text(input),
                                shape_text(weight)),
                    kConvForward);
  const Dims output = ctx.forward_output(op, input.size());
  if (output.empty())
    return unusable("output size unknown: no autograd node of its sequence number records the output gradient "
                    "(a forward-only trace)",
                    kConvForward);
  if (auto problem = conv_problem(input, weight, output)) return unusable(*problem, kConvForward);
  const ConvShape c{input, weight, output};
  const double bias = in.bytes(2);
  return known(c.flops(), in.bytes(0) + in.bytes(1) + bias + product(output) * in.size_of(0), kConvForward);
}

/// Backward, both gradients (input and weight): twice the forward FLOPs; reads the output
/// gradient, input and weight, writes the input and weight gradients.
OperatorWork conv_backward_both(const Inputs& in, std::size_t grad_output, std::size_t input, std::size_t weight) {
  const ConvShape c{in.dims(input), in.dims(weight), in.dims(grad_output)};
  if (auto problem = conv_problem(c.input, c.weight, c.output)) return unusable(*problem, kConvBackward);
  const double bytes = in.bytes(grad_output) + 2 * in.bytes(input) + 2 * in.bytes(weight);
  return known(2 * c.flops(), bytes, kConvBackward);
}

OperatorWork convolution_backward(const WorkContext&, const Inputs& in, std::size_t) {  // (grad_output, input, weight, ...)
  return conv_backward_both(in, 0, 1, 2);
}
OperatorWork cudnn_convolution_backward(const WorkContext&, const Inputs& in, std::size_t) {  // (input, grad_output, weight, ...)
  return conv_backward_both(in, 1, 0, 2);
}

/// The operator around a cudnn/miopen `_backward_input`/`_backward_weight`: it records the
/// sizes they take as lists (input size, weight size).
std::optional<Inputs> enclosing_backward(const WorkContext& ctx, std::size_t op) {
  const auto parent = ctx.parent(op);
  if (!parent) return std::nullopt;
  const std::string_view name = ctx.name(*parent);
  if (name.find("convolution_backward") == std::string_view::npos) return std::nullopt;
  return ctx.inputs(*parent);
}

/// (input size, grad_output, weight, ...): the input gradient, forward FLOPs.
OperatorWork conv_backward_input(const WorkContext& ctx, const Inputs& in, std::size_t op) {
  const auto outer = enclosing_backward(ctx, op);
  if (!outer) return unusable("input size unknown: no convolution backward around it", kConvBackward);
  const ConvShape c{outer->dims(0), in.dims(2), in.dims(1)};
  if (auto problem = conv_problem(c.input, c.weight, c.output)) return unusable(*problem, kConvBackward);
  return known(c.flops(), in.bytes(1) + in.bytes(2) + product(c.input) * in.size_of(1), kConvBackward);
}

/// (weight size, grad_output, input, ...): the weight gradient, forward FLOPs.
OperatorWork conv_backward_weight(const WorkContext& ctx, const Inputs& in, std::size_t op) {
  const auto outer = enclosing_backward(ctx, op);
  if (!outer) return unusable("weight size unknown: no convolution backward around it", kConvBackward);
  const ConvShape c{in.dims(2), outer->dims(2), in.dims(1)};
  if (auto problem = conv_problem(c.input, c.weight, c.output)) return unusable(*problem, kConvBackward);
  return known(c.flops(), in.bytes(1) + in.bytes(2) + product(c.weight) * in.size_of(1), kConvBackward);
}

// --- attention: Q K^T and P V, 2 * B * H * L * S * (E + Ev); backward 2.5x ---

constexpr std::string_view kAttention = "attention", kAttentionBackward = "attention backward";

/// q [.., L, E], k [.., S, E], v [.., S, Ev] (heads before sequence), or with `sequence_first`
/// q [B, L, H, E] (flash_attn's layout).
OperatorWork attention(const Inputs& in, std::size_t q, bool sequence_first, bool backward) {
  const Dims dq = in.dims(q), dk = in.dims(q + 1), dv = in.dims(q + 2);
  const std::string_view rule = backward ? kAttentionBackward : kAttention;
  if (dq.size() < 3 || dk.size() != dq.size() || dv.size() != dq.size() || dq.back() != dk.back())
    return unusable(fmt::format("q {}, k {}, v {} are not [.., L, E], [.., S, E], [.., S, Ev]", shape_text(dq),
                                shape_text(dk), shape_text(dv)),
                    rule);
  const std::size_t seq = sequence_first ? dq.size() - 3 : dq.size() - 2;
  const double l = static_cast<double>(dq[seq]), s = static_cast<double>(dk[seq]);
  const double batch = product(dq, 0, dq.size() - 1) / l;  // every dimension but L and E
  const double e = static_cast<double>(dq.back()), ev = static_cast<double>(dv.back());
  const double flops = 2 * batch * l * s * (e + ev);
  const double qkv = in.bytes(q) + in.bytes(q + 1) + in.bytes(q + 2), out = batch * l * ev * in.size_of(q);
  // Backward: reads dO, Q, K, V, O and writes dQ, dK, dV; recomputes Q K^T (5 products, not 2).
  if (backward) return known(2.5 * flops, 2 * qkv + 2 * out, rule);
  return known(flops, qkv + out, rule);
}

OperatorWork sdpa(const WorkContext&, const Inputs& in, std::size_t) { return attention(in, 0, false, false); }
OperatorWork sdpa_backward(const WorkContext&, const Inputs& in, std::size_t) { return attention(in, 1, false, true); }
OperatorWork flash_forward(const WorkContext&, const Inputs& in, std::size_t) { return attention(in, 0, true, false); }
OperatorWork flash_backward(const WorkContext&, const Inputs& in, std::size_t) { return attention(in, 1, true, true); }

// --- memory-bound families: bytes; FLOPs one per element written (reductions: read) ---

constexpr std::string_view kElementwise = "elementwise", kNormalization = "normalization", kReduction = "reduction",
                           kOptimizer = "optimizer";

/// The broadcast shape of the tensor inputs' dimensions (aligned from the right), as elements;
/// nullopt when they do not broadcast.
std::optional<double> broadcast_elements(const Inputs& in) {
  std::vector<std::int64_t> shape;
  for (std::size_t i = 0; i < in.count(); ++i) {
    if (!in.tensor(i) || in.operand(i).tensor_list) continue;
    const Dims d = in.dims(i);
    if (d.size() > shape.size()) shape.insert(shape.begin(), d.size() - shape.size(), 1);
    for (std::size_t j = 0; j < d.size(); ++j) {
      std::int64_t& s = shape[shape.size() - d.size() + j];
      if (d[j] != s && d[j] != 1 && s != 1) return std::nullopt;
      if (s == 1) s = d[j];
    }
  }
  return product(Dims(shape));
}

/// The `out=` argument of an out variant (clamp_min(self, min, out), which relu_ calls): a
/// tensor last, after an input that is not a tensor. It is written, not read.
std::optional<std::size_t> out_argument(const Inputs& in) {
  const std::size_t n = in.count();
  if (n < 2 || !in.tensor(n - 1)) return std::nullopt;
  for (std::size_t i = 0; i + 1 < n; ++i)
    if (!in.tensor(i)) return n - 1;
  return std::nullopt;
}

/// add, mul, relu, ...: every tensor input read, the (broadcast) output written.
OperatorWork elementwise(const WorkContext&, const Inputs& in, std::size_t) {
  const auto out = broadcast_elements(in);
  if (!out) return unusable("tensor inputs do not broadcast to one shape", kElementwise);
  const auto out_arg = out_argument(in);
  const double read = in.input_bytes() - (out_arg ? in.bytes(*out_arg) : 0);
  return known(*out, read + *out * in.output_size(), kElementwise);
}

/// copy_(self, src): src read, self written. fill_/zero_(self): self written.
OperatorWork copy(const WorkContext&, const Inputs& in, std::size_t) {
  return known(0, in.input_bytes(), kElementwise);
}
OperatorWork fill(const WorkContext&, const Inputs& in, std::size_t) { return known(0, in.bytes(0), kElementwise); }

/// Norms and their backward: the inputs read, one tensor the size of the largest (the data)
/// written: statistics and parameter gradients are small beside it.
OperatorWork normalization(const WorkContext&, const Inputs& in, std::size_t) {
  double largest = 0, size = 4;
  for (std::size_t i = 0; i < in.count(); ++i)
    if (in.bytes(i) > largest * size) largest = in.elements(i), size = in.size_of(i);
  if (largest <= 0) return unusable("no tensor input", kNormalization);
  return known(largest, in.input_bytes() + largest * size, kNormalization);
}

/// sum, mean, softmax's losses: the inputs read (the output, smaller, is not counted).
OperatorWork reduction(const WorkContext&, const Inputs& in, std::size_t) {
  double elements = 0;
  for (std::size_t i = 0; i < in.count(); ++i) elements += in.elements(i);
  return known(elements, in.input_bytes(), kReduction);
}

/// _foreach_* and fused optimizers over tensor lists: every list read, the first written back
/// (the parameters); fused Adam(W) also writes both moments.
OperatorWork foreach_op(const WorkContext&, const Inputs& in, std::size_t) {
  if (in.count() == 0 || !in.tensor(0)) return unusable("first input is not a tensor list", kOptimizer);
  return known(in.elements(0), in.input_bytes() + in.bytes(0), kOptimizer);
}
OperatorWork fused_adam(const WorkContext&, const Inputs& in, std::size_t) {
  if (in.count() < 4 || !in.tensor(0)) return unusable("not (params, grads, exp_avgs, exp_avg_sqs, ...)", kOptimizer);
  return known(in.elements(0), in.input_bytes() + in.bytes(0) + in.bytes(2) + in.bytes(3), kOptimizer);
}

using Rule = OperatorWork (*)(const WorkContext&, const Inputs&, std::size_t);

struct NamedRule {
  std::string_view name;  ///< after "aten::"
  Rule rule;
};

// clang-format off
constexpr NamedRule kRules[] = {
    {"mm", mm}, {"addmm", addmm}, {"bmm", bmm}, {"baddbmm", baddbmm}, {"matmul", matmul}, {"linear", linear},
    {"conv1d", conv_forward}, {"conv2d", conv_forward}, {"conv3d", conv_forward}, {"convolution", conv_forward},
    {"_convolution", conv_forward}, {"cudnn_convolution", conv_forward}, {"cudnn_convolution_relu", conv_forward},
    {"miopen_convolution", conv_forward}, {"mkldnn_convolution", conv_forward}, {"_convolution_nogroup", conv_forward},
    {"thnn_conv2d", conv_forward}, {"_slow_conv2d_forward", conv_forward}, {"_conv_depthwise2d", conv_forward},
    {"convolution_backward", convolution_backward}, {"cudnn_convolution_backward", cudnn_convolution_backward},
    {"miopen_convolution_backward", cudnn_convolution_backward},
    {"cudnn_convolution_backward_input", conv_backward_input}, {"miopen_convolution_backward_input", conv_backward_input},
    {"cudnn_convolution_backward_weight", conv_backward_weight}, {"miopen_convolution_backward_weight", conv_backward_weight},
    {"scaled_dot_product_attention", sdpa}, {"_scaled_dot_product_flash_attention", sdpa},
    {"_scaled_dot_product_efficient_attention", sdpa}, {"_scaled_dot_product_cudnn_attention", sdpa},
    {"_scaled_dot_product_flash_attention_backward", sdpa_backward},
    {"_scaled_dot_product_efficient_attention_backward", sdpa_backward},
    {"_scaled_dot_product_cudnn_attention_backward", sdpa_backward},
    {"_flash_attention_forward", flash_forward}, {"_flash_attention_backward", flash_backward},
    {"add", elementwise}, {"add_", elementwise}, {"sub", elementwise}, {"sub_", elementwise}, {"rsub", elementwise},
    {"mul", elementwise}, {"mul_", elementwise}, {"div", elementwise}, {"div_", elementwise}, {"neg", elementwise},
    {"abs", elementwise}, {"relu", elementwise}, {"relu_", elementwise}, {"threshold", elementwise},
    {"threshold_", elementwise}, {"threshold_backward", elementwise}, {"clamp", elementwise}, {"clamp_", elementwise},
    {"clamp_min", elementwise}, {"clamp_min_", elementwise}, {"clamp_max", elementwise}, {"clamp_max_", elementwise},
    {"hardtanh", elementwise}, {"hardtanh_", elementwise}, {"hardtanh_backward", elementwise},
    {"leaky_relu", elementwise}, {"leaky_relu_", elementwise}, {"gelu", elementwise}, {"gelu_backward", elementwise},
    {"silu", elementwise}, {"silu_", elementwise}, {"silu_backward", elementwise}, {"sigmoid", elementwise},
    {"sigmoid_", elementwise}, {"sigmoid_backward", elementwise}, {"tanh", elementwise}, {"tanh_", elementwise},
    {"tanh_backward", elementwise}, {"exp", elementwise}, {"exp_", elementwise}, {"log", elementwise},
    {"log_", elementwise}, {"sqrt", elementwise}, {"sqrt_", elementwise}, {"rsqrt", elementwise},
    {"rsqrt_", elementwise}, {"pow", elementwise}, {"pow_", elementwise}, {"reciprocal", elementwise},
    {"where", elementwise}, {"masked_fill", elementwise}, {"masked_fill_", elementwise}, {"maximum", elementwise},
    {"minimum", elementwise}, {"lerp", elementwise}, {"lerp_", elementwise}, {"addcmul", elementwise},
    {"addcmul_", elementwise}, {"addcdiv", elementwise}, {"addcdiv_", elementwise}, {"native_dropout", elementwise},
    {"native_dropout_backward", elementwise}, {"_softmax", elementwise}, {"_log_softmax", elementwise},
    {"_softmax_backward_data", elementwise}, {"_log_softmax_backward_data", elementwise},
    {"copy_", copy}, {"fill_", fill}, {"zero_", fill},
    {"batch_norm", normalization}, {"_batch_norm_impl_index", normalization}, {"native_batch_norm", normalization},
    {"cudnn_batch_norm", normalization}, {"miopen_batch_norm", normalization},
    {"_native_batch_norm_legit", normalization}, {"_native_batch_norm_legit_no_training", normalization},
    {"layer_norm", normalization}, {"native_layer_norm", normalization}, {"group_norm", normalization},
    {"native_group_norm", normalization}, {"instance_norm", normalization}, {"rms_norm", normalization},
    {"_fused_rms_norm", normalization}, {"cudnn_batch_norm_backward", normalization},
    {"native_batch_norm_backward", normalization}, {"miopen_batch_norm_backward", normalization},
    {"native_layer_norm_backward", normalization}, {"native_group_norm_backward", normalization},
    {"sum", reduction}, {"mean", reduction}, {"amax", reduction}, {"norm", reduction},
    {"nll_loss_forward", reduction}, {"nll_loss_backward", reduction},
    {"_fused_adam_", fused_adam}, {"_fused_adamw_", fused_adam},
};
// clang-format on

Rule find_rule(std::string_view name) {
  static const std::unordered_map<std::string_view, Rule> rules = [] {
    std::unordered_map<std::string_view, Rule> out;
    for (const NamedRule& r : kRules) out.emplace(r.name, r.rule);
    return out;
  }();
  constexpr std::string_view kAten = "aten::";
  if (name.substr(0, kAten.size()) != kAten) return nullptr;
  name.remove_prefix(kAten.size());
  if (name.substr(0, 9) == "_foreach_" || name.substr(0, 7) == "_fused_") {
    if (auto it = rules.find(name); it != rules.end()) return it->second;
    return foreach_op;
  }
  auto it = rules.find(name);
  return it == rules.end() ? nullptr : it->second;
}

OperatorWork total_work(const WorkContext& ctx, std::size_t op) {
  const Rule rule = find_rule(ctx.name(op));
  if (rule == nullptr) return {};
  const Inputs in = ctx.inputs(op);
  OperatorWork work = rule(ctx, in, op);
  if (work.status == Status::known && !(std::isfinite(work.flops) && std::isfinite(work.bytes)))
    return unusable("work beyond floating-point range", work.rule);
  work.dtype = in.dtype();
  return work;
}

/// Takes out of each operator the work of the nearest operators inside it that have a rule
/// (their children, or the children's children through operators without one).
void keep_own_work(const Graph& graph, std::vector<OperatorWork>& work) {
  const auto& ops = graph.operators();
  std::vector<OperatorWork> total = work;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (total[i].status == Status::no_rule) continue;
    // The nearest ancestor with a rule holds this operator's work too.
    std::int32_t p = ops[i].parent;
    while (p >= 0 && total[static_cast<std::size_t>(p)].status == Status::no_rule) p = ops[static_cast<std::size_t>(p)].parent;
    if (p < 0 || total[i].status != Status::known) continue;
    OperatorWork& outer = work[static_cast<std::size_t>(p)];
    if (outer.status != Status::known) continue;
    outer.flops = std::max(0.0, outer.flops - total[i].flops);
    outer.bytes = std::max(0.0, outer.bytes - total[i].bytes);
  }
}

}  // namespace

std::vector<OperatorWork> operator_work(const Graph& graph) {
  const WorkContext ctx(graph);
  std::vector<OperatorWork> work(graph.operators().size());
  for (std::size_t i = 0; i < work.size(); ++i) work[i] = total_work(ctx, i);
  keep_own_work(graph, work);
  return work;
}

}  // namespace daydream
