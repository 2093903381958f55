#pragma once
// One Kineto event's JSON read into a RawEvent: the part of parsing a trace that needs nothing
// from the events before it, so that batches of events can be read on two threads while their
// normalisation (KinetoParser::add_event: names, lanes, tables) runs on one, in document order.
#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "ingest/kineto/kineto_event.hpp"
#include "ingest/kineto/recorded_operands.hpp"

namespace daydream::kineto {

class EventReader {
 public:
  /// Errors name `path`, the event `index` and the field being read.
  EventReader(const std::string& path, const std::int64_t& index) : path_(path), index_(index) {}

  /// Reads one element of an events array into `raw`, its record_shapes args into `operands`
  /// (cleared first). Throws Error where the element is no object or a field has the wrong type,
  /// simdjson_error where its JSON is malformed.
  void read(simdjson::simdjson_result<simdjson::ondemand::value> element, RawEvent& raw, RecordedOperands& operands);

  /// The field the last read() read last: where simdjson raised an error, the field to name.
  std::string_view field() const { return field_; }
  void set_field(std::string_view field) { field_ = field; }

 private:
  // Inline (defined in event_reader.cpp, the one place that calls them): read() costs half as much
  // again where the compiler leaves them out of line.
  [[noreturn]] void fail(std::string_view field, const std::string& problem) const;
  inline void parse_event(simdjson::ondemand::object object, RawEvent& raw, RecordedOperands& operands);
  inline void parse_args(simdjson::ondemand::object args, RawEvent& raw, RecordedOperands& operands);
  inline bool set_string(simdjson::ondemand::value value, std::string_view& out, std::string_view field);
  inline void read_flexible(simdjson::ondemand::value value, FlexibleId& out, std::string_view field);
  inline void read_time(simdjson::ondemand::value value, std::optional<TimeNs>& out, std::string_view& token,
                        std::string_view field);

  const std::string& path_;
  const std::int64_t& index_;
  std::string_view field_;  // a member, not the caller's: a store through a reference slowed every field
};

}  // namespace daydream::kineto
