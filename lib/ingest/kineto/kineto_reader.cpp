// Kineto Chrome-trace JSON -> Trace, in one pass with simdjson On-Demand: each event is read
// (event_reader.hpp), then normalised into the Trace's tables.
#include "ingest/kineto/kineto_reader.hpp"

#include <simdjson.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "common/huge_pages.hpp"
#include "common/text.hpp"
#include "daydream/error.hpp"
#include "ingest/clock_alignment.hpp"
#include "ingest/kineto/batch_reading.hpp"
#include "ingest/kineto/event_batches.hpp"
#include "ingest/kineto/event_reader.hpp"
#include "ingest/kineto/event_stream.hpp"
#include "ingest/kineto/kineto_event.hpp"
#include "ingest/kineto/recorded_operands.hpp"
#include "ingest/padding.hpp"
#include "ingest/trace_tables.hpp"

namespace daydream {
namespace od = simdjson::ondemand;
using kineto::Category;
using kineto::FlexibleId;
using kineto::RawEvent;

static_assert(kInputPadding >= simdjson::SIMDJSON_PADDING);

namespace kineto {

Category classify(std::string_view cat, bool* legacy) {
  struct Entry { std::string_view name; Category category; bool legacy; };
  static constexpr Entry kTable[] = {
      {"cpu_op", Category::cpu_op, false},          {"Operator", Category::cpu_op, true},
      {"user_annotation", Category::user_annotation, false},
      {"python_function", Category::python_function, false},
      {"cuda_runtime", Category::runtime, false},   {"Runtime", Category::runtime, true},
      {"cuda_driver", Category::driver, false},     {"kernel", Category::kernel, false},
      {"Kernel", Category::kernel, true},           {"gpu_memcpy", Category::memcpy, false},
      {"Memcpy", Category::memcpy, true},           {"gpu_memset", Category::memset, false},
      {"Memset", Category::memset, true},           {"cuda_sync", Category::cuda_sync, false},
      {"gpu_user_annotation", Category::gpu_annotation, false},
      {"Trace", Category::profiler_span, false},    {"ac2g", Category::launch_flow, false},
      {"async", Category::launch_flow, true},       {"fwdbwd", Category::fwdbwd_flow, false},
  };
  for (const auto& entry : kTable) {
    if (entry.name == cat) {
      if (entry.legacy) *legacy = true;
      return entry.category;
    }
  }
  return Category::unknown;
}

}  // namespace kineto

namespace {

EventKind event_kind(Category category) {
  switch (category) {
    case Category::cpu_op: return EventKind::cpu_op;
    case Category::user_annotation: return EventKind::user_annotation;
    case Category::python_function: return EventKind::python_function;
    case Category::runtime: return EventKind::runtime;
    case Category::driver: return EventKind::driver;
    case Category::kernel: return EventKind::kernel;
    case Category::memcpy: return EventKind::memcpy;
    case Category::memset: return EventKind::memset;
    case Category::cuda_sync: return EventKind::cuda_sync;
    default: return EventKind::gpu_annotation;
  }
}

SyncKind sync_kind_of(std::string_view text) {
  if (text.empty()) return SyncKind::none;
  if (text == "Stream Sync") return SyncKind::stream_sync;
  if (text == "Event Sync") return SyncKind::event_sync;
  if (text == "Context Sync") return SyncKind::context_sync;
  if (text == "Stream Wait Event") return SyncKind::stream_wait_event;
  return SyncKind::unknown;
}

std::optional<std::int64_t> id_value(const FlexibleId& id) {
  if (id.number) return id.number;
  if (!id.text.empty()) return text::trailing_integer(id.text);
  return std::nullopt;
}

/// Batches are read on two threads where the machine has two and the document holds two batches
/// at least (a helper thread costs tens of microseconds to start).
bool on_two_threads(BatchThreads threads, std::size_t batch_bytes, std::uint64_t total_bytes) {
  if (threads != BatchThreads::automatic) return threads == BatchThreads::two;
  return std::thread::hardware_concurrency() >= 2 && total_bytes / 2 >= batch_bytes;
}

/// Room reserved for the events of a whole document: one per this many bytes of JSON. Kineto
/// writes 220-250 bytes per event (indented, with args); a compact file that holds more events
/// only grows the array as usual, and room a sparser file leaves unused is never touched.
constexpr std::size_t kJsonBytesPerEvent = 200;

/// Parses one document into a Trace. Holds the per-file state (string and lane tables).
class KinetoParser {
 public:
  explicit KinetoParser(std::string file) { trace_.path = std::move(file); trace_.strings.emplace_back(); }

