// ShapeTable: the operand shapes of recorded operators, flat (trace.hpp).
#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "common/fnv1a.hpp"
#include "daydream/trace.hpp"

namespace daydream {

void ShapeTable::begin_operator(std::int64_t key) {
  operators_.push_back({key, static_cast<std::uint32_t>(operands_.size()), 0});
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
  ++operators_.back().operand_count;
  dims_.insert(dims_.end(), dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(rank));
}

std::size_t ShapeTable::operand_count(std::size_t op) const { return operators_[op].operand_count; }

OperandShape ShapeTable::operand(std::size_t op, std::size_t input) const {
  const Operand& o = operands_[operators_[op].first_operand + input];
  OperandShape out;
  out.dims = std::span<const std::int64_t>(dims_.data() + o.first_dim, o.rank);
  if (o.type != 0) out.type = types_[o.type];
  out.tensor_list = o.tensor_list;
  return out;
}

void ShapeTable::shrink_to_fit() {
  std::vector<Operand> operands;
  std::vector<std::int64_t> dims;
  const auto same_list = [&](const Operator& kept, const Operator& op) {
    if (kept.operand_count != op.operand_count) return false;
    for (std::uint32_t i = 0; i < op.operand_count; ++i) {
      const Operand& a = operands[kept.first_operand + i];
      const Operand& b = operands_[op.first_operand + i];
      if (a.rank != b.rank || a.type != b.type || a.tensor_list != b.tensor_list ||
          !std::equal(dims.begin() + a.first_dim, dims.begin() + a.first_dim + a.rank, dims_.begin() + b.first_dim))
        return false;
    }
    return true;
  };
  std::unordered_multimap<std::uint64_t, std::size_t> seen;  // hash of a list -> an operator holding it, kept
  for (std::size_t op = 0; op < operators_.size(); ++op) {
    Operator& o = operators_[op];
    Fnv1a list;  // of this operator's inputs
    list.integer(o.operand_count);
    for (std::uint32_t i = 0; i < o.operand_count; ++i) {
      const Operand& operand = operands_[o.first_operand + i];
      list.integer(operand.type), list.integer(operand.tensor_list), list.integer(operand.rank);
      for (std::uint16_t d = 0; d < operand.rank; ++d) list.integer(dims_[operand.first_dim + d]);
    }
    const std::uint64_t h = list.value();
    const auto [begin, end] = seen.equal_range(h);
    const auto match = std::find_if(begin, end, [&](const auto& entry) { return same_list(operators_[entry.second], o); });
    if (match != end) {
      o.first_operand = operators_[match->second].first_operand;
      continue;
    }
    const auto first = static_cast<std::uint32_t>(operands.size());
    for (std::uint32_t i = 0; i < o.operand_count; ++i) {
      Operand operand = operands_[o.first_operand + i];
      const auto from = dims_.begin() + operand.first_dim;
      operand.first_dim = static_cast<std::uint32_t>(dims.size());
      dims.insert(dims.end(), from, from + operand.rank);
      operands.push_back(operand);
    }
    o.first_operand = first;
    seen.emplace(h, op);
  }
  operators_.shrink_to_fit();
  operands_ = std::vector<Operand>(operands.begin(), operands.end());  // exact sizes
  dims_ = std::vector<std::int64_t>(dims.begin(), dims.end());
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
