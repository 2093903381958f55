#pragma once
// Real CUPTI activity records -> the collector's records (activity_records.hpp). The only file
// that reads CUpti_Activity* structures; the record versions are chosen by CUPTI_API_VERSION.

#include <cupti.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cupti/recorder.hpp"

namespace daydream::cupti {

/// API function names by callback id (cuptiGetCallbackName, without the version suffix), cached.
class ApiNames {
 public:
  std::string_view name(ApiDomain domain, std::uint32_t cbid);

 private:
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::string> names_;  // node-based: views stay valid
};

/// Converts one activity record and adds it to `recorder`. Kinds the collector does not use are
/// ignored.
void add_activity(const CUpti_Activity& activity, Recorder& recorder, ApiNames& names);

}  // namespace daydream::cupti
