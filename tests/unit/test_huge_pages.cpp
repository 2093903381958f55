// Transparent huge pages for dense arrays (common/huge_pages.hpp): the advice reaches the kernel
// for the whole 2 MiB pages of a reserved array, and never changes what the memory holds.
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/huge_pages.hpp"

namespace {

/// The system-wide THP mode ("always", "madvise" or "never"), or "" where Linux has no THP.
std::string thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(in, line)) return "";
  const auto open = line.find('['), close = line.find(']');
  return open == std::string::npos || close == std::string::npos ? "" : line.substr(open + 1, close - open - 1);
}

/// /proc/self/smaps' THPeligible for the mapping that holds `address`, or nullopt where the
/// kernel does not report it.
std::optional<int> thp_eligible(const void* address) {
  const auto target = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= target && target < end;
    } else if (inside && line.rfind("THPeligible:", 0) == 0) {
      return std::stoi(line.substr(12));
    }
  }
  return std::nullopt;
}

constexpr std::size_t kHugePage = std::size_t{2} << 20;

const void* first_whole_huge_page(const void* data) {
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  return reinterpret_cast<const void*>((begin + kHugePage - 1) & ~(kHugePage - 1));
}

/// Checks that the first whole 2 MiB page from `data` on may be a huge page, where the system and
/// the kernel let that be seen (a warning says so otherwise).
void check_advised(const void* data) {
  const std::string mode = thp_mode();
  if (mode != "madvise" && mode != "always") {
    WARN("transparent huge pages are '" << mode << "' here: the advice itself is not checked");
    return;
  }
  const auto eligible = thp_eligible(first_whole_huge_page(data));
  if (!eligible) {
    WARN("this kernel's /proc/self/smaps has no THPeligible: the advice itself is not checked");
    return;
  }
  CHECK(*eligible == 1);
}

}  // namespace

TEST_CASE("reserve_dense keeps a vector's contents and advises its whole 2 MiB pages", "[huge_pages]") {
  std::vector<std::uint64_t> values(1000);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = i * 7919;
  daydream::reserve_dense(values, (std::size_t{12} << 20) / sizeof(std::uint64_t));  // 12 MiB
  REQUIRE(values.capacity() * sizeof(std::uint64_t) >= (std::size_t{12} << 20));
  REQUIRE(values.size() == 1000);
  for (std::size_t i = 0; i < values.size(); ++i) REQUIRE(values[i] == i * 7919);
  const std::uint64_t* const room = values.data();
  for (std::size_t i = 1000; i < values.capacity(); ++i) values.push_back(i * 7919);
  REQUIRE(values.data() == room);  // filled within the room reserved: no reallocation
  for (std::size_t i = 0; i < values.size(); i += 4099) REQUIRE(values[i] == i * 7919);

  check_advised(values.data());
}

TEST_CASE("advise_huge_pages leaves memory it advises as it was, and ignores what holds no whole huge page",
          "[huge_pages]") {
  std::vector<unsigned char> bytes(std::size_t{6} << 20);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 31 + 7);
  daydream::advise_huge_pages(bytes.data(), bytes.size());  // already written: the advice may not clear it
  for (std::size_t i = 0; i < bytes.size(); i += 511) REQUIRE(bytes[i] == static_cast<unsigned char>(i * 31 + 7));
  daydream::advise_huge_pages(bytes.data() + 1, kHugePage - 2);  // no whole 2 MiB page: nothing to do
  daydream::advise_huge_pages(nullptr, kHugePage * 4);
  daydream::advise_huge_pages(bytes.data(), 0);
  for (std::size_t i = 0; i < bytes.size(); i += 511) REQUIRE(bytes[i] == static_cast<unsigned char>(i * 31 + 7));
}

TEST_CASE("reserve_huge_page_heap advises the heap that later blocks come from", "[huge_pages]") {
  // The `daydream` program's first step; each test case runs in a process of its own (ctest).
#if defined(__GLIBC__) && !defined(DAYDREAM_TEST_SANITIZED)
  REQUIRE(daydream::reserve_huge_page_heap());
  std::vector<unsigned char> block(std::size_t{8} << 20);  // below 32 MiB: from the heap, not mapped
  for (std::size_t i = 0; i < block.size(); i += 4096) block[i] = static_cast<unsigned char>(i >> 12);
  for (std::size_t i = 0; i < block.size(); i += 4096) REQUIRE(block[i] == static_cast<unsigned char>(i >> 12));
  check_advised(block.data());
#else
  CHECK_FALSE(daydream::reserve_huge_page_heap());  // a sanitizer's heap, or not glibc: left alone
#endif
}
