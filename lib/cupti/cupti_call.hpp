#pragma once
// The one way the backend calls CUPTI (Kineto's habit): DAYDREAM_CUPTI_CALL(cuptiX(...)) runs the
// call, and on failure prints the call, cuptiGetResultString's text and the place to stderr.
// It returns the CUptiResult; it never throws and never exits (we run inside someone's program).
// Every CUPTI call of the backend goes through it.
//
//   if (DAYDREAM_CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME)) != CUPTI_SUCCESS) ...

#include <cupti.h>

namespace daydream::cupti {

/// Reports `result` when it is neither CUPTI_SUCCESS nor `expected`; returns it unchanged.
CUptiResult checked_cupti(CUptiResult result, const char* call, const char* file, int line,
                          CUptiResult expected = CUPTI_SUCCESS);

/// cuptiGetResultString's text for `result` ("CUPTI_ERROR_NOT_INITIALIZED"...), never null.
const char* cupti_result_text(CUptiResult result);

}  // namespace daydream::cupti

#define DAYDREAM_CUPTI_CALL(call) ::daydream::cupti::checked_cupti((call), #call, __FILE__, __LINE__)
/// The same, for a call where one failure code is an expected answer (not reported).
#define DAYDREAM_CUPTI_CALL_EXPECTING(call, expected) \
  ::daydream::cupti::checked_cupti((call), #call, __FILE__, __LINE__, (expected))
