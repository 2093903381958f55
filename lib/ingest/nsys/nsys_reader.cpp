// Nsight Systems SQLite export -> Trace (see docs/formats.md, "Nsight Systems SQLite").
//
// Each table is read only if the export has it (Nsight leaves out empty tables, and the schema
// changes between versions): optional columns a version lacks are selected as NULL. Times are
// integer nanoseconds in the file already and are kept exactly.
#include "ingest/nsys/nsys_reader.hpp"
#include "ingest/trace_tables.hpp"

#include <sqlite3.h>

#include <fmt/format.h>

#include <fstream>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daydream/error.hpp"
#include "ingest/nsys/operator_ranges.hpp"
#include "ingest/nsys/sqlite_db.hpp"

namespace daydream {
namespace {

using nsys::Database;
using nsys::OperatorRange;
using nsys::parse_operator_range;
using nsys::Statement;

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};
/// CUPTI's "no stream / no event" value (CUPTI_SYNCHRONIZATION_INVALID_VALUE), as Nsight stores it.
constexpr std::int64_t kInvalidId = 0xFFFFFFFF;

constexpr std::string_view kStringIds = "StringIds";
constexpr std::string_view kRuntime = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr std::string_view kDriver = "CUPTI_ACTIVITY_KIND_DRIVER";
constexpr std::string_view kKernel = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr std::string_view kMemcpy = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr std::string_view kMemset = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr std::string_view kSync = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
constexpr std::string_view kCudaEvent = "CUPTI_ACTIVITY_KIND_CUDA_EVENT";
constexpr std::string_view kNvtx = "NVTX_EVENTS";

// NVTX_EVENTS.eventType values (Nsight Systems, "SQLite Schema Event Values").
constexpr std::int64_t kNvtxPushPopRange = 59;
constexpr std::int64_t kNvtxStartEndRange = 60;

std::uint64_t big_endian(const std::string& data, std::size_t offset, std::size_t bytes) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < bytes; ++i) value = (value << 8) | static_cast<unsigned char>(data[offset + i]);
  return value;
}

// SQLite reads pages lazily, so a truncated file may fail late or not at all. The header knows
// the database size (valid when the change counter equals "version valid for"): check it first.
// `header`: the file's first bytes (at least 100 where it has them); `size`: its whole size.
void check_header(const std::string& header, std::uint64_t size, const std::string& name) {
  if (size < 100)
    throw Error(name, Error::kNoEvent, "",
                fmt::format("truncated SQLite file: {} bytes, shorter than the 100-byte header", size));
  std::uint64_t page_size = big_endian(header, 16, 2);
  if (page_size == 1) page_size = 65536;
  const std::uint64_t pages = big_endian(header, 28, 4);
  const bool size_valid = pages != 0 && big_endian(header, 24, 4) == big_endian(header, 92, 4);
  if (size_valid && size < page_size * pages)
    throw Error(name, Error::kNoEvent, "",
                fmt::format("truncated SQLite file: the header says {} pages of {} bytes ({} bytes), the file has {}",
                            pages, page_size, pages * page_size, size));
}

/// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": CUPTI's runtime names carry the version that
/// introduced the call; Kineto writes them without it. Driver suffixes such as "_v2" (fewer than
/// four digits) are part of the real symbol name and stay.
std::string_view strip_api_version(std::string_view name) {
  const auto pos = name.rfind("_v");
  if (pos == std::string_view::npos || name.size() - pos - 2 < 4) return name;
  for (std::size_t i = pos + 2; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return name;
  return name.substr(0, pos);
}

// Kineto's spelling of CUPTI's copy kinds ("Memcpy HtoD (Pageable -> Device)") from Nsight's
// enum names: "CUDA_MEMCPY_KIND_HTOD" -> "HtoD", "CUDA_MEMCPY_KIND_UVM_HTOD" -> "UVM HtoD".
std::string copy_kind_from_enum_name(std::string_view name) {
  constexpr std::string_view prefix = "CUDA_MEMCPY_KIND_";
  if (name.substr(0, prefix.size()) == prefix) name.remove_prefix(prefix.size());
  if (name == "UNKNOWN") return "Unknown";
  std::string out;
  while (!name.empty()) {
    const auto cut = name.find('_');
    const std::string_view token = name.substr(0, cut);
    if (!out.empty()) out += ' ';
    if (token.size() == 4 && token.substr(1, 2) == "TO") out += fmt::format("{}to{}", token[0], token[3]);
    else out += token;
    name = cut == std::string_view::npos ? std::string_view{} : name.substr(cut + 1);
  }
  return out;
}

/// A table and its columns; columns a version of the schema lacks are selected as NULL.
struct Table {
  std::string name;
  std::set<std::string, std::less<>> columns;

  bool present() const { return !columns.empty(); }
  bool has(std::string_view column) const { return columns.find(column) != columns.end(); }
};

/// The columns of one SELECT, by name, and the row being read.
class Row {
 public:
  Row(const Statement& stmt, const Table& table, const std::vector<std::string_view>& names, const std::string& file,
      std::int64_t index)
      : stmt_(stmt), table_(table), names_(names), file_(file), index_(index) {}

  std::optional<std::int64_t> integer(std::size_t i) const {
    const int column = static_cast<int>(i);
    switch (stmt_.type(column)) {
      case SQLITE_NULL: return std::nullopt;
      case SQLITE_INTEGER: return stmt_.int64(column);
      default:
        throw Error(file_, index_, field(i), "expected an integer (Nsight writes ids and times as integers)");
    }
  }
  std::optional<std::string_view> text(std::size_t i) const { return stmt_.text(static_cast<int>(i)); }
  std::string field(std::size_t i) const { return fmt::format("{}.{}", table_.name, names_[i]); }

 private:
  const Statement& stmt_;
  const Table& table_;
  const std::vector<std::string_view>& names_;
  const std::string& file_;
  std::int64_t index_;
};

/// Parses one database into a Trace. Holds the per-file state (strings, enums, lanes).
class NsysParser {
 public:
  NsysParser(const Database& db, std::string file) : db_(db) {
    trace_.path = std::move(file);
    trace_.strings.emplace_back();
  }

  Trace parse() {
    if (!db_.has_table(kStringIds))
      throw Error(trace_.path, Error::kNoEvent, std::string(kStringIds),
                  "missing table: not an Nsight Systems SQLite export");
    const bool has_data = std::any_of(
        std::begin(kDataTables), std::end(kDataTables), [&](std::string_view t) { return db_.has_table(t); });
    if (!has_data)
      throw Error(trace_.path, Error::kNoEvent, std::string(kKernel),
                  "missing table: the export has no CUDA activity (CUPTI_ACTIVITY_KIND_*) and no NVTX_EVENTS "
                  "(record with nsys profile --trace=cuda,nvtx)");
    read_strings();
    read_enums();
    read_thread_names();
    read_devices();
    read_cuda_event_records();
    read_api_calls(kRuntime, EventKind::runtime);
    read_api_calls(kDriver, EventKind::driver);
    read_kernels();
    read_memcpys();
    read_memsets();
    read_syncs();
    read_nvtx();
    read_scheduling();
    finish();
    return std::move(trace_);
  }

 private:
  static constexpr std::string_view kDataTables[] = {kRuntime, kDriver, kKernel, kMemcpy, kMemset, kSync, kNvtx};

  // --- schema -----------------------------------------------------------------------------------

  Table table(std::string_view name) const { return {std::string(name), db_.columns(name)}; }

  void require(const Table& t, std::initializer_list<std::string_view> columns) const {
    for (auto column : columns)
      if (!t.has(column))
        throw Error(trace_.path, Error::kNoEvent, fmt::format("{}.{}", t.name, column), "missing column");
  }

  /// Runs `SELECT columns FROM table` (absent columns as NULL) and calls `visit` on every row;
  /// each row takes the next source index.
  void for_each_row(const Table& t, const std::vector<std::string_view>& columns,
                    const std::function<void(const Row&)>& visit) {
    std::string sql = "SELECT ";
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (i) sql += ", ";
      sql += t.has(columns[i]) ? fmt::format("\"{}\"", columns[i]) : std::string("NULL");
    }
    sql += fmt::format(" FROM \"{}\"", t.name);
    Statement stmt(db_, sql, t.name);
    table_ = t.name;
    while (stmt.step()) {
      if (index_ >= kMaxTraceEvents) [[unlikely]]
        throw Error(trace_.path, index_, "",
                    fmt::format("the file holds more than {} rows, the most daydream accepts", kMaxTraceEvents));
      const Row row(stmt, t, columns, trace_.path, index_);
      visit(row);
      ++index_;
    }
  }

  // --- counters ---------------------------------------------------------------------------------

  void count(stats::Id id) { trace_.report.count(id, index_); }
  void count(stats::Id id, std::string_view suffix) { trace_.report.count(id, suffix, index_); }

  /// A required value: NULL is counted (the row is skipped by the caller).
  std::optional<std::int64_t> required(const Row& row, std::size_t i) {
    auto value = row.integer(i);
    if (!value) count(stats::nsys_null_field, row.field(i));
    return value;
  }

  /// Times within what daydream accepts (trace.hpp): Error naming the row and column otherwise.
  void check_times(std::int64_t start, std::int64_t end) const {
    for (const auto& [column, ns] : {std::pair{"start", start}, std::pair{"end", end}})
      if (!is_trace_time(ns))
        throw Error(trace_.path, index_, fmt::format("{}.{}", table_, column),
                    fmt::format("{} ns is outside the times daydream accepts (|t| < 2^62 ns, 146 years)", ns));
    if (end - start > kMaxTaskDurationNs)
      throw Error(trace_.path, index_, fmt::format("{}.end", table_),
                  fmt::format("lasts {} ns from its start, longer than one day, the longest duration daydream "
                              "accepts", end - start));
  }

  /// start <= end, else counted (the row is skipped by the caller).
  bool valid_times(const Table& t, std::int64_t start, std::int64_t end) {
    if (end < start) {
      count(stats::nsys_end_before_start, t.name);
      return false;
    }
    if (end == start) count(stats::zero_duration_events);
    return true;
  }

  // --- strings, enums, threads, devices ---------------------------------------------------------

  void read_strings() {
    const Table t = table(kStringIds);
    require(t, {"id", "value"});
    Statement stmt(db_, "SELECT id, value FROM StringIds", t.name);
    while (stmt.step()) {
      if (stmt.type(0) != SQLITE_INTEGER) continue;
      string_ids_[stmt.int64(0)] = std::string(stmt.text(1).value_or(std::string_view{}));
    }
  }

  /// id -> `name` and `label` of an ENUM_* table, if the export has it.
  std::map<std::int64_t, std::pair<std::string, std::string>> read_enum(std::string_view name) const {
    std::map<std::int64_t, std::pair<std::string, std::string>> values;
    const Table t = table(name);
    if (!t.has("id") || !t.has("name")) return values;
    const std::string sql =
        fmt::format("SELECT id, name, {} FROM \"{}\"", t.has("label") ? "label" : "NULL", name);
    Statement stmt(db_, sql, t.name);
    while (stmt.step()) {
      if (stmt.type(0) != SQLITE_INTEGER) continue;
      values[stmt.int64(0)] = {std::string(stmt.text(1).value_or("")), std::string(stmt.text(2).value_or(""))};
    }
    return values;
  }

  // Values as Nsight Systems documents them; an export's own ENUM_* tables take precedence.
  void read_enums() {
    copy_kinds_ = {{0, "Unknown"}, {1, "HtoD"}, {2, "DtoH"}, {3, "HtoA"}, {4, "AtoH"}, {5, "AtoA"}, {6, "AtoD"},
                   {7, "DtoA"},    {8, "DtoD"}, {9, "HtoH"}, {10, "PtoP"}, {11, "UVM HtoD"}, {12, "UVM DtoH"},
                   {13, "UVM DtoD"}};
    for (const auto& [id, value] : read_enum("ENUM_CUDA_MEMCPY_OPER"))
      copy_kinds_[id] = copy_kind_from_enum_name(value.first);
    // CUDA_MEMOPR_MEMORY_KIND: Nsight's own numbering (not CUPTI's CUpti_ActivityMemoryKind).
    memory_kinds_ = {{0, "Pageable"}, {1, "Pinned"},         {2, "Device"},         {3, "Array"},
                     {4, "Managed"},  {5, "Device Static"}, {6, "Managed Static"}, {7, "Unknown"}};
    for (const auto& [id, value] : read_enum("ENUM_CUDA_MEM_KIND"))
      if (!value.second.empty()) memory_kinds_[id] = value.second;
    sync_kinds_ = {{0, SyncKind::unknown},
                   {1, SyncKind::event_sync},
                   {2, SyncKind::stream_wait_event},
                   {3, SyncKind::stream_sync},
                   {4, SyncKind::context_sync}};
    for (const auto& [id, value] : read_enum("ENUM_CUPTI_SYNC_TYPE"))
      sync_kinds_[id] = sync_kind_from_enum_name(value.first);
    // TRACE_PROCESS_EVENT_*: 0 CUDA_RUNTIME, 1 CUDA_DRIVER, 13 CUDA_EGL_DRIVER, 67 CUDABACKTRACE.
    event_classes_ = {{0, ApiClass::runtime}, {1, ApiClass::driver}, {13, ApiClass::driver}, {67, ApiClass::backtrace}};
    for (const auto& [id, value] : read_enum("ENUM_NSYS_EVENT_CLASS")) {
      const std::string& n = value.first;
      if (n.find("CUDABACKTRACE") != std::string::npos) event_classes_[id] = ApiClass::backtrace;
      else if (n.find("DRIVER") != std::string::npos) event_classes_[id] = ApiClass::driver;
      else if (n.find("CUDA_RUNTIME") != std::string::npos) event_classes_[id] = ApiClass::runtime;
      else event_classes_[id] = ApiClass::other;
    }
  }

  static SyncKind sync_kind_from_enum_name(std::string_view name) {
    const auto ends_with = [&](std::string_view suffix) {
      return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
    };
    if (ends_with("_EVENT_SYNCHRONIZE")) return SyncKind::event_sync;
    if (ends_with("_STREAM_WAIT_EVENT")) return SyncKind::stream_wait_event;
    if (ends_with("_STREAM_SYNCHRONIZE")) return SyncKind::stream_sync;
    if (ends_with("_CONTEXT_SYNCHRONIZE")) return SyncKind::context_sync;
    return SyncKind::unknown;
  }

  void read_thread_names() {
    const Table t = table("ThreadNames");
    if (!t.has("nameId") || !t.has("globalTid")) return;
    Statement stmt(db_, "SELECT globalTid, nameId FROM ThreadNames", t.name);
    while (stmt.step()) {
      if (stmt.type(0) != SQLITE_INTEGER || stmt.type(1) != SQLITE_INTEGER) continue;
      const auto it = string_ids_.find(stmt.int64(1));
      if (it == string_ids_.end()) continue;
      const auto thread = nsys::decode_global_tid(stmt.int64(0));
      thread_names_[{thread.pid, thread.tid}] = it->second;
    }
  }

  void read_devices() {
    const Table t = table("TARGET_INFO_GPU");
    if (!t.has("id")) return;
    enum : std::size_t { kId, kName, kSms, kMajor, kMinor, kWarp, kWarpsPerSm, kBlocksPerSm, kRegsPerSm, kRegsPerBlock,
                         kShmemPerSm, kMemory };
    const std::vector<std::string_view> columns = {"id", "name", "smCount", "computeMajor", "computeMinor",
                                                   "threadsPerWarp", "maxWarpsPerSm", "maxBlocksPerSm",
                                                   "maxRegistersPerSm", "maxRegistersPerBlock", "maxShmemPerSm",
                                                   "totalMemory"};
    std::string sql = "SELECT ";
    for (std::size_t i = 0; i < columns.size(); ++i)
      sql += fmt::format("{}{}", i ? ", " : "", t.has(columns[i]) ? fmt::format("\"{}\"", columns[i]) : "NULL");
    Statement stmt(db_, sql + " FROM TARGET_INFO_GPU ORDER BY id", t.name);
    while (stmt.step()) {
      const auto name = stmt.text(kName);
      trace_.metadata.devices.push_back(name && !name->empty() ? std::string(*name)
                                                               : fmt::format("GPU {}", stmt.int64(kId)));
      const auto value = [&](std::size_t i) {
        return stmt.type(static_cast<int>(i)) == SQLITE_INTEGER
                   ? static_cast<std::int32_t>(std::clamp<std::int64_t>(stmt.int64(static_cast<int>(i)), 0, INT32_MAX))
                   : 0;
      };
      GpuResources gpu;
      gpu.device = stmt.int64(kId);
      gpu.name = trace_.metadata.devices.back();
      if (stmt.type(kMemory) == SQLITE_INTEGER) gpu.memory_bytes = static_cast<double>(std::max<std::int64_t>(0, stmt.int64(kMemory)));
      gpu.sm_count = value(kSms);
      gpu.compute_major = value(kMajor);
      gpu.compute_minor = value(kMinor);
      gpu.warp_size = value(kWarp);
      gpu.max_threads_per_sm = value(kWarpsPerSm) * gpu.warp_size;
      gpu.max_blocks_per_sm = value(kBlocksPerSm);
      gpu.registers_per_sm = value(kRegsPerSm);
      gpu.registers_per_block = value(kRegsPerBlock);
      gpu.shared_memory_per_sm = value(kShmemPerSm);
      trace_.metadata.gpus.push_back(gpu);
    }
  }

  // cudaEventRecord activity: (process, event id) -> (correlation of the record call, stream), by
  // correlation. Joins synchronization records to the cudaEventRecord they wait for.
  void read_cuda_event_records() {
    const Table t = table(kCudaEvent);
    if (!t.has("eventId") || !t.has("correlationId") || !t.has("streamId")) return;
    Statement stmt(db_, fmt::format("SELECT {}, eventId, correlationId, streamId FROM \"{}\"",
                                    t.has("globalPid") ? "globalPid" : "NULL", t.name),
                   t.name);
    while (stmt.step()) {
      if (stmt.type(1) != SQLITE_INTEGER || stmt.type(2) != SQLITE_INTEGER || stmt.type(3) != SQLITE_INTEGER) continue;
      const std::int64_t pid = stmt.type(0) == SQLITE_INTEGER ? nsys::decode_global_tid(stmt.int64(0)).pid : 0;
      event_records_[{pid, stmt.int64(1)}].emplace_back(stmt.int64(2), stmt.int64(3));
    }
    for (auto& [key, records] : event_records_) std::sort(records.begin(), records.end());
  }

  // --- names and lanes --------------------------------------------------------------------------

  std::uint32_t intern(std::string_view text) { return tables_.intern(text); }

  /// The name a StringIds id stands for; an id missing from StringIds is counted.
  std::uint32_t string_id(const Row& row, std::size_t i, std::int64_t id, bool api_name) {
    auto& cache = api_name ? api_names_ : names_;
    if (auto it = cache.find(id); it != cache.end()) return it->second;
    const auto found = string_ids_.find(id);
    if (found == string_ids_.end()) return intern(unknown_string(row, i, id));
    const std::string_view text = api_name ? strip_api_version(found->second) : std::string_view(found->second);
    return cache[id] = intern(text);
  }

  /// What an id missing from StringIds is named, "<string N>"; counted.
  std::string unknown_string(const Row& row, std::size_t i, std::int64_t id) {
    count(stats::nsys_unknown_string_id, row.field(i));
    return fmt::format("<string {}>", id);
  }

  std::uint32_t lane(LaneKind kind, std::int64_t process, std::int64_t thread) { return tables_.lane(kind, process, thread); }

  std::uint32_t cpu_lane(std::int64_t global_tid) {
    const auto thread = nsys::decode_global_tid(global_tid);
    return lane(LaneKind::cpu_thread, thread.pid, thread.tid);
  }

  TraceEvent& add(EventKind kind, std::int64_t start, std::int64_t end, std::uint32_t name, std::uint32_t lane_index,
                  std::int64_t correlation) {
    check_times(start, end);  // before end - start, which could overflow
    TraceEvent e;
    e.kind = kind;
    e.start_ns = start;
    e.duration_ns = end - start;
    e.name = name;
    e.lane = lane_index;
    e.correlation = correlation;
    e.source_index = static_cast<std::uint32_t>(index_);
    trace_.events.push_back(e);
    return trace_.events.back();
  }

  // --- CPU side: CUDA API calls, NVTX ---------------------------------------------------------

  enum class ApiClass : std::uint8_t { runtime, driver, backtrace, other };

  void read_api_calls(std::string_view name, EventKind kind) {
    const Table t = table(name);
    if (!t.present()) return;
    require(t, {"start", "end", "globalTid", "nameId"});
    enum : std::size_t { kStart, kEnd, kTid, kName, kCorrelation, kClass };
    for_each_row(t, {"start", "end", "globalTid", "nameId", "correlationId", "eventClass"}, [&](const Row& row) {
      EventKind event_kind = kind;
      if (const auto event_class = row.integer(kClass)) {
        const auto it = event_classes_.find(*event_class);
        const ApiClass api_class = it == event_classes_.end() ? ApiClass::other : it->second;
        if (api_class == ApiClass::backtrace) return count(stats::nsys_cuda_backtrace_rows);
        if (api_class == ApiClass::driver) event_kind = EventKind::driver;
        if (api_class == ApiClass::other) count(stats::nsys_unknown_event_class, std::to_string(*event_class));
      }
      const auto start = required(row, kStart), end = required(row, kEnd);
      const auto tid = required(row, kTid), name_id = required(row, kName);
      if (!start || !end || !tid || !name_id || !valid_times(t, *start, *end)) return;
      const auto correlation = row.integer(kCorrelation).value_or(kNone);
      const TraceEvent& e =
          add(event_kind, *start, *end, string_id(row, kName, *name_id, true), cpu_lane(*tid), correlation);
      if (correlation != kNone) api_names_by_correlation_[{trace_.lanes[e.lane].process, correlation}] = e.name;
    });
  }

  void read_nvtx() {
    const Table t = table(kNvtx);
    if (!t.present()) return;
    require(t, {"start", "end", "eventType", "globalTid"});
    enum : std::size_t { kStart, kEnd, kType, kTid, kText, kTextId, kEndTid };
    for_each_row(t, {"start", "end", "eventType", "globalTid", "text", "textId", "endGlobalTid"}, [&](const Row& row) {
      const auto type = required(row, kType);
      if (!type) return;
      if (*type != kNvtxPushPopRange && *type != kNvtxStartEndRange)
        return count(stats::nvtx_other_events, std::to_string(*type));
      const auto start = required(row, kStart), tid = required(row, kTid);
      if (!start || !tid) return;
      const auto end = row.integer(kEnd);
      if (!end) return count(stats::nvtx_range_without_end);
      if (*end < *start) return count(stats::nvtx_range_end_before_start);
      if (*end == *start) count(stats::zero_duration_events);
      if (const auto end_tid = row.integer(kEndTid); end_tid && *end_tid != *tid)
        count(stats::nvtx_range_ends_on_other_thread);
      const std::optional<std::string_view> message = nvtx_message(row, kText, kTextId);
      if (!message) count(stats::nvtx_range_without_text);
      if (const auto op = message ? parse_operator_range(*message) : std::nullopt)
        return add_operator_range(*op, *start, *end, cpu_lane(*tid));
      add(EventKind::user_annotation, *start, *end, intern(message.value_or("(unnamed NVTX range)")), cpu_lane(*tid),
          kNone);
    });
  }

  /// A range's message: its text, else the StringIds entry of its textId (a missing one is
  /// counted and named "<string N>"); nullopt when it has neither.
  std::optional<std::string_view> nvtx_message(const Row& row, std::size_t text_column, std::size_t id_column) {
    if (const auto text = row.text(text_column); text && !text->empty()) return *text;
    const auto id = row.integer(id_column);
    if (!id) return std::nullopt;
    if (const auto found = string_ids_.find(*id); found != string_ids_.end()) return std::string_view(found->second);
    unknown_message_ = unknown_string(row, id_column, *id);
    return std::string_view(unknown_message_);
  }

  /// An operator range of PyTorch's emit_nvtx (operator_ranges.hpp): a framework operator, as
  /// Kineto's cpu_op, named without the fields, with its sequence number and inputs' sizes.
  void add_operator_range(const OperatorRange& op, std::int64_t start, std::int64_t end, std::uint32_t lane) {
    count(stats::nvtx_operator_ranges);
    const std::size_t position = trace_.events.size();
    TraceEvent& e = add(EventKind::cpu_op, start, end, intern(op.name), lane, kNone);
    e.sequence_number = op.sequence_number.value_or(kNone);
    if (op.sizes_malformed) return count(stats::nvtx_malformed_sizes);
    if (!op.has_sizes || op.dims.empty()) return;  // no tensor input with dimensions
    trace_.shapes.begin_operator(static_cast<std::int64_t>(position));
    std::size_t first = 0;
    for (const std::uint32_t rank : op.ranks) {
      trace_.shapes.add_operand(std::span<const std::int64_t>(op.dims.data() + first, rank), {});
      first += rank;
    }
  }

  // --- thread scheduling --------------------------------------------------------------------------

  // SCHED_EVENTS (nsys --sample/--cpuctxsw): one row per context switch, isSchedIn 1 when the
  // thread is switched in. A thread is off CPU from a switch-out to its next switch-in; only
  // threads that already have CUDA or NVTX events are kept.
  void read_scheduling() {
    const Table t = table("SCHED_EVENTS");
    if (!t.has("start") || !t.has("isSchedIn") || !t.has("globalTid")) return;
    std::map<std::uint32_t, std::vector<std::pair<std::int64_t, bool>>> switches;  // lane -> (time, in)
    Statement stmt(db_, "SELECT globalTid, start, isSchedIn FROM SCHED_EVENTS ORDER BY globalTid, start", t.name);
    while (stmt.step()) {
      if (stmt.type(0) != SQLITE_INTEGER || stmt.type(1) != SQLITE_INTEGER || stmt.type(2) != SQLITE_INTEGER) continue;
      const auto thread = nsys::decode_global_tid(stmt.int64(0));
      const auto lane = existing_cpu_lane(thread.pid, thread.tid);
      if (lane) switches[*lane].emplace_back(stmt.int64(1), stmt.int64(2) != 0);
    }
    for (const auto& [lane, list] : switches) add_off_cpu(lane, list);
  }

  std::optional<std::uint32_t> existing_cpu_lane(std::int64_t pid, std::int64_t tid) const {
    for (std::uint32_t i = 0; i < trace_.lanes.size(); ++i) {
      const Lane& l = trace_.lanes[i];
      if (l.kind == LaneKind::cpu_thread && l.process == pid && l.thread == tid) return i;
    }
    return std::nullopt;
  }

  void add_off_cpu(std::uint32_t lane, const std::vector<std::pair<std::int64_t, bool>>& list) {
    trace_.scheduled_lanes.push_back(lane);
    std::optional<std::int64_t> out;
    for (const auto& [time, in] : list) {
      if (!in) out = time;
      else if (out) trace_.off_cpu.push_back({lane, *out, time}), out.reset();
    }
  }

  // --- GPU side ---------------------------------------------------------------------------------

  struct GpuRow {
    std::int64_t start = 0, end = 0, device = 0, stream = 0, correlation = kNone;
  };

  // The columns every GPU activity table shares, first in each SELECT.
  static constexpr std::size_t kGpuColumns = 6;
  static std::vector<std::string_view> gpu_columns(std::initializer_list<std::string_view> more) {
    std::vector<std::string_view> columns = {"start", "end", "deviceId", "streamId", "correlationId", "globalPid"};
    columns.insert(columns.end(), more);
    return columns;
  }

  std::optional<GpuRow> gpu_row(const Table& t, const Row& row) {
    const auto start = required(row, 0), end = required(row, 1), device = required(row, 2), stream = required(row, 3);
    if (!start || !end || !device || !stream || !valid_times(t, *start, *end)) return std::nullopt;
    if (const auto global_pid = row.integer(5)) {
      const std::int64_t pid = nsys::decode_global_tid(*global_pid).pid;
      const auto [it, inserted] = device_process_.try_emplace(*device, pid);
      if (!inserted && it->second != pid) count(stats::nsys_processes_share_device);
    }
    return GpuRow{*start, *end, *device, *stream, row.integer(4).value_or(kNone)};
  }

  void read_kernels() {
    const Table t = table(kKernel);
    if (!t.present()) return;
    require(t, {"start", "end", "deviceId", "streamId"});
    if (!t.has("demangledName") && !t.has("shortName"))
      throw Error(trace_.path, Error::kNoEvent, fmt::format("{}.demangledName", t.name),
                  "missing column (and no shortName either)");
    enum : std::size_t { kDemangled = kGpuColumns, kShortName, kGridX, kGridY, kGridZ, kBlockX, kBlockY, kBlockZ,
                         kRegisters, kStaticShared, kDynamicShared, kSharedConfig };
    const auto columns = gpu_columns({"demangledName", "shortName", "gridX", "gridY", "gridZ", "blockX", "blockY",
                                      "blockZ", "registersPerThread", "staticSharedMemory", "dynamicSharedMemory",
                                      "sharedMemoryExecuted"});
    for_each_row(t, columns, [&](const Row& row) {
      const auto name_id = row.integer(kDemangled) ? row.integer(kDemangled) : row.integer(kShortName);
      if (!name_id) {
        count(stats::nsys_null_field, row.field(kDemangled));
        return;
      }
      const auto g = gpu_row(t, row);
      if (!g) return;
      const std::size_t name_column = row.integer(kDemangled) ? kDemangled : kShortName;
      TraceEvent& e = add(EventKind::kernel, g->start, g->end, string_id(row, name_column, *name_id, false),
                          lane(LaneKind::gpu_stream, g->device, g->stream), g->correlation);
      e.launch = launch_config(row, kGridX);
    });
  }

  /// The launch configuration of a kernel row (columns from `first`: grid x/y/z, block x/y/z,
  /// registers, static and dynamic shared memory, shared memory executed); -1 without grid and block.
  std::int32_t launch_config(const Row& row, std::size_t first) {
    std::int64_t blocks = 1, threads = 1;
    for (std::size_t i = 0; i < 3; ++i) {
      const auto grid = row.integer(first + i), block = row.integer(first + 3 + i);
      if (!grid || !block || *grid <= 0 || *block <= 0) return -1;
      blocks *= *grid;
      threads *= *block;
    }
    const auto narrow = [&](std::size_t i) {
      return static_cast<std::int32_t>(std::clamp<std::int64_t>(row.integer(first + i).value_or(0), 0, INT32_MAX));
    };
    LaunchConfig config;
    config.blocks = blocks;
    config.threads_per_block = static_cast<std::int32_t>(std::min<std::int64_t>(threads, INT32_MAX));
    config.registers_per_thread = narrow(6);
    config.shared_memory_bytes = narrow(7) + narrow(8);
    config.shared_memory_config_bytes = narrow(9);
    trace_.launches.push_back(config);
    return static_cast<std::int32_t>(trace_.launches.size() - 1);
  }

  std::string_view memory_kind(std::optional<std::int64_t> id) const {
    if (!id) return "Unknown";
    const auto it = memory_kinds_.find(*id);
    return it == memory_kinds_.end() ? std::string_view("Unknown") : std::string_view(it->second);
  }

  void read_memcpys() {
    const Table t = table(kMemcpy);
    if (!t.present()) return;
    require(t, {"start", "end", "deviceId", "streamId", "copyKind"});
    enum : std::size_t { kCopyKind = kGpuColumns, kSrc, kDst, kBytes };
    for_each_row(t, gpu_columns({"copyKind", "srcKind", "dstKind", "bytes"}), [&](const Row& row) {
      const auto copy_kind = required(row, kCopyKind);
      if (!copy_kind) return;
      const auto g = gpu_row(t, row);
      if (!g) return;
      const auto kind = copy_kinds_.find(*copy_kind);
      const std::string name =
          fmt::format("Memcpy {} ({} -> {})", kind == copy_kinds_.end() ? std::string("Unknown") : kind->second,
                      memory_kind(row.integer(kSrc)), memory_kind(row.integer(kDst)));
      TraceEvent& e = add(EventKind::memcpy, g->start, g->end, intern(name),
                          lane(LaneKind::gpu_stream, g->device, g->stream), g->correlation);
      e.bytes = row.integer(kBytes).value_or(kNone);
    });
  }

  void read_memsets() {
    const Table t = table(kMemset);
    if (!t.present()) return;
    require(t, {"start", "end", "deviceId", "streamId"});
    enum : std::size_t { kMemKind = kGpuColumns, kBytes };
    for_each_row(t, gpu_columns({"memKind", "bytes"}), [&](const Row& row) {
      const auto g = gpu_row(t, row);
      if (!g) return;
      const std::string name = fmt::format("Memset ({})", memory_kind(row.integer(kMemKind)));
      TraceEvent& e = add(EventKind::memset, g->start, g->end, intern(name),
                          lane(LaneKind::gpu_stream, g->device, g->stream), g->correlation);
      e.bytes = row.integer(kBytes).value_or(kNone);
    });
  }

  static std::string_view sync_name(SyncKind kind) {
    switch (kind) {
      case SyncKind::event_sync: return "Event Sync";
      case SyncKind::stream_wait_event: return "Stream Wait Event";
      case SyncKind::stream_sync: return "Stream Sync";
      case SyncKind::context_sync: return "Context Sync";
      default: return "Unknown Sync";
    }
  }

  void read_syncs() {
    const Table t = table(kSync);
    if (!t.present()) return;
    require(t, {"start", "end", "deviceId", "streamId", "syncType"});
    enum : std::size_t { kType = kGpuColumns, kEvent };
    for_each_row(t, gpu_columns({"syncType", "eventId"}), [&](const Row& row) {
      const auto type = required(row, kType);
      if (!type) return;
      const auto g = gpu_row(t, row);
      if (!g) return;
      const auto it = sync_kinds_.find(*type);
      const SyncKind kind = it == sync_kinds_.end() ? SyncKind::unknown : it->second;
      const std::int64_t stream = g->stream == kInvalidId || g->stream < 0 ? kNone : g->stream;
      TraceEvent& e = add(EventKind::cuda_sync, g->start, g->end, intern(sync_name(kind)),
                          lane(LaneKind::gpu_stream, g->device, stream), g->correlation);
      e.sync_kind = kind;
      e.sync_stream = stream;
      const auto global_pid = row.integer(5);
      const std::int64_t pid = global_pid ? nsys::decode_global_tid(*global_pid).pid : 0;
      const auto event_id = row.integer(kEvent);
      if ((kind == SyncKind::event_sync || kind == SyncKind::stream_wait_event) && event_id && *event_id != kInvalidId)
        join_event_record(e, pid, *event_id);
      if (global_pid) check_sync_type(e, pid);
    });
  }

  // The cudaEventRecord a sync waits for: the latest record of its event id issued (by
  // correlation id, which CUPTI hands out in call order) before the synchronizing call.
  void join_event_record(TraceEvent& e, std::int64_t pid, std::int64_t event_id) {
    const auto it = event_records_.find({pid, event_id});
    if (it != event_records_.end() && e.correlation != kNone) {
      const auto& records = it->second;  // (correlation, stream), sorted
      const auto after = std::lower_bound(records.begin(), records.end(), std::make_pair(e.correlation, kNone));
      if (after != records.begin()) {
        e.wait_record_correlation = std::prev(after)->first;
        e.wait_on_stream = std::prev(after)->second;
        return;
      }
    }
    count(stats::cuda_sync_event_record_unknown);
  }

  // CUPTI's sync type against the API call it belongs to (some exports label every
  // cudaDeviceSynchronize "Event Sync"). Kept as recorded: the graph goes by the call's name.
  void check_sync_type(const TraceEvent& e, std::int64_t pid) {
    const auto call = api_names_by_correlation_.find({pid, e.correlation});
    if (call == api_names_by_correlation_.end()) return;
    const SyncKind expected = expected_sync_kind(trace_.strings[call->second]);
    if (expected != SyncKind::none && expected != e.sync_kind)
      count(stats::cuda_sync_type_mismatch);
  }

  static SyncKind expected_sync_kind(std::string_view call) {
    if (call == "cudaDeviceSynchronize" || call == "cuCtxSynchronize") return SyncKind::context_sync;
    if (call == "cudaStreamSynchronize" || call == "cuStreamSynchronize") return SyncKind::stream_sync;
    if (call == "cudaEventSynchronize" || call == "cuEventSynchronize") return SyncKind::event_sync;
    if (call == "cudaStreamWaitEvent" || call == "cuStreamWaitEvent") return SyncKind::stream_wait_event;
    return SyncKind::none;
  }

  void finish() {
    trace_.metadata.format = "nsys-sqlite";
    for (auto& l : trace_.lanes) {
      if (l.kind == LaneKind::gpu_stream) {
        l.name = fmt::format("GPU {} stream {}", l.process, l.thread);
        continue;
      }
      const auto it = thread_names_.find({l.process, l.thread});
      l.name = it != thread_names_.end() && !it->second.empty() ? fmt::format("thread {} ({})", l.thread, it->second)
                                                               : fmt::format("thread {}", l.thread);
    }
  }

  const Database& db_;
  Trace trace_;
  std::int64_t index_ = 0;  // source index of the row being read (all event tables, in read order)
  std::string table_;       // the table being read, for messages
  std::unordered_map<std::int64_t, std::string> string_ids_;
  std::string unknown_message_;  // nvtx_message's "<string N>" for an id StringIds lacks
  std::unordered_map<std::int64_t, std::uint32_t> names_, api_names_;
  TraceTables tables_{trace_};
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> thread_names_;
  std::map<std::int64_t, std::string> copy_kinds_, memory_kinds_;
  std::map<std::int64_t, SyncKind> sync_kinds_;
  std::map<std::int64_t, ApiClass> event_classes_;
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::pair<std::int64_t, std::int64_t>>> event_records_;
  std::map<std::pair<std::int64_t, std::int64_t>, std::uint32_t> api_names_by_correlation_;  // (pid, correlation)
  std::map<std::int64_t, std::int64_t> device_process_;
};