  Trace parse(const std::string& contents) {
    if (contents.find_first_not_of(" \t\r\n") == std::string::npos)
      throw Error(trace_.path, Error::kNoEvent, "", "empty document (no JSON)");
    if (contents.size() >= simdjson::SIMDJSON_MAXSIZE_BYTES)
      throw Error(trace_.path, Error::kNoEvent, "",
                  fmt::format("trace too large: {} bytes of JSON; the parser reads at most {} bytes (4 GiB) per file",
                              contents.size(), simdjson::SIMDJSON_MAXSIZE_BYTES));
    od::parser parser;
    simdjson::padded_string copy;
    simdjson::padded_string_view json(contents.data(), contents.size(), contents.capacity());
    if (contents.capacity() < contents.size() + simdjson::SIMDJSON_PADDING) {
      copy = simdjson::padded_string(contents);
      json = copy;
    }
    reserve_dense(trace_.events, contents.size() / kJsonBytesPerEvent);
    try {
      od::document doc = parser.iterate(json);
      if (doc.type() == od::json_type::array) {
        od::array events = doc.get_array();
        parse_events(events);
      } else {
        parse_top_level(doc.get_object());
      }
    } catch (const simdjson::simdjson_error& e) {
      fail(field_, fmt::format("invalid JSON ({})", e.what()));
    }
    if (!saw_events_) throw Error(trace_.path, Error::kNoEvent, "traceEvents", "missing: not a Chrome-trace JSON file");
    finish();
    return std::move(trace_);
  }

  /// The same Trace as parse(), with the events parsed a batch of about `batch_bytes` at a time
  /// (event_batches.hpp), then the document's other members; nullopt where the document does not
  /// parse so, and the reader then parses it in one piece (which names any problem it has).
  /// `total_bytes`: the document's size where known (0: not), for the room the events take.
  std::optional<Trace> parse_in_batches(kineto::TextWindow& window, std::size_t batch_bytes, std::uint64_t total_bytes,
                                        BatchThreads threads = BatchThreads::automatic) {
    try {
      const std::optional<std::string> head = read_head(window);
      if (!head) return std::nullopt;
      od::parser parser;
      const std::optional<std::string> after_events =
          parse_event_batches(parser, window, batch_bytes, total_bytes, on_two_threads(threads, batch_bytes, total_bytes));
      if (!after_events) return std::nullopt;
      // The document with its events taken out: the members before and after them.
      std::string members = *head + "[]" + *after_events;
      members.reserve(members.size() + kInputPadding);
      od::document doc = parser.iterate(simdjson::padded_string_view(members.data(), members.size(), members.capacity()));
      if (doc.type() == od::json_type::array) parse_events(doc.get_array());
      else parse_top_level(doc.get_object());
      // Text after the document: the one-piece parse, or the stream's scanner, decides.
      if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return std::nullopt;
    } catch (const simdjson::simdjson_error&) {
      return std::nullopt;
    } catch (const Error&) {
      return std::nullopt;
    }
    finish();
    return std::move(trace_);
  }

  /// The same Trace as parse(), from a stream: simdjson parses one batch of whole events at a
  /// time (event_stream.hpp), then the document's other top-level members.
  Trace parse_stream(InputStream& in, const StreamLimits& limits) {
    od::parser parser;
    StreamedDocument document;
    try {
      event_index_ = 0;
      bool reserved = false;  // room for the events, estimated from the first batch
      document = split_trace_events(in, limits, [&](std::string_view batch) {
        field_ = "traceEvents";
        const simdjson::padded_string_view json(batch.data(), batch.size(), batch.size() + kInputPadding);
        od::document doc = parser.iterate(json);
        od::array events = doc.get_array();
        parse_event_elements(events);
        if (!reserved) reserve_events(in.size_hint(), batch.size()), reserved = true;
      });
      event_index_ = Error::kNoEvent;
      field_ = {};
      simdjson::padded_string members(document.members);
      od::document doc = parser.iterate(members);
      parse_top_level(doc.get_object());
    } catch (const simdjson::simdjson_error& e) {
      fail(field_, fmt::format("invalid JSON ({})", e.what()));
    }
    saw_events_ = saw_events_ || document.has_events;
    if (!saw_events_) throw Error(trace_.path, Error::kNoEvent, "traceEvents", "missing: not a Chrome-trace JSON file");
    finish();
    trace_.bytes_read = in.decoded_bytes();
    return std::move(trace_);
  }

