#pragma once
// FNV-1a (http://www.isthe.com/chongo/tech/comp/fnv/), 64-bit: Graph::fingerprint's hash, which
// must not depend on the machine, and the shape table's, which finds the lists of inputs it has
// seen before.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace daydream {

class Fnv1a {
 public:
  void bytes(const unsigned char* data, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) {
      hash_ ^= data[i];
      hash_ *= kPrime;
    }
  }

  /// Any integer or enum, as 8 little-endian bytes whatever its width or the host's byte order.
  template <typename Int>
  void integer(Int value) {
    const auto wide = static_cast<std::uint64_t>(static_cast<std::int64_t>(value));
    unsigned char little_endian[8];
    for (int i = 0; i < 8; ++i) little_endian[i] = static_cast<unsigned char>(wide >> (8 * i));
    bytes(little_endian, sizeof little_endian);
  }

  /// Length first, so that ("ab", "c") and ("a", "bc") differ.
  void text(std::string_view value) {
    integer(value.size());
    bytes(reinterpret_cast<const unsigned char*>(value.data()), value.size());
  }

  std::uint64_t value() const { return hash_; }

 private:
  static constexpr std::uint64_t kOffsetBasis = 14695981039346656037ull;
  static constexpr std::uint64_t kPrime = 1099511628211ull;
  std::uint64_t hash_ = kOffsetBasis;
};

}  // namespace daydream