// The trace of the database at `db_path` (the file itself or its temporary copy), `bytes` long.
Trace parse_database(const std::filesystem::path& db_path, const std::string& name, std::uint64_t bytes) {
  const Database db(db_path, name);
  Trace trace = NsysParser(db, name).parse();
  trace.bytes_read = bytes;
  return trace;
}

}  // namespace

bool NsysSqliteReader::can_read(const InputFile& file) const {
  return std::string_view(file.contents).substr(0, kSqliteMagic.size()) == kSqliteMagic;
}

Trace NsysSqliteReader::read(const InputFile& file) const {
  const std::string name = file.path.string();
  check_header(file.contents, file.contents.size(), name);
  const nsys::TemporaryFile copy(file.contents, name);
  return parse_database(copy.path(), name, file.contents.size());
}

std::optional<Trace> NsysSqliteReader::read_stream(InputStream& in) const { return read_nsys_stream(in); }

Trace read_nsys_stream(InputStream& in) {
  const std::string name = in.path().string();
  std::string header(100, '\0');
  if (!in.gzip()) {  // SQLite reads the file itself, page by page: no copy at all
    std::error_code ec;
    const std::uint64_t size = std::filesystem::file_size(in.path(), ec);
    if (ec) throw Error(name, Error::kNoEvent, "", "cannot read its size: " + ec.message());
    header.resize(in.read(header.data(), header.size()));
    check_header(header, size, name);
    return parse_database(in.path(), name, size);
  }
  const nsys::TemporaryFile copy(in, name);  // inflated block by block
  std::ifstream(copy.path(), std::ios::binary).read(header.data(), static_cast<std::streamsize>(header.size()));
  check_header(header, in.decoded_bytes(), name);
  return parse_database(copy.path(), name, in.decoded_bytes());
}

}  // namespace daydream
