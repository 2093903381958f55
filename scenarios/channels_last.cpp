// channels_last: what if the model kept its tensors in channels-last (NHWC) memory format? cuDNN
// then needs no layout conversions around the kernels it runs in NHWC: the layout-transform
// kernels (NCHW <-> NHWC) disappear, together with the launch calls that issued them (their CPU
// cost). Every other kernel keeps its recorded duration. docs/scenarios/channels_last.md.
#include <fmt/format.h>

#include "builtin.hpp"
#include "daydream/analyze.hpp"
#include "daydream/transform.hpp"

namespace daydream::scenarios {
namespace {

// cuDNN's layout-conversion kernels: nchwToNhwcKernel / nhwcToNchwKernel (cudnn::ops::, also
// without the namespace in older cuDNN) and their nchw2nhwc / nhwc2nchw spellings.
constexpr const char* kLayoutTransforms = "(?i)nchwToNhwc|nhwcToNchw|nchw2nhwc|nhwc2nchw";

ScenarioOutcome apply_channels_last(Graph& graph, const ScenarioParams& params) {
  const std::string& pattern = params.text("pattern");
  check_pattern(pattern, "channels_last");  // "invalid channels_last pattern ..."
  const auto transforms = graph.select(TaskFilter().kind(TaskKind::kernel).name(pattern));
  ScenarioOutcome outcome;
  if (transforms.empty()) {
    outcome.notes.push_back(fmt::format("no layout-transform kernels found (pattern '{}'): nothing changed", pattern));
    return outcome;
  }
  const TimeNs gpu_ns = transforms.total_duration_ns();
  const std::size_t calls = remove_with_launches(graph, transforms.ids());
  outcome.notes.push_back(fmt::format("removed {} layout-transform kernels ({:.3f} ms of GPU time) and {} launch calls",
                                      transforms.size(), static_cast<double>(gpu_ns) / 1e6, calls));
  return outcome;
}

}  // namespace

Scenario channels_last() {
  return {"channels_last", "channels-last memory format: NCHW <-> NHWC layout-transform kernels removed",
          {ScenarioParam::text("pattern", kLayoutTransforms, "regular expression naming the layout-transform kernels to remove")},
          apply_channels_last};
}

}  // namespace daydream::scenarios
