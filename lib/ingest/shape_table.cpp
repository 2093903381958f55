// ShapeTable: the operand shapes of recorded operators, flat (trace.hpp).
#include <algorithm>
#include <stdexcept>

#include "daydream/trace.hpp"

namespace daydream {

void ShapeTable::begin_operator(std::int64_t key) {
  operators_.push_back({key, static_cast<std::uint32_t>(operands_.size())});
}

void ShapeTable::add_operand(std::span<const std::int64_t> dims, std::string_view type, bool tensor_list) {
  if (operators_.empty()) throw std::logic_error("ShapeTable::add_operand before begin_operator");
  std::size_t type_index = 0;  // 0: no type (types_[0] is "")
  if (!type.empty()) {
    const auto found = std::find(types_.begin(), types_.end(), type);
    type_index = static_cast<std::size_t>(found - types_.begin());
    // More than 255 distinct types means a malformed trace: further types are kept as unknown.
    if (found == types_.end()) {
      type_index = types_.size() < 256 ? types_.size() : 0;
      if (type_index != 0) types_.emplace_back(type);
    }
  }
  const std::size_t rank = std::min<std::size_t>(dims.size(), 0xffff);
  operands_.push_back({static_cast<std::uint32_t>(dims_.size()), static_cast<std::uint16_t>(rank),
                       static_cast<std::uint8_t>(type_index), tensor_list});
  dims_.insert(dims_.end(), dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(rank));
}

std::size_t ShapeTable::operand_count(std::size_t op) const {
  const std::size_t end = op + 1 < operators_.size() ? operators_[op + 1].first_operand : operands_.size();
  return end - operators_[op].first_operand;
}

OperandShape ShapeTable::operand(std::size_t op, std::size_t input) const {
  const Operand& o = operands_[operators_[op].first_operand + input];
  OperandShape out;
  out.dims = std::span<const std::int64_t>(dims_.data() + o.first_dim, o.rank);
  if (o.type != 0) out.type = types_[o.type];
  out.tensor_list = o.tensor_list;
  return out;
}

void ShapeTable::shrink_to_fit() {
  operators_.shrink_to_fit();
  operands_.shrink_to_fit();
  dims_.shrink_to_fit();
}

void ShapeTable::append(const ShapeTable& other, std::size_t op, std::int64_t key) {
  begin_operator(key);
  for (std::size_t i = 0; i < other.operand_count(op); ++i) {
    const OperandShape o = other.operand(op, i);
    add_operand(o.dims, o.type, o.tensor_list);
  }
}

std::size_t ShapeTable::memory_bytes() const {
  std::size_t bytes = operators_.capacity() * sizeof(Operator) + operands_.capacity() * sizeof(Operand) +
                      dims_.capacity() * sizeof(std::int64_t);
  for (const std::string& t : types_) bytes += sizeof(std::string) + t.capacity();
  return bytes;
}

}  // namespace daydream