 private:
  [[noreturn]] void fail(std::string_view field, const std::string& problem) const {
    throw Error(trace_.path, event_index_, std::string(field), problem);
  }

  /// Room for the events of a `total`-byte document, estimated from the first `batch` bytes: the
  /// events array of a multi-GB trace would otherwise grow by doubling, page-faulting in twice
  /// its final size.
  void reserve_events(std::uint64_t total, std::uint64_t batch) {
    if (total == 0 || batch == 0 || trace_.events.empty()) return;
    const double per_byte = static_cast<double>(trace_.events.size()) / static_cast<double>(batch);
    reserve_dense(trace_.events, static_cast<std::size_t>(per_byte * static_cast<double>(total) * 1.02) + 1024);
  }

  /// The document's text before its events (the window then starts just after their '['), or
  /// nullopt where it has none.
  static std::optional<std::string> read_head(kineto::TextWindow& window) {
    for (;;) {
      const kineto::EventsArray events = kineto::find_events_array(window.text());
      if (events.found == kineto::EventsArray::Found::yes) {
        std::string head(window.text().substr(0, events.open));
        window.drop(events.open + 1);
        return head;
      }
      if (events.found == kineto::EventsArray::Found::no || !window.read_more()) return std::nullopt;
    }
  }

  /// The events, batch by batch: each cut where an event seems to end and parsed as a JSON array,
  /// which it is, closed at its end, only where the cut lies between two events. Returns the
  /// document's text after the events' ']', read to its end; nullopt where no cut near a batch's
  /// end parses. On two threads where `two_threads` and the window's text stays put.
  std::optional<std::string> parse_event_batches(od::parser& parser, kineto::TextWindow& window,
                                                 std::size_t batch_bytes, std::uint64_t total_bytes, bool two_threads) {
    saw_events_ = true;
    event_index_ = 0;
    field_ = "traceEvents";
    // Room for the events: a document in memory reserves it as the one-piece parse does; a stream
    // estimates it from its first batches (count_parsed: its size may not be known, and a guess
    // from the size alone can be far off for a multi-GB trace).
    if (window.whole()) reserve_dense(trace_.events, total_bytes / kJsonBytesPerEvent);
    BatchProgress progress{batch_bytes, total_bytes};
    if (two_threads && window.stable()) {
      std::optional<kineto::TwoThreadReading> reading;
      try {
        reading.emplace(trace_.path, batch_bytes);
      } catch (const std::system_error&) {  // no thread to be had: one does it all
      }
      if (reading) return parse_batches_on_two_threads(*reading, parser, window, progress);
    }
    return parse_batches_on_one_thread(parser, window, progress);
  }

  /// How far the batches have got, for the events' room.
  struct BatchProgress {
    std::size_t batch_bytes;
    std::uint64_t total_bytes;
    std::uint64_t parsed = 0;  // bytes of framed batches
  };

  // The events' room, once the first kReserveSampleBytes or sixteenth of the document (of a size
  // known: a small file's would otherwise grow by doubling, zeroing twice the pages it keeps) are in.
  void count_parsed(BatchProgress& progress, std::size_t framed_bytes) {
    const std::uint64_t sample =
        progress.total_bytes == 0 ? kReserveSampleBytes : std::min(kReserveSampleBytes, progress.total_bytes / 16);
    const bool sampled = progress.parsed < sample;
    progress.parsed += framed_bytes;
    if (sampled && progress.parsed >= sample) reserve_events(progress.total_bytes, progress.parsed);
  }

