#include "common/pattern.hpp"

#include <fmt/format.h>
#include <re2/re2.h>

#include <mutex>
#include <unordered_map>

#include "daydream/error.hpp"

namespace daydream {
namespace {

// RE2's compiled program and its match cache may take this much memory (RE2's default); a
// pattern over it is refused, not run slowly.
constexpr std::int64_t kMaxPatternMemory = std::int64_t{8} << 20;

RE2::Options options() {
  RE2::Options o;
  o.set_log_errors(false);  // the error goes into the exception, not to stderr
  // Bytes, not UTF-8: names are matched byte for byte (a UTF-8 literal still matches itself), and
  // Unicode classes such as \pL stay small (in UTF-8, (\pL|\pN){1000} compiles to ~200 MB).
  o.set_encoding(RE2::Options::EncodingLatin1);
  o.set_max_mem(kMaxPatternMemory);
  return o;
}

/// The pattern as an error message shows it: whole up to 200 characters.
std::string shown(const std::string& pattern) {
  constexpr std::size_t kShown = 200;
  if (pattern.size() <= kShown) return pattern;
  return fmt::format("{}... ({} characters)", pattern.substr(0, kShown), pattern.size());
}

/// Compiled patterns by their text, for the process: at most kCachedPatterns, each of at most
/// kCachedProgram instructions (a few KiB; larger ones are compiled each time), dropped all at
/// once when full. Invalid patterns are never kept.
class PatternCache {
 public:
  std::shared_ptr<const RE2> find(const std::string& pattern) {
    std::lock_guard lock(mutex_);
    const auto it = compiled_.find(pattern);
    return it == compiled_.end() ? nullptr : it->second;
  }
  void keep(const std::string& pattern, std::shared_ptr<const RE2> re) {
    if (re->ProgramSize() > kCachedProgram) return;
    std::lock_guard lock(mutex_);
    if (compiled_.size() >= kCachedPatterns) compiled_.clear();
    compiled_.emplace(pattern, std::move(re));
  }

 private:
  static constexpr std::size_t kCachedPatterns = 256;
  static constexpr int kCachedProgram = 4096;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const RE2>> compiled_;
};

PatternCache& pattern_cache() {
  static PatternCache cache;
  return cache;
}

}  // namespace

Pattern::Pattern(const std::string& pattern, std::string_view what) : re_(pattern_cache().find(pattern)) {
  if (re_) return;
  auto re = std::make_shared<const RE2>(pattern, options());
  if (!re->ok())
    throw Error(fmt::format("invalid {} pattern '{}': not a regular expression RE2 accepts ({})", what,
                            shown(pattern), shown(re->error())));
  pattern_cache().keep(pattern, re);
  re_ = std::move(re);
}

Pattern::~Pattern() = default;
Pattern::Pattern(Pattern&&) noexcept = default;
Pattern& Pattern::operator=(Pattern&&) noexcept = default;

bool Pattern::search(std::string_view text) const { return RE2::PartialMatch(text, *re_); }

}  // namespace daydream
