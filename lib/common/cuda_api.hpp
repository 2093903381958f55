#pragma once
// Facts of the CUDA API that both the importers and the graph builder go by.

#include <string_view>

namespace daydream::cuda {

/// Whether a copy call blocks the CPU until its copy is done, per the CUDA API synchronisation
/// rules: an async call (`cudaMemcpyAsync`) only for a device-to-pageable-host copy; a
/// synchronous one (`cudaMemcpy`, `cuMemcpyDtoH`) for any device-to-host copy and for a
/// host-to-device copy from pinned memory. `copy` is the copy's name ("Memcpy DtoH (Device ->
/// Pageable)"), `call` the API call's.
bool copy_blocks_host(std::string_view call, std::string_view copy);

}  // namespace daydream::cuda