  std::optional<std::string> parse_batches_on_one_thread(od::parser& parser, kineto::TextWindow& window,
                                                         BatchProgress& progress) {
    std::string batch;
    for (;;) {
      od::document doc;
      od::array events;
      std::size_t cut = next_cut(window, progress.batch_bytes);
      std::string_view framed;
      // A cut inside a string or inside an event mostly shows before any event is read: the
      // batch leaves a string open, or does not end in its array's ']'. Then the next cut.
      for (int tries = 1;; ++tries) {
        framed = window.frame(cut == kNoCut ? window.text().size() : cut, batch);
        if (kineto::open_batch(parser, framed, doc, events)) break;
        window.unframe();
        if (cut == kNoCut || tries == kMaxCutTries) return std::nullopt;
        cut = next_cut(window, cut + 1);
      }
      parse_event_elements(events);
      count_parsed(progress, framed.size());
      auto after = doc.current_location();
      window.unframe();
      if (after.error() != simdjson::OUT_OF_BOUNDS) {  // the array closed inside the batch: the events end
        const std::size_t at = after.error() == simdjson::SUCCESS ? static_cast<std::size_t>(after.value() - framed.data()) : 0;
        return events_end(window, after.error(), at, framed.size());
      }
      if (cut == kNoCut) return std::string();
      window.drop(cut + 1);
    }
  }

  // The batches are cut here and read on both threads, up to TwoThreadReading::kSlots ahead; their
  // events are added here, in order. A refused batch leaves the rest to the one-thread loop, which
  // tries the cuts after it.
  std::optional<std::string> parse_batches_on_two_threads(kineto::TwoThreadReading& reading, od::parser& parser,
                                                          kineto::TextWindow& window, BatchProgress& progress) {
    using Outcome = kineto::ReadBatch::Outcome;
    std::size_t next = 0;  // where the next batch starts in the window's text
    for (bool cut_all = false;;) {
      for (kineto::ReadBatch* batch; !cut_all && (batch = reading.next_slot()) != nullptr;) {
        const std::size_t cut = next_cut(window, next + progress.batch_bytes);
        cut_all = cut == kNoCut;
        batch->begin = next;
        batch->text = window.text().substr(next, cut_all ? kNoCut : cut - next);
        batch->last = cut_all;
        reading.queue();
        next = cut + 1;
      }
      const kineto::ReadBatch& batch = reading.oldest();
      if (batch.outcome == Outcome::failed) std::rethrow_exception(batch.error);
      if (batch.outcome == Outcome::refused) {
        reading.stop();
        window.drop(batch.begin);
        return parse_batches_on_one_thread(parser, window, progress);
      }
      add_events(batch);
      count_parsed(progress, batch.framed.size());
      if (batch.after_error != simdjson::OUT_OF_BOUNDS) {
        reading.stop();
        window.drop(batch.begin);
        return events_end(window, batch.after_error, batch.after, batch.framed.size());
      }
      if (batch.last) return std::string();
      reading.release_oldest();
    }
  }

  /// The events array closed inside the batch that starts the window, framed as `framed_bytes`
  /// ("[" + text + "]"): the document's text after the events, or nullopt where the parse did not
  /// stop at a ']' of the window (past the frame's '[', before the frame's own ']'); anywhere else
  /// (an error, or simdjson stopped reading a malformed batch early) the one-piece parse decides.
  static std::optional<std::string> events_end(kineto::TextWindow& window, simdjson::error_code error, std::size_t at,
                                               std::size_t framed_bytes) {
    if (error != simdjson::SUCCESS || at < 2 || at >= framed_bytes) return std::nullopt;
    window.drop(at - 1);
    return rest_of(window);
  }

  static constexpr std::size_t kNoCut = std::string_view::npos;
  /// The events' room is estimated again from this much JSON, in case the document is denser
  /// than kJsonBytesPerEvent.
  static constexpr std::uint64_t kReserveSampleBytes = std::uint64_t{16} << 20;
  static constexpr int kMaxCutTries = 16;

  /// The first cut at or after `from`, reading on as far as it takes; kNoCut at the document's end.
  static std::size_t next_cut(kineto::TextWindow& window, std::size_t from) {
    std::size_t cut = kineto::find_event_boundary(window.text(), from);
    while (cut == kNoCut && window.read_more()) cut = kineto::find_event_boundary(window.text(), from);
    return cut;
  }

