#pragma once
// PyTorch's operator ranges in NVTX. torch.autograd.profiler.emit_nvtx() (which Nsight Systems'
// --pytorch=autograd-nvtx and autograd-shapes-nvtx turn on) pushes one NVTX range per operator,
// its message written by getNvtxStr (torch/csrc/profiler/util.cpp):
//
//   <name>[, seq = <N>][, op_id = <K>][, sizes = [[d0, d1], [], ...]][, input_op_ids = ...]
//
// PyTorch 1.x wrote ", stashed seq = <N>" on the backward pass's ranges. The operator is <name>
// ("aten::addmm", "ConvolutionBackward0"); N is its autograd sequence number (a forward operator
// and its backward node share it, as Kineto's "Sequence number"); sizes are its inputs'
// dimensions, as Kineto's "Input Dims" (without the types). An operator with neither a sequence
// number nor sizes is written as its bare name.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace daydream::nsys {

/// What an operator range's message says.
struct OperatorRange {
  std::string_view name;             ///< the message up to its first field
  std::optional<std::int64_t> sequence_number;
  bool has_sizes = false;            ///< a `sizes = [...]` field was present
  bool sizes_malformed = false;      ///< ... and could not be read (not lists of integers >= 0)
  std::vector<std::int64_t> dims;    ///< every input's dimensions, one after another
  std::vector<std::uint32_t> ranks;  ///< per input, how many of `dims` are its, in order
};

/// The operator of an NVTX message written by emit_nvtx, or nullopt for any other message: one
/// with no field after the name is an operator only in PyTorch's `aten::` namespace (a bare
/// `aten::empty`), never a range a program pushed itself ("forward", "step 3").
std::optional<OperatorRange> parse_operator_range(std::string_view message);

}  // namespace daydream::nsys
