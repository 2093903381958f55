// Reading one Kineto event's JSON (event_reader.hpp). Timestamps are parsed from the number
// tokens themselves ("1712195495519695.8" us) into integer nanoseconds: a double cannot hold 16
// significant digits plus a fraction exactly.
#include "ingest/kineto/event_reader.hpp"

#include <fmt/format.h>

#include "common/text.hpp"
#include "daydream/error.hpp"

namespace daydream::kineto {
namespace od = simdjson::ondemand;

namespace {

// Integers written as floating-point numbers ("stream": 7.0); out-of-range values count as absent.
std::int64_t integral(double value) {
  if (!(value > -9.2e18 && value < 9.2e18)) return kNone;
  return static_cast<std::int64_t>(value);
}

std::int64_t int_arg(od::value value) {  // as read_flexible: an integer first
  std::int64_t n = kNone;
  if (value.get_int64().get(n) == simdjson::SUCCESS) return n;
  n = kNone;
  const auto type = value.type().value();
  if (type == od::json_type::number) {
    n = integral(double(value.get_double()));
  } else if (type == od::json_type::string) {
    n = text::trailing_integer(std::string_view(value.get_string())).value_or(kNone);
  }
  return n;
}

std::string_view string_arg(od::value value) {
  std::string_view s;
  if (value.type() == od::json_type::string) s = value.get_string();
  return s;
}

/// The product of a `grid` or `block` list ([4, 106, 1] -> 424); kNone unless it is a list of
/// positive integers.
std::int64_t dims_product(od::value value) {
  od::array dims;
  if (value.get_array().get(dims) != simdjson::SUCCESS) return kNone;
  std::int64_t product = 1;
  for (auto dim : dims) {
    std::int64_t n = 0;
    if (dim.get_int64().get(n) != simdjson::SUCCESS || n <= 0) return kNone;
    product *= n;
  }
  return product;
}

}  // namespace

// Keys are told apart by their first character first: each comparison with a key reads it, and
// most of an event's args are keys daydream does not read (comparing each with every name read
// was a twentieth of loading a trace).
void EventReader::parse_event(od::object object, RawEvent& raw, RecordedOperands& operands) {
  for (auto field : object) {
    const auto key = field.key().value();
    od::value value = field.value();
    switch (key.raw()[0]) {
      case 'p':
        if (key == "ph") set_string(value, raw.ph, "ph");
        else if (key == "pid") read_flexible(value, raw.pid, "pid");
        break;
      case 'c':
        if (key == "cat") raw.has_cat = set_string(value, raw.cat, "cat");
        break;
      case 'n':
        if (key == "name") raw.has_name = set_string(value, raw.name, "name");
        break;
      case 't':
        if (key == "tid") read_flexible(value, raw.tid, "tid");
        else if (key == "ts") read_time(value, raw.ts, raw.ts_token, "ts");
        break;
      case 'i':
        if (key == "id") read_flexible(value, raw.id, "id");
        break;
      case 'd':
        if (key == "dur") read_time(value, raw.dur, raw.dur_token, "dur");
        break;
      case 'a':
        if (key == "args" && value.type() == od::json_type::object) parse_args(value.get_object(), raw, operands);
        break;
      default:
        break;
    }
  }
}

bool EventReader::set_string(od::value value, std::string_view& out, std::string_view field) {
  field_ = field;
  if (value.type() != od::json_type::string) fail(field, "expected a string");
  out = value.get_string();
  return true;
}

// An integer first (what nearly every id and number arg is): a value of another type is left
// unread by get_int64, and then read by its type.
void EventReader::read_flexible(od::value value, FlexibleId& out, std::string_view field) {
  field_ = field;
  std::int64_t n = 0;
  if (value.get_int64().get(n) == simdjson::SUCCESS) {
    out.number = n;
    return;
  }
  const auto type = value.type().value();
  if (type == od::json_type::number) {
    if (const auto n2 = integral(double(value.get_double())); n2 != kNone) out.number = n2;
  } else if (type == od::json_type::string) {
    out.text = value.get_string();
  }
}

void EventReader::read_time(od::value value, std::optional<TimeNs>& out, std::string_view& token,
                            std::string_view field) {
  field_ = field;
  if (value.type() != od::json_type::number) fail(field, "expected a number of microseconds");
  token = value.raw_json_token();
  out = text::microseconds_to_ns(token);
  if (!out) fail(field, fmt::format("malformed number '{}'", token));
}

void EventReader::parse_args(od::object args, RawEvent& raw, RecordedOperands& operands) {
  for (auto field : args) {
    const auto key = field.key().value();
    field_ = "args";
    od::value v = field.value();
    switch (key.raw()[0]) {  // as in parse_event
      case 'c':
        if (key == "correlation") raw.correlation = int_arg(v);
        else if (key == "cuda_sync_kind") raw.sync_kind = string_arg(v);
        break;
      case 'E':
      case 'e':
        if (key == "External id" || key == "external id") raw.external_id = int_arg(v);
        break;
      case 's':
        if (key == "stream") raw.stream = int_arg(v);
        else if (key == "shared memory") raw.shared_memory = int_arg(v);
        break;
      case 'd':
        if (key == "device") raw.device = int_arg(v);
        else if (key == "dtype") raw.dtype = string_arg(v);
        break;
      case 'b':
        if (key == "bytes") raw.bytes = int_arg(v);
        else if (key == "block") raw.block_threads = dims_product(v);
        break;
      case 'S':
        if (key == "Sequence number") raw.sequence_number = int_arg(v);
        break;
      case 'w':
        if (key == "wait_on_stream") raw.wait_on_stream = int_arg(v);
        else if (key == "wait_on_cuda_event_record_corr_id") raw.wait_record_correlation = int_arg(v);
        break;
      case 'n':
        if (key == "name") raw.meta_name = string_arg(v);
        break;
      case 'C':
        if (key == "Collective name") raw.collective_name = string_arg(v);
        break;
      case 'I':
        if (key == "In msg nelems") raw.in_elements = int_arg(v);
        else if (key == "Input Dims") raw.has_input_dims = operands.read_dims(v);
        else if (key == "Input type") raw.has_input_types = operands.read_types(v);
        break;
      case 'O':
        if (key == "Out msg nelems") raw.out_elements = int_arg(v);
        break;
      case 'G':
        if (key == "Group size") raw.group_size = int_arg(v);
        break;
      case 'P':
        if (key == "Process Group Name") raw.process_group = string_arg(v);
        break;
      case 'g':
        if (key == "grid") raw.grid_blocks = dims_product(v);
        break;
      case 'r':
        if (key == "registers per thread") raw.registers = int_arg(v);
        break;
      default:
        break;
    }
  }
}

void EventReader::read(simdjson::simdjson_result<od::value> element, RawEvent& raw, RecordedOperands& operands) {
  field_ = {};
  od::object object;
  if (element.get_object().get(object) != simdjson::SUCCESS) fail("", "event is not a JSON object");
  operands.clear();
  parse_event(object, raw, operands);
}

void EventReader::fail(std::string_view field, const std::string& problem) const {
  throw Error(path_, index_, std::string(field), problem);
}

}  // namespace daydream::kineto