  static std::string rest_of(kineto::TextWindow& window) {
    while (window.read_more()) {}
    return std::string(window.text());
  }

  void parse_top_level(od::object top) {
    for (auto field : top) {
      field_ = {};
      const auto key = field.key().value();
      if (key == "traceEvents") {
        field_ = "traceEvents";
        od::value value = field.value();
        if (value.type() != od::json_type::array) fail("traceEvents", "expected an array of events");
        od::array events = value.get_array();
        parse_events(events);
      } else if (key == "deviceProperties") {
        parse_devices(field.value().get_array());
      } else if (key == "distributedInfo") {
        parse_distributed(field.value().get_object());
      } else if (key == "schemaVersion") {
        trace_.metadata.schema_version = number_or_none(field.value());
      }
    }
  }

  void parse_devices(od::array devices) {
    field_ = "deviceProperties";
    for (auto device : devices) {
      GpuResources gpu;
      for (auto field : device.get_object()) {
        const auto key = field.key().value();
        if (key == "name") {
          gpu.name = std::string(std::string_view(field.value().get_string()));
          trace_.metadata.devices.push_back(gpu.name);
        } else {
          read_resource(key, field.value(), gpu);
        }
      }
      if (gpu.device != kNone) trace_.metadata.gpus.push_back(gpu);
    }
    field_ = {};
  }

  /// One `deviceProperties` field the occupancy rules use (Kineto writes cudaDeviceProp's names).
  static void read_resource(od::raw_json_string key, od::value value, GpuResources& gpu) {
    const std::int64_t n = number_or_none(value);
    if (n == kNone) return;
    const auto small = static_cast<std::int32_t>(std::clamp<std::int64_t>(n, 0, INT32_MAX));
    if (key == "id") gpu.device = n;
    else if (key == "totalGlobalMem") gpu.memory_bytes = static_cast<double>(n);
    else if (key == "numSms") gpu.sm_count = small;
    else if (key == "computeMajor") gpu.compute_major = small;
    else if (key == "computeMinor") gpu.compute_minor = small;
    else if (key == "warpSize") gpu.warp_size = small;
    else if (key == "maxThreadsPerMultiprocessor") gpu.max_threads_per_sm = small;
    else if (key == "maxBlocksPerMultiProcessor") gpu.max_blocks_per_sm = small;
    else if (key == "regsPerMultiprocessor") gpu.registers_per_sm = small;
    else if (key == "regsPerBlock") gpu.registers_per_block = small;
    else if (key == "sharedMemPerMultiprocessor") gpu.shared_memory_per_sm = small;
  }

  void parse_distributed(od::object info) {
    field_ = "distributedInfo";
    for (auto field : info) {
      const auto key = field.key().value();
      if (key == "rank") trace_.metadata.rank = number_or_none(field.value());
      else if (key == "world_size") trace_.metadata.world_size = number_or_none(field.value());
    }
    const std::int64_t world = trace_.metadata.world_size;
    if (world != kNone && (world < 1 || world > kMaxWorldSize))
      fail("distributedInfo.world_size", fmt::format("{} ranks: daydream accepts 1 to {} (kMaxWorldSize)", world, kMaxWorldSize));
    field_ = {};
  }

  static std::int64_t number_or_none(od::value value) {
    std::int64_t n = kNone;
    if (value.type() == od::json_type::number && value.get_int64().get(n) != simdjson::SUCCESS) n = kNone;
    return n;
  }

  void parse_events(od::array events) {
    saw_events_ = true;
    event_index_ = 0;
    parse_event_elements(events);
    event_index_ = Error::kNoEvent;
    field_ = {};
  }

  // The events of one array; event_index_ counts on from where it stands (a stream's batches).
  void parse_event_elements(od::array events) {
    reader_.set_field(field_);
    try {
      for (auto element : events) {
        check_event_count();
        RawEvent raw;
        reader_.read(element, raw, operands_);
        add_event(raw, operands_);
        ++event_index_;
      }
    } catch (const simdjson::simdjson_error&) {
      field_ = reader_.field();  // what the error names
      throw;
    }
    field_ = reader_.field();
  }

