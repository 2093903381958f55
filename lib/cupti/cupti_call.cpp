#include "cupti/cupti_call.hpp"

#include <cstdio>

namespace daydream::cupti {

const char* cupti_result_text(CUptiResult result) {
  const char* text = nullptr;
  // The macro's own reporting: a failure here is answered with a fixed text, not reported again.
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || !text) return "unknown CUPTI result";
  return text;
}

CUptiResult checked_cupti(CUptiResult result, const char* call, const char* file, int line, CUptiResult expected) {
  if (result != CUPTI_SUCCESS && result != expected)
    std::fprintf(stderr, "daydream-cupti: %s failed: %s (%d) at %s:%d\n", call, cupti_result_text(result),
                 static_cast<int>(result), file, line);
  return result;
}

}  // namespace daydream::cupti
