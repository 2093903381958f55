#pragma once
// One event's "Input Dims" and "Input type" args (PyTorch's `record_shapes`), read while the
// event's JSON is parsed and kept until the event is normalised (the two args come in either
// order). Per input: a list of dimensions ([32, 3, 224, 224]; [] for a scalar, a list of
// integers or None), or, for a tensor list in newer PyTorch, a list of such lists.
#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "common/checked.hpp"
#include "daydream/trace.hpp"

namespace daydream::kineto {

class RecordedOperands {
 public:
  void clear() {
    dims_.clear();
    operands_.clear();
    types_.clear();
    malformed_ = false;
  }

  /// Reads "Input Dims"; returns true (the arg is present), marking the record malformed when it
  /// is not a list of lists of non-negative integers (or of such lists).
  bool read_dims(simdjson::ondemand::value value) {
    simdjson::ondemand::array inputs;
    if (value.get_array().get(inputs) != simdjson::SUCCESS) return malformed();
    for (auto input : inputs) {
      simdjson::ondemand::array dims;
      if (input.get_array().get(dims) != simdjson::SUCCESS) return malformed();
      if (!read_operand(dims)) return malformed();
    }
    return true;
  }

  /// Reads "Input type": a list of strings (views into the document, valid for this event).
  bool read_types(simdjson::ondemand::value value) {
    simdjson::ondemand::array items;
    if (value.get_array().get(items) != simdjson::SUCCESS) return malformed();
    for (auto item : items) {
      std::string_view type;
      if (item.get_string().get(type) != simdjson::SUCCESS) return malformed();
      types_.push_back(type);
    }
    return true;
  }

  /// Both args well formed, and as many types as shapes when both are present.
  bool well_formed(bool has_dims, bool has_types) const {
    return !malformed_ && has_dims && (!has_types || types_.size() == operands_.size());
  }
  /// Whether some input is a tensor with dimensions (or a tensor list).
  bool any_shape() const {
    for (const Operand& o : operands_)
      if (o.rank > 0 || o.tensor_list) return true;
    return false;
  }

  void append_to(ShapeTable& table) const {
    for (std::size_t i = 0; i < operands_.size(); ++i) {
      const Operand& o = operands_[i];
      table.add_operand(std::span<const std::int64_t>(dims_.data() + o.first, o.rank),
                        i < types_.size() ? types_[i] : std::string_view(), o.tensor_list);
    }
  }

  /// Elements of the first input when it is a tensor (an `nccl:` annotation's message); kNone
  /// when it could not be read or is not a plain shape.
  std::int64_t first_elements() const {
    if (operands_.empty() || operands_.front().tensor_list) return kNone;
    std::optional<std::int64_t> elements = 1;
    for (std::size_t d = 0; d < operands_.front().rank && elements; ++d)
      elements = checked::mul(*elements, dims_[operands_.front().first + d]);
    return elements.value_or(kNone);
  }
  std::string_view first_type() const { return types_.empty() ? std::string_view() : types_.front(); }

 private:
  struct Operand {
    std::size_t first = 0;
    std::size_t rank = 0;
    bool tensor_list = false;
  };

  bool malformed() {
    malformed_ = true;
    return true;
  }

  /// One input: [d0, d1, ...] or [[...], [...]] (a tensor list: kept as its total elements).
  bool read_operand(simdjson::ondemand::array dims) {
    Operand operand{dims_.size(), 0, false};
    std::int64_t list_elements = 0;
    for (auto dim : dims) {
      std::int64_t n = 0;
      simdjson::ondemand::array nested;
      if (dim.get_int64().get(n) == simdjson::SUCCESS) {
        if (n < 0 || operand.tensor_list) return false;
        dims_.push_back(n);
        ++operand.rank;
      } else if (dim.get_array().get(nested) == simdjson::SUCCESS) {
        if (operand.rank > 0) return false;
        operand.tensor_list = true;
        const std::int64_t elements = tensor_elements(nested);
        const auto sum = elements < 0 ? std::nullopt : checked::add(list_elements, elements);
        if (!sum) return false;
        list_elements = *sum;
      } else {
        return false;
      }
    }
    if (operand.tensor_list) {
      dims_.push_back(list_elements);
      operand.rank = 1;
    }
    operands_.push_back(operand);
    return true;
  }

  /// Elements of one tensor of a list; -1 when malformed or beyond int64.
  static std::int64_t tensor_elements(simdjson::ondemand::array dims) {
    std::optional<std::int64_t> elements = 1;
    for (auto dim : dims) {
      std::int64_t n = 0;
      if (dim.get_int64().get(n) != simdjson::SUCCESS || n < 0) return -1;
      elements = checked::mul(*elements, n);
      if (!elements) return -1;
    }
    return *elements;
  }

  std::vector<std::int64_t> dims_;
  std::vector<Operand> operands_;
  std::vector<std::string_view> types_;
  bool malformed_ = false;
};

}  // namespace daydream::kineto