  // The events of a batch read on either thread.
  void add_events(const kineto::ReadBatch& batch) {
    for (std::size_t i = 0; i < batch.events.size(); ++i) {
      check_event_count();
      add_event(batch.events[i], batch.operands[i]);
      ++event_index_;
    }
  }

  void check_event_count() const {
    if (event_index_ >= kMaxTraceEvents) [[unlikely]]
      fail("", fmt::format("the file holds more than {} events, the most daydream accepts", kMaxTraceEvents));
  }

  // --- normalisation ---

  // `operands`: the event's record_shapes args.
  void add_event(const RawEvent& raw, const kineto::RecordedOperands& operands) {
    if (raw.ph.empty()) fail("ph", "missing");
    const char ph = raw.ph[0];
    if (ph == 'X') return add_complete(raw, operands);
    if (ph == 's' || ph == 'f' || ph == 't') return add_flow(raw);
    if (ph == 'M') return add_metadata(raw);
    if (ph == 'i' || ph == 'I') return count(stats::instant_events);
    count(stats::unsupported_phase, raw.ph);
  }

  void count(stats::Id id) { trace_.report.count(id, event_index_); }
  void count(stats::Id id, std::string_view suffix) { trace_.report.count(id, suffix, event_index_); }

  void add_complete(const RawEvent& raw, const kineto::RecordedOperands& operands) {
    const Category category = kineto::classify(raw.cat, &legacy_);
    if (category == Category::profiler_span) return;
    if (category == Category::unknown || category == Category::launch_flow || category == Category::fwdbwd_flow) {
      count(stats::unknown_category, raw.has_cat ? raw.cat : "(none)");
      return;
    }
    if (!raw.has_name) fail("name", "missing");
    if (!raw.ts) fail("ts", "missing");
    if (!raw.dur) fail("dur", "missing");
    if (*raw.dur < 0) fail("dur", fmt::format("negative duration {} us", raw.dur_token));
    if (*raw.dur > kMaxTaskDurationNs)
      fail("dur", fmt::format("{} us is longer than one day, the longest duration daydream accepts", raw.dur_token));
    if (!is_trace_time(*raw.ts) || !is_trace_time(*raw.ts + *raw.dur))  // the sum once ts is in range
      fail("ts", fmt::format("{} us (ending {} us later) is outside the times daydream accepts (|t| < 2^62 ns, "
                             "146 years)", raw.ts_token, raw.dur_token));
    TraceEvent event;
    event.kind = event_kind(category);
    event.start_ns = *raw.ts;
    event.duration_ns = *raw.dur;
    event.name = intern(raw.name);
    event.source_index = static_cast<std::uint32_t>(event_index_);
    event.correlation = raw.correlation;
    event.external_id = raw.external_id;
    event.bytes = raw.bytes;
    event.sequence_number = raw.sequence_number;
    event.lane = lane_of(event.kind, raw);
    if (event.kind == EventKind::cuda_sync) add_sync_fields(raw, event);
    if (event.kind == EventKind::kernel) event.launch = add_launch(raw);
    if (raw.name == "record_param_comms") event.collective = add_collective(raw);
    else if (category == Category::user_annotation && text::starts_with(raw.name, "nccl:"))
      event.collective = add_annotated_collective(raw, operands);
    if (category == Category::cpu_op && raw.has_input_dims) add_shapes(raw, operands);
    if (*raw.dur == 0) count(stats::zero_duration_events);
    trace_.events.push_back(event);
  }

  /// The operand shapes of a cpu_op recorded with `record_shapes`, keyed by the event's position
  /// (docs/gpu_model.md, "Work per kernel"). Malformed ones are counted and dropped.
  void add_shapes(const RawEvent& raw, const kineto::RecordedOperands& operands) {
    if (!operands.well_formed(raw.has_input_dims, raw.has_input_types)) return count(stats::malformed_input_shapes);
    if (!operands.any_shape()) return;  // no tensor input: nothing to compute work from
    trace_.shapes.begin_operator(static_cast<std::int64_t>(trace_.events.size()));
    operands.append_to(trace_.shapes);
  }

  void add_sync_fields(const RawEvent& raw, TraceEvent& event) {
    event.sync_kind = sync_kind_of(raw.sync_kind);
    event.sync_stream = raw.stream;
    event.wait_on_stream = raw.wait_on_stream;
    event.wait_record_correlation = raw.wait_record_correlation;
  }

