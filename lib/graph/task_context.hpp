#pragma once
// What the CPU ranges around a task say about it: its phase, its layer (as a path through nested
// layer ranges, outermost first: "model/block/conv1") and the autograd sequence number of the
// innermost operator that has one (backward ops share it with their forward op).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "daydream/graph.hpp"

namespace daydream {

/// Accumulates ranges from the innermost outwards.
class TaskContext {
 public:
  void visit(const TraceEvent& range, std::string_view name);
  Phase phase() const;
  /// The layer path, or empty when no range names a layer.
  std::string layer_path() const;
  std::int64_t sequence_number() const { return sequence_; }

  /// The layer a range names, if it names one (nn.Module frames, daydream.layer marks, user
  /// annotations that are not the framework's own), else empty.
  static std::string_view layer_of(const TraceEvent& range, std::string_view name);

 private:
  // forward_scope_: inside a ProfilerStep#N or a range named forward
  bool update_ = false, backward_ = false, loading_ = false, forward_scope_ = false;
  std::optional<Phase> marked_phase_;  // from the innermost `daydream.layer:<name>:<phase>`
  std::string layers_;                 // innermost first, joined by '\n' while accumulating
  std::int64_t sequence_ = kNone;
};

}  // namespace daydream
