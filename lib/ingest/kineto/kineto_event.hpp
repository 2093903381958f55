#pragma once
// One Chrome-trace event as read from JSON, before it is normalised into a TraceEvent.

#include <cstdint>
#include <optional>
#include <string_view>

#include "daydream/trace.hpp"

namespace daydream::kineto {

/// Integer that may be written as a number or as a string ("stream 7", "25738").
struct FlexibleId {
  std::optional<std::int64_t> number;
  std::string_view text;
  bool present() const { return number.has_value() || !text.empty(); }
};

struct RawEvent {
  std::string_view ph, cat, name;
  bool has_name = false, has_cat = false;
  FlexibleId pid, tid, id;
  std::optional<TimeNs> ts, dur;
  std::string_view ts_token, dur_token;  // for messages when a number is malformed
  // args
  std::int64_t correlation = kNone, external_id = kNone, stream = kNone, device = kNone, bytes = kNone;
  std::int64_t sequence_number = kNone, wait_on_stream = kNone, wait_record_correlation = kNone;
  std::string_view sync_kind, meta_name;
  std::string_view collective_name, dtype, process_group;
  std::int64_t in_elements = kNone, out_elements = kNone, group_size = kNone;
  // "Input Dims" / "Input type" (record_shapes): read into the parser's RecordedOperands; of an
  // `nccl:<op>` annotation of older PyTorch, the message shape and type
  bool has_input_dims = false, has_input_types = false;
  // kernels: the launch configuration (`grid`, `block`, `registers per thread`, `shared memory`)
  std::int64_t grid_blocks = kNone, block_threads = kNone, registers = kNone, shared_memory = kNone;
};

/// The categories daydream understands, legacy and modern names folded together.
enum class Category : std::uint8_t {
  unknown, cpu_op, user_annotation, python_function, runtime, driver, kernel, memcpy, memset,
  cuda_sync, gpu_annotation, profiler_span, launch_flow, fwdbwd_flow
};

Category classify(std::string_view cat, bool* legacy);

}  // namespace daydream::kineto