  /// The launch configuration of a kernel whose args record one (grid and block at least).
  std::int32_t add_launch(const RawEvent& raw) {
    if (raw.grid_blocks == kNone || raw.block_threads == kNone) return -1;
    const auto narrow = [](std::int64_t n) { return static_cast<std::int32_t>(std::clamp<std::int64_t>(n, 0, INT32_MAX)); };
    LaunchConfig config;
    config.blocks = raw.grid_blocks;
    config.threads_per_block = narrow(raw.block_threads);
    config.registers_per_thread = narrow(std::max<std::int64_t>(raw.registers, 0));
    config.shared_memory_bytes = narrow(std::max<std::int64_t>(raw.shared_memory, 0));
    trace_.launches.push_back(config);
    return static_cast<std::int32_t>(trace_.launches.size() - 1);
  }

  std::int32_t add_collective(const RawEvent& raw) {
    CollectiveInfo info{std::string(raw.collective_name), raw.in_elements, raw.out_elements, raw.group_size,
                        std::string(raw.dtype), std::string(raw.process_group)};
    trace_.collectives.push_back(std::move(info));
    return static_cast<std::int32_t>(trace_.collectives.size() - 1);
  }

  std::int32_t add_annotated_collective(const RawEvent& raw, const kineto::RecordedOperands& operands) {
    CollectiveInfo info;
    info.name = std::string(raw.name.substr(5));  // after "nccl:"
    info.in_elements = raw.has_input_dims ? operands.first_elements() : kNone;
    info.dtype = raw.has_input_types ? std::string(operands.first_type()) : std::string();
    info.from_annotation = true;
    trace_.collectives.push_back(std::move(info));
    return static_cast<std::int32_t>(trace_.collectives.size() - 1);
  }

  std::uint32_t lane_of(EventKind kind, const RawEvent& raw) {
    const bool gpu = is_gpu_activity(kind) || kind == EventKind::cuda_sync || kind == EventKind::gpu_annotation;
    if (gpu) return gpu_lane(kind, raw);
    const auto pid = id_value(raw.pid);
    const auto tid = id_value(raw.tid);
    if (!pid) fail("pid", "missing or not an integer");
    if (!tid) fail("tid", "missing or not an integer");
    return lane(LaneKind::cpu_thread, *pid, *tid);
  }

  std::uint32_t gpu_lane(EventKind kind, const RawEvent& raw) {
    std::int64_t stream = raw.stream;
    if (stream == kNone && kind != EventKind::cuda_sync) stream = id_value(raw.tid).value_or(kNone);
    if (stream == kNone && is_gpu_activity(kind)) fail("args.stream", "missing (and tid names no stream)");
    std::int64_t device = raw.device != kNone ? raw.device : id_value(raw.pid).value_or(0);
    return lane(LaneKind::gpu_stream, device, stream);
  }

  std::uint32_t lane(LaneKind kind, std::int64_t process, std::int64_t thread) { return tables_.lane(kind, process, thread); }

  void add_flow(const RawEvent& raw) {
    const auto id = id_value(raw.id);
    if (!id || !raw.ts) {
      count(stats::flow_without_id_or_ts);
      return;
    }
    Flow flow;
    flow.category = intern(raw.cat);
    flow.id = *id;
    flow.time_ns = *raw.ts;
    flow.process = id_value(raw.pid).value_or(kNone);
    flow.thread = id_value(raw.tid).value_or(kNone);
    flow.is_start = raw.ph[0] == 's';
    trace_.flows.push_back(flow);
  }

  void add_metadata(const RawEvent& raw) {
    if (raw.name != "thread_name" && raw.name != "process_name") return;
    const auto pid = id_value(raw.pid), tid = id_value(raw.tid);
    if (!pid) return;
    auto& names = raw.name == "thread_name" ? thread_names_ : process_names_;
    names[{*pid, tid.value_or(0)}] = std::string(raw.meta_name);
  }

  std::uint32_t intern(std::string_view text) { return tables_.intern(text); }

  void finish() {
    trace_.metadata.format = legacy_ ? "kineto-json-legacy" : "kineto-json";
    for (auto& lane : trace_.lanes) lane.name = lane_name(lane);
  }

