#pragma once
// The one regular-expression engine of daydream: every pattern a user or a trace supplies (task
// filters, range windows, iteration ranges, scenario parameters) is an RE2 expression, matched
// in time linear in the text and without recursion, so no kernel name or pattern can make a
// search take exponential time or overflow the stack (docs/transform.md, "Patterns").
#include <memory>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace daydream {

class Pattern {
 public:
  /// Compiles `pattern` (RE2 syntax; a leading "(?i)" ignores case, as in Python's re). Throws
  /// Error "invalid <what> pattern '...': not a regular expression RE2 accepts (<reason>)" for one
  /// RE2 cannot compile, such as a lookahead, a back-reference, a repetition over {1000} or a
  /// program over 8 MiB. A small pattern compiled before in this process is shared, not compiled
  /// again (a sweep's scenarios name the same few patterns thousands of times).
  Pattern(const std::string& pattern, std::string_view what);
  ~Pattern();
  Pattern(Pattern&&) noexcept;
  Pattern& operator=(Pattern&&) noexcept;

  /// Whether the expression matches anywhere in `text` (as std::regex_search, Python's re.search).
  bool search(std::string_view text) const;

 private:
  std::shared_ptr<const re2::RE2> re_;  // const: RE2 matches from many threads at once
};

}  // namespace daydream
