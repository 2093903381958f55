#include "common/cuda_api.hpp"

#include "common/text.hpp"

namespace daydream::cuda {

bool copy_blocks_host(std::string_view call, std::string_view copy) {
  const bool device_to_host = text::contains(copy, "DtoH");
  if (text::contains(call, "Async")) return device_to_host && text::contains(copy, "Pageable");
  return device_to_host || (text::contains(copy, "HtoD") && text::contains(copy, "Pinned"));
}

}  // namespace daydream::cuda
