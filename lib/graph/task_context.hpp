#pragma once
// What the CPU ranges around a task say about it: its phase, its layer (as a path through nested
// layer ranges, outermost first: "model/block/conv1") and the autograd sequence number of the
// innermost operator that has one (backward ops share it with their forward op).
#include <cstddef>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "daydream/graph.hpp"

namespace daydream {

/// What a range's name says about the tasks inside it, whichever range bears it: worked out once
/// per distinct name and kept (BuildContext::range_name), where entering a range searched its name
/// for half a dozen words each time (a twentieth of building a graph).
struct RangeName {
  std::string_view text;
  bool update = false;     ///< Optimizer.step, Optimizer.zero_grad, "optimizer"
  bool backward = false;   ///< *backward*, autograd::engine..., AccumulateGrad
  bool loading = false;    ///< enumerate(DataLoader), [DALI]...
  bool forward = false;    ///< ProfilerStep#N, "forward"
  bool mark = false;       ///< daydream.layer:<name>:<phase>
  bool module = false;     ///< "nn.Module: <name>" (a python_function frame)
  bool framework = false;  ///< a framework's or library's range: names no layer
  std::optional<Phase> marked_phase;  ///< a mark's phase, when it names one

  static RangeName of(std::string_view name);
};

/// Accumulates ranges from the outermost inwards: a thread's open ranges each keep the context
/// after entering them, so a task's context is its owner's, found in O(1) however deep the
/// nesting (walking the open ranges per task was quadratic: 16,000 nested operators took 5 s).
class TaskContext {
 public:
  /// At most this many layers make a path; deeper ones are left out of it (real models nest a
  /// few tens deep), so that a context's size does not grow with the nesting.
  static constexpr std::size_t kMaxLayerDepth = 64;

  /// Enters `range`, inside every range entered before.
  void enter(const TraceEvent& range, const RangeName& name);
  Phase phase() const;
  /// The layer path, outermost first, joined by '/'; empty when no range names a layer.
  const std::string& layer_path() const { return layers_; }
  std::int64_t sequence_number() const { return sequence_; }

  /// The layer a range names, if it names one (nn.Module frames, daydream.layer marks, user
  /// annotations that are not the framework's own), else empty.
  static std::string_view layer_of(const TraceEvent& range, const RangeName& name);

 private:
  // forward_scope_: inside a ProfilerStep#N or a range named forward
  bool update_ = false, backward_ = false, loading_ = false, forward_scope_ = false;
  std::optional<Phase> marked_phase_;  // from the innermost `daydream.layer:<name>:<phase>`
  std::string layers_;                 // outermost first, joined by '/'
  std::size_t layer_depth_ = 0;
  std::int64_t sequence_ = kNone;
};

}  // namespace daydream
