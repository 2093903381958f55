#include "builtin.hpp"

namespace daydream::scenarios {

std::vector<Scenario> builtin() {
  return {amp(),        faster_gpu(),     faster_network(), channels_last(), pinned_memory(),     fused_adam(),
          restructure_bn(), cuda_graphs(), ddp(),            p3(),            dataloader_workers(),
          network(),     rank_speed(),     scale_out()};
}

}  // namespace daydream::scenarios