  std::string lane_name(const Lane& lane) const {
    if (lane.kind == LaneKind::gpu_stream) return fmt::format("GPU {} stream {}", lane.process, lane.thread);
    auto it = thread_names_.find({lane.process, lane.thread});
    if (it != thread_names_.end() && !it->second.empty())
      return it->second;
    return fmt::format("thread {}", lane.thread);
  }

  Trace trace_;
  std::int64_t event_index_ = Error::kNoEvent;
  std::string_view field_;
  bool saw_events_ = false;
  bool legacy_ = false;
  TraceTables tables_{trace_};
  kineto::EventReader reader_{trace_.path, event_index_};
  kineto::RecordedOperands operands_;  // the current event's "Input Dims" and "Input type"
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> thread_names_, process_names_;
};

}  // namespace

bool KinetoJsonReader::can_read(const InputFile& file) const {
  for (char c : std::string_view(file.contents).substr(0, 4096)) {
    if (c == '{' || c == '[') return true;
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return false;
  }
  return false;
}

namespace {

/// A whole document's events are parsed this many bytes at a time: simdjson's index of a batch
/// (up to four bytes per byte of JSON) then fits in a core's L2 cache.
constexpr std::size_t kEventBatchBytes = std::size_t{256} << 10;

/// A stream is read (and inflated, on a thread of its own) this many bytes at a time.
constexpr std::size_t kStreamBlockBytes = std::size_t{1} << 20;
/// A small stream's buffer is filled this many bytes at a time, each then open to the parse.
constexpr std::size_t kFillStepBytes = std::size_t{256} << 10;

Trace parse_document(const std::string& json, const std::string& name) {
  if (json.size() < simdjson::SIMDJSON_MAXSIZE_BYTES) {
    kineto::MemoryWindow window(json);
    if (auto trace = KinetoParser(name).parse_in_batches(window, kEventBatchBytes, json.size())) return std::move(*trace);
  }
  return KinetoParser(name).parse(json);
}

}  // namespace

Trace KinetoJsonReader::read(const InputFile& file) const {
  Trace trace = parse_document(file.contents, file.path.string());
  trace.bytes_read = file.contents.size();
  return trace;
}

// Batches cut where events seem to end, read through a window. Where they do not parse, a large
// file is streamed again from the start, cut by the scanner, and a small one is left to the
// whole-file path: either names any problem the document has.
std::optional<Trace> KinetoJsonReader::read_stream(InputStream& in) const {
  std::optional<Trace> trace;
  {
    std::unique_ptr<kineto::TextWindow> window;
    if (in.large()) window = std::make_unique<kineto::StreamWindow>(in, kStreamBlockBytes);
    else window = std::make_unique<kineto::FillingWindow>(in, in.size_hint(), kFillStepBytes);
    trace = KinetoParser(in.path().string()).parse_in_batches(*window, kEventBatchBytes, in.size_hint());
  }  // the window's reading thread has ended
  if (trace) {
    trace->bytes_read = in.decoded_bytes();
    return trace;
  }
  if (!in.large()) return std::nullopt;
  InputStream again(in.path());
  return stream_kineto_json(again);
}

Trace stream_kineto_json(InputStream& in, const StreamLimits& limits) {
  return KinetoParser(in.path().string()).parse_stream(in, limits);
}

std::optional<Trace> parse_kineto_batches(kineto::TextWindow& window, const std::string& name, std::size_t batch_bytes,
                                          std::uint64_t total_bytes, BatchThreads threads) {
  std::optional<Trace> trace = KinetoParser(name).parse_in_batches(window, batch_bytes, total_bytes, threads);
  if (trace) trace->bytes_read = total_bytes;
  return trace;
}

Trace parse_kineto_whole(std::string json, const std::string& name) {
  json.reserve(json.size() + kInputPadding);
  Trace trace = KinetoParser(name).parse(json);
  trace.bytes_read = json.size();
  return trace;
}

Trace parse_kineto_json(std::string json, const std::string& name) {
  json.reserve(json.size() + kInputPadding);
  Trace trace = parse_document(json, name);
  trace.bytes_read = json.size();
  check_trace_times(trace);
  return trace;
}

}  // namespace daydream
