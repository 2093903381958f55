// Phase and layer rules (docs/formats.md, "Layers"):
//  - phase: the innermost `daydream.layer:<name>:<phase>` mark decides; otherwise update inside
//    `Optimizer.step`/`Optimizer.zero_grad` or a range named `optimizer` (any case), backward
//    inside anything named *backward* (any case), `autograd::engine...` or `AccumulateGrad`,
//    data_loading inside `enumerate(DataLoader)` or a DALI range (`[DALI]...`), forward inside a
//    range named `forward` (any case), inside an operator autograd recorded (a sequence number)
//    and elsewhere inside a `ProfilerStep#N`. The bare names are
//    the NVTX / record_function ranges training loops put around their phases
//    (`nvtx.range_push("forward")`, NVIDIA's DeepLearningExamples, the NERSC tutorials).
//  - layer: every enclosing range that names a layer, outermost first, joined by '/'.
#include "graph/task_context.hpp"

#include <array>

#include "common/text.hpp"

namespace daydream {
namespace {

constexpr std::string_view kMark = "daydream.layer:";
/// NVIDIA DALI marks its pipeline's work with NVTX ranges named "[DALI][Executor] RunGPU",
/// "[DALI][GPU op] __Flip_12", ...: data loading, never a layer of the model.
constexpr std::string_view kDali = "[DALI]";
/// Annotations of frameworks and libraries: they never name a layer.
constexpr std::array<std::string_view, 6> kFrameworkRanges = {"ProfilerStep#", "Optimizer.", "enumerate(DataLoader)",
                                                              "nccl:",         "autograd::", kDali};

/// `text` equals `lowercase` ignoring the case of `text`'s letters.
bool equals_ignore_case(std::string_view text, std::string_view lowercase) {
  return text.size() == lowercase.size() && text::contains_ignore_case(text, lowercase);
}

std::optional<Phase> phase_named(std::string_view text) {
  if (text == "forward") return Phase::forward;
  if (text == "backward") return Phase::backward;
  if (text == "update") return Phase::update;
  return std::nullopt;
}

/// A framework operator autograd recorded: PyTorch gives an operator a sequence number when it
/// runs with gradients on, i.e. in the forward pass (its backward node gets the same number; the
/// optimizer step and evaluation run without).
bool recorded_for_autograd(const TraceEvent& e) { return e.kind == EventKind::cpu_op && e.sequence_number != kNone; }

}  // namespace

RangeName RangeName::of(std::string_view name) {
  RangeName n;
  n.text = name;
  n.update = text::starts_with(name, "Optimizer.step") || text::starts_with(name, "Optimizer.zero_grad") ||
             equals_ignore_case(name, "optimizer");
  n.backward = text::contains_ignore_case(name, "backward") || text::starts_with(name, "autograd::engine") ||
               text::contains(name, "AccumulateGrad");
  n.loading = text::starts_with(name, "enumerate(DataLoader)") || text::starts_with(name, kDali);
  n.forward = text::starts_with(name, "ProfilerStep#") || equals_ignore_case(name, "forward");
  n.mark = text::starts_with(name, kMark);
  if (n.mark) n.marked_phase = phase_named(name.substr(name.rfind(':') + 1));
  n.module = text::starts_with(name, "nn.Module: ");
  for (std::string_view framework : kFrameworkRanges) n.framework = n.framework || text::starts_with(name, framework);
  return n;
}

std::string_view TaskContext::layer_of(const TraceEvent& e, const RangeName& name) {
  if (e.kind == EventKind::python_function && name.module) return name.text.substr(11);
  if (e.kind != EventKind::user_annotation && e.kind != EventKind::cpu_op) return {};
  if (name.mark) {
    const auto rest = name.text.substr(kMark.size());
    return rest.substr(0, rest.rfind(':'));  // daydream.layer:<name>:<phase>
  }
  if (e.kind != EventKind::user_annotation || name.framework) return {};
  return name.text;
}

void TaskContext::enter(const TraceEvent& e, const RangeName& name) {
  update_ = update_ || name.update;
  backward_ = backward_ || name.backward;
  loading_ = loading_ || name.loading;
  forward_scope_ = forward_scope_ || name.forward || recorded_for_autograd(e);
  if (name.marked_phase) marked_phase_ = name.marked_phase;  // the innermost mark with a phase wins
  if (e.kind == EventKind::cpu_op && e.sequence_number != kNone) sequence_ = e.sequence_number;  // innermost wins
  const auto layer = layer_of(e, name);
  if (layer.empty() || layer_depth_ == kMaxLayerDepth) return;
  if (!layers_.empty()) layers_ += '/';
  layers_ += layer;
  ++layer_depth_;
}

Phase TaskContext::phase() const {
  if (marked_phase_) return *marked_phase_;
  if (update_) return Phase::update;
  if (backward_) return Phase::backward;
  if (loading_) return Phase::data_loading;
  return forward_scope_ ? Phase::forward : Phase::unknown;
}

}  // namespace daydream
