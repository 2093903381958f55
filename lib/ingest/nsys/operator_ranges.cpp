// PyTorch's operator ranges in NVTX (operator_ranges.hpp).
#include "ingest/nsys/operator_ranges.hpp"

#include <algorithm>
#include <array>
#include <charconv>

namespace daydream::nsys {
namespace {

// The fields getNvtxStr writes after the name, in its order.
constexpr std::string_view kSeq = ", seq = ";
constexpr std::string_view kStashedSeq = ", stashed seq = ";  // PyTorch 1.x, backward pass
constexpr std::string_view kOpId = ", op_id = ";
constexpr std::string_view kSizes = ", sizes = ";
constexpr std::string_view kInputOpIds = ", input_op_ids = ";
constexpr std::array<std::string_view, 5> kFields = {kSeq, kStashedSeq, kOpId, kSizes, kInputOpIds};
constexpr std::string_view kAtenNamespace = "aten::";

/// Consumes `prefix` from the front of `text`.
bool take(std::string_view& text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return false;
  text.remove_prefix(prefix.size());
  return true;
}

/// Consumes a decimal integer (a sign allowed) from the front of `text`.
std::optional<std::int64_t> take_integer(std::string_view& text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc()) return std::nullopt;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return value;
}

/// Consumes one input's "[d0, d1, ...]" (or "[]"), appending its dimensions; false when malformed.
bool take_shape(std::string_view& text, OperatorRange& op) {
  if (!take(text, "[")) return false;
  std::uint32_t rank = 0;
  while (!take(text, "]")) {
    if (rank > 0 && !take(text, ", ")) return false;
    const auto dim = take_integer(text);
    if (!dim || *dim < 0) return false;
    op.dims.push_back(*dim);
    ++rank;
  }
  op.ranks.push_back(rank);
  return true;
}

/// Consumes "[[...], [...], ...]"; false when malformed.
bool take_sizes(std::string_view& text, OperatorRange& op) {
  if (!take(text, "[")) return false;
  for (std::size_t input = 0; !take(text, "]"); ++input) {
    if (input > 0 && !take(text, ", ")) return false;
    if (!take_shape(text, op)) return false;
  }
  return true;
}

/// Where the first field starts, or npos.
std::size_t first_field(std::string_view message) {
  std::size_t first = std::string_view::npos;
  for (std::string_view field : kFields) first = std::min(first, message.find(field));
  return first;
}

/// Reads the fields after the name, in getNvtxStr's order; an unknown rest ends the reading.
void read_fields(std::string_view rest, OperatorRange& op) {
  if (take(rest, kSeq) || take(rest, kStashedSeq)) op.sequence_number = take_integer(rest);
  if (take(rest, kOpId)) (void)take_integer(rest);
  if (!take(rest, kSizes)) return;
  op.has_sizes = true;
  if (take_sizes(rest, op)) return;
  op.sizes_malformed = true;
  op.dims.clear();
  op.ranks.clear();
}

}  // namespace

std::optional<OperatorRange> parse_operator_range(std::string_view message) {
  const std::size_t field = first_field(message);
  if (field == std::string_view::npos && !message.starts_with(kAtenNamespace)) return std::nullopt;
  OperatorRange op;
  op.name = message.substr(0, field);
  if (field != std::string_view::npos) read_fields(message.substr(field), op);
  return op;
}

}  // namespace daydream::nsys
