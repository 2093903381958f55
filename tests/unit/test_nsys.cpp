// The Nsight Systems SQLite importer: tiny exports written here with the sqlite3 C API (exact
// events, lanes, names, ns times and graph edges), bad files, and the two real exports of
// ../shared/traces/nsys-sqlite (skipped with a warning when the folder is absent).
#include <catch2/catch.hpp>

#include <sqlite3.h>
#include <stdlib.h>  // mkdtemp, setenv, unsetenv

#include <array>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "daydream/error.hpp"
#include "daydream/graph.hpp"
#include "daydream/ingest.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/simulate.hpp"
#include "ingest/nsys/nsys_reader.hpp"
#include "ingest/nsys/operator_ranges.hpp"
#include "ingest/nsys/sqlite_db.hpp"
#include "unit/gzip_helpers.hpp"
#include "unit/scenario_helpers.hpp"

namespace {

namespace fs = std::filesystem;
using namespace daydream;

// globalTid / globalPid as Nsight serializes them: VM id 1 (bits 48-55), pid 100 (bits 24-47),
// tid 101 (bits 0-23).
constexpr std::int64_t kPid = (std::int64_t{1} << 48) | (std::int64_t{100} << 24);
constexpr std::int64_t kTid = kPid | 101;
const std::string kP = std::to_string(kPid);
const std::string kT = std::to_string(kTid);

// A fresh directory under the system temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "daydream-test-nsys-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// Writes an SQLite database made by `sql` (a script of CREATE TABLE and INSERT statements).
void write_db(const fs::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  const std::string error = message ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  INFO("SQLite: " << error);
  REQUIRE(rc == SQLITE_OK);
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The tables as Nsight Systems 2024.5 writes them, cut to the columns daydream reads (plus a
// few it ignores). Unlike Nsight's, the columns are nullable so that tests can store NULLs.
const std::string kSchema = R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER,
  gridX INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER,
  srcKind INTEGER, dstKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, end INTEGER, deviceId INTEGER,
  contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, syncType INTEGER,
  eventId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);
)sql";

// One thread (pid 100, tid 101) launches two kernels and a copy on stream 7 of device 0 inside
// NVTX ranges, then waits for the stream; plus the oddities the importer must count.
std::string tiny_export() {
  return kSchema + R"sql(
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cudaMemcpyAsync_v3020'),
  (3, 'cudaStreamSynchronize_v3020'), (4, 'cudaStreamSynchronize'), (5, 'cuModuleGetLoadingMode'),
  (6, 'void gemm<float>(float*, int)'), (7, 'gemm'), (8, 'relu'), (9, 'inner'), (10, 'main');
INSERT INTO ThreadNames VALUES (10, 0, )sql" + kT + R"sql();
INSERT INTO TARGET_INFO_GPU VALUES (1, 0, 'Test GPU', '0000:01:00.0');
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (500, 600, 1, T, 1, 5, 0, NULL),
  (2000, 2500, 0, T, 10, 1, 0, NULL),
  (3000, 3400, 0, T, 11, 1, 0, NULL),
  (4000, 4300, 0, T, 12, 2, 0, NULL),
  (6000, 15000, 0, T, 13, 3, 0, NULL),
  (5990, 15010, 67, T, 13, 4, 0, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (2600, 5000, 0, 1, 7, 10, P, 6, 7, 1),
  (5000, 9000, 0, 1, 7, 11, P, NULL, 8, 1),
  (7000, 8000, 0, 1, NULL, 99, P, 6, 7, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (9000, 11000, 0, 1, 7, 12, P, 4096, 2, 2, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (6100, 14900, 0, 1, 7, 13, P, 3, 4294967295);
INSERT INTO NVTX_EVENTS VALUES
  (1000, 20000, 59, NULL, 'step', T, NULL, NULL, NULL),
  (1500, 5500, 59, NULL, NULL, T, NULL, 9, 0),
  (16000, NULL, 59, NULL, 'never closed', T, NULL, NULL, NULL),
  (18000, 17000, 60, 1, 'backwards', T, T, NULL, NULL),
  (1200, 1200, 34, NULL, 'a mark', T, NULL, NULL, NULL);
)sql";
}

// Replaces the placeholders T and P (globalTid, globalPid) in an INSERT script.
std::string with_ids(std::string sql) {
  for (std::size_t pos = 0; (pos = sql.find_first_of("TP", pos)) != std::string::npos;) {
    const bool alone = (pos == 0 || sql[pos - 1] == ' ' || sql[pos - 1] == '(') &&
                       pos + 1 < sql.size() && (sql[pos + 1] == ',' || sql[pos + 1] == ')');
    if (!alone) {
      ++pos;
      continue;
    }
    const std::string& id = sql[pos] == 'T' ? kT : kP;
    sql.replace(pos, 1, id);
    pos += id.size();
  }
  return sql;
}

const TraceEvent* find_event(const Trace& trace, EventKind kind, std::string_view name, int occurrence = 0) {
  for (const auto& e : trace.events)
    if (e.kind == kind && trace.name_of(e) == name && occurrence-- == 0) return &e;
  return nullptr;
}

TaskId find_task(const Graph& graph, TaskKind kind, std::int64_t correlation) {
  for (TaskId t = 0; t < graph.num_tasks(); ++t)
    if (graph.task(t).kind == kind && graph.task(t).correlation == correlation) return t;
  return kNoTask;
}

// Edges of a type between two tasks that were recorded (not inferred).
bool has_edge(const Graph& graph, TaskId from, TaskId to, EdgeType type) {
  for (const auto& next : graph.successors(from))
    if (next.task == to && next.edge.type == type && !next.edge.inferred) return true;
  return false;
}

std::int64_t edges_of(const Graph& graph, EdgeType type) { return graph.edge_counts()[static_cast<std::size_t>(type)]; }

std::array<std::int64_t, 10> kinds_of(const Trace& trace) {
  std::array<std::int64_t, 10> kinds{};
  for (const auto& e : trace.events) ++kinds[static_cast<std::size_t>(e.kind)];
  return kinds;
}
std::int64_t n(const std::array<std::int64_t, 10>& kinds, EventKind kind) {
  return kinds[static_cast<std::size_t>(kind)];
}

std::optional<Error> load_error(const fs::path& path) {
  try {
    (void)load_trace(path);
  } catch (const Error& e) {
    return e;
  } catch (const std::exception& e) {
    FAIL("expected daydream::Error, got: " << e.what());
  }
  FAIL("expected daydream::Error, nothing was thrown");
  return std::nullopt;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("nsys: globalTid decodes to (pid, tid) as Nsight's own queries do", "[nsys][ingest]") {
  const auto t = nsys::decode_global_tid(kTid);
  CHECK(t.pid == 100);
  CHECK(t.tid == 101);
  // From cloverleaf-a100.sqlite: PROCESSES.pid 1701896 for globalPid 310028053512192, whose
  // main thread "cuda-cloverleaf" has globalTid 310028055214088 (tid == pid on Linux).
  CHECK(nsys::decode_global_tid(310028055214088).pid == 1701896);
  CHECK(nsys::decode_global_tid(310028055214088).tid == 1701896);
  CHECK(nsys::decode_global_tid(310028053512192).pid == 1701896);
  CHECK(nsys::decode_global_tid(310028053512192).tid == 0);
}

TEST_CASE("nsys: a tiny export reads into exact events, lanes, names and ns times", "[nsys][ingest]") {
  TempDir dir;
  const fs::path file = dir / "tiny.sqlite";
  write_db(file, with_ids(tiny_export()));
  const Trace trace = load_trace(file);

  CHECK(trace.metadata.format == "nsys-sqlite");
  CHECK(trace.metadata.devices == std::vector<std::string>{"Test GPU"});
  CHECK(trace.bytes_read == fs::file_size(file));
  // 1 driver + 4 runtime calls (the backtrace copy skipped), 2 kernels (one without a stream
  // skipped), 1 copy, 1 sync record, 2 NVTX ranges (open, backwards and a mark skipped).
  REQUIRE(trace.events.size() == 11);
  const auto kinds = kinds_of(trace);
  CHECK(n(kinds, EventKind::driver) == 1);
  CHECK(n(kinds, EventKind::runtime) == 4);
  CHECK(n(kinds, EventKind::kernel) == 2);
  CHECK(n(kinds, EventKind::memcpy) == 1);
  CHECK(n(kinds, EventKind::cuda_sync) == 1);
  CHECK(n(kinds, EventKind::user_annotation) == 2);

  // Lanes: the thread (pid 100, tid 101) named by ThreadNames; stream 7 of device 0.
  REQUIRE(trace.lanes.size() == 2);
  const TraceEvent* driver = find_event(trace, EventKind::driver, "cuModuleGetLoadingMode");
  REQUIRE(driver);
  const Lane& cpu = trace.lanes[driver->lane];
  CHECK(cpu.kind == LaneKind::cpu_thread);
  CHECK(cpu.process == 100);
  CHECK(cpu.thread == 101);
  CHECK(cpu.name == "thread 101 (main)");
  CHECK(driver->start_ns == 500);
  CHECK(driver->duration_ns == 100);
  CHECK(driver->correlation == 1);
  CHECK(driver->source_index == 0);

  // Runtime names lose CUPTI's version suffix, as Kineto writes them.
  const TraceEvent* launch = find_event(trace, EventKind::runtime, "cudaLaunchKernel");
  REQUIRE(launch);
  CHECK(launch->start_ns == 2000);
  CHECK(launch->duration_ns == 500);
  CHECK(launch->correlation == 10);
  CHECK(launch->lane == driver->lane);
  const TraceEvent* copy_call = find_event(trace, EventKind::runtime, "cudaMemcpyAsync");
  REQUIRE(copy_call);
  CHECK(copy_call->correlation == 12);
  const TraceEvent* stream_sync = find_event(trace, EventKind::runtime, "cudaStreamSynchronize");
  REQUIRE(stream_sync);
  CHECK(stream_sync->start_ns == 6000);  // the CUPTI row, not its backtrace copy (5990)
  CHECK(stream_sync->duration_ns == 9000);
  CHECK(find_event(trace, EventKind::runtime, "cudaStreamSynchronize", 1) == nullptr);

  // Kernels: demangled name, else the short name.
  const TraceEvent* gemm = find_event(trace, EventKind::kernel, "void gemm<float>(float*, int)");
  REQUIRE(gemm);
  CHECK(gemm->start_ns == 2600);
  CHECK(gemm->duration_ns == 2400);
  CHECK(gemm->correlation == 10);
  CHECK(gemm->source_index == 6);  // rows in read order: 6 API rows, then the kernels
  const Lane& stream = trace.lanes[gemm->lane];
  CHECK(stream.kind == LaneKind::gpu_stream);
  CHECK(stream.process == 0);
  CHECK(stream.thread == 7);
  CHECK(stream.name == "GPU 0 stream 7");
  const TraceEvent* relu = find_event(trace, EventKind::kernel, "relu");
  REQUIRE(relu);
  CHECK(relu->start_ns == 5000);
  CHECK(relu->duration_ns == 4000);
  CHECK(relu->correlation == 11);
  CHECK(relu->lane == gemm->lane);

  // Copy: Kineto's name from copyKind/srcKind/dstKind (Nsight's numbering, no ENUM tables here).
  const TraceEvent* copy = find_event(trace, EventKind::memcpy, "Memcpy DtoH (Device -> Pinned)");
  REQUIRE(copy);
  CHECK(copy->start_ns == 9000);
  CHECK(copy->duration_ns == 2000);
  CHECK(copy->bytes == 4096);
  CHECK(copy->correlation == 12);
  CHECK(copy->lane == gemm->lane);

  // Sync record: stream sync of stream 7; CUPTI's invalid event id means no event.
  const TraceEvent* sync = find_event(trace, EventKind::cuda_sync, "Stream Sync");
  REQUIRE(sync);
  CHECK(sync->sync_kind == SyncKind::stream_sync);
  CHECK(sync->sync_stream == 7);
  CHECK(sync->correlation == 13);
  CHECK(sync->wait_on_stream == kNone);
  CHECK(sync->wait_record_correlation == kNone);
  CHECK(sync->start_ns == 6100);
  CHECK(sync->duration_ns == 8800);
  CHECK(sync->lane == gemm->lane);

  // NVTX ranges: text, or a registered string (textId).
  const TraceEvent* step = find_event(trace, EventKind::user_annotation, "step");
  REQUIRE(step);
  CHECK(step->start_ns == 1000);
  CHECK(step->duration_ns == 19000);
  CHECK(step->lane == driver->lane);
  const TraceEvent* inner = find_event(trace, EventKind::user_annotation, "inner");
  REQUIRE(inner);
  CHECK(inner->start_ns == 1500);
  CHECK(inner->duration_ns == 4000);

  // The oddities, counted.
  CHECK(trace.report.get("nsys_cuda_backtrace_rows") == 1);
  CHECK(trace.report.get("nsys_null_field:CUPTI_ACTIVITY_KIND_KERNEL.streamId") == 1);
  CHECK(trace.report.get("nvtx_range_without_end") == 1);
  CHECK(trace.report.get("nvtx_range_end_before_start") == 1);
  CHECK(trace.report.get("nvtx_other_events:34") == 1);
  CHECK(trace.report.get("cuda_sync_type_mismatch") == 0);
}

TEST_CASE("nsys: the tiny export builds launch, stream and sync edges", "[nsys][graph]") {
  TempDir dir;
  const fs::path file = dir / "tiny.sqlite";
  write_db(file, with_ids(tiny_export()));
  const Graph graph = build_graph(load_trace(file));

  const auto tasks = graph.task_counts();
  CHECK(tasks[static_cast<std::size_t>(TaskKind::kernel)] == 2);
  CHECK(tasks[static_cast<std::size_t>(TaskKind::memcpy)] == 1);
  CHECK(tasks[static_cast<std::size_t>(TaskKind::runtime)] == 5);

  // Launch edges by correlation id: each call -> its GPU task, and no others.
  const TaskId launch10 = find_task(graph, TaskKind::runtime, 10), kernel10 = find_task(graph, TaskKind::kernel, 10);
  const TaskId launch11 = find_task(graph, TaskKind::runtime, 11), kernel11 = find_task(graph, TaskKind::kernel, 11);
  const TaskId call12 = find_task(graph, TaskKind::runtime, 12), copy12 = find_task(graph, TaskKind::memcpy, 12);
  const TaskId sync13 = find_task(graph, TaskKind::runtime, 13);
  for (TaskId t : {launch10, kernel10, launch11, kernel11, call12, copy12, sync13}) REQUIRE(t != kNoTask);
  CHECK(graph.name(launch10) == "cudaLaunchKernel");
  CHECK(graph.name(sync13) == "cudaStreamSynchronize");
  CHECK(has_edge(graph, launch10, kernel10, EdgeType::launch));
  CHECK(has_edge(graph, launch11, kernel11, EdgeType::launch));
  CHECK(has_edge(graph, call12, copy12, EdgeType::launch));
  CHECK(edges_of(graph, EdgeType::launch) == 3);
  // The stream in launch order.
  CHECK(has_edge(graph, kernel10, kernel11, EdgeType::gpu_sequential));
  CHECK(has_edge(graph, kernel11, copy12, EdgeType::gpu_sequential));
  CHECK(edges_of(graph, EdgeType::gpu_sequential) == 2);
  // cudaStreamSynchronize waits for the last task of the stream its sync record names.
  CHECK(has_edge(graph, copy12, sync13, EdgeType::sync));
  CHECK(edges_of(graph, EdgeType::sync) == 1);
  CHECK(graph.task(sync13).blocking);
  CHECK(graph.report().get("sync_stream_inferred") == 0);
  // The NVTX ranges are the operators around the calls.
  CHECK(graph.string(graph.task(kernel10).op_name) == "inner");

  const SimulationResult result = simulate(graph);
  CHECK(result.start_ns[kernel10] >= result.start_ns[launch10]);
  CHECK(result.end_ns[sync13] >= result.end_ns[copy12]);
  const ReplayReport report = make_replay_report(graph, result);
  CHECK(report.span.measured_ns == 11000 - 2600);
}

TEST_CASE("nsys: event syncs and stream waits join their cudaEventRecord, ENUM tables name copies", "[nsys][graph]") {
  // Kernel A on stream 9; cudaEventRecord (event 5 on stream 9, correlation 21); stream 7 waits
  // for it (cudaStreamWaitEvent, 22) before kernel B; the thread then waits for the event (24).
  // Event 5 is also recorded before (2) and after (40) on other streams.
  const std::string sql = kSchema + R"sql(
CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT (deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, eventId INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL, memKind INTEGER);
CREATE TABLE ENUM_CUPTI_SYNC_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (0, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN', 'Unknown'),
  (1, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE', 'Event sync'),
  (2, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT', 'Stream wait sync'),
  (3, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE', 'Stream sync'),
  (4, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE', 'Context sync');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'),
  (13, 'CUDA_MEMCPY_KIND_UVM_DTOD', 'Unified Device-to-Device'), (20, 'CUDA_MEMCPY_KIND_DTOH', 'test-only id');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'),
  (1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'), (2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device'),
  (9, 'CUDA_MEMOPR_MEMORY_KIND_TEST', 'Test Memory');
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cudaEventRecord_v3020'),
  (3, 'cudaStreamWaitEvent_v3020'), (4, 'cudaEventSynchronize_v3020'), (5, 'kernelA'), (6, 'kernelB');
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (1000, 1100, 0, T, 20, 1, 0, NULL),
  (1200, 1300, 0, T, 21, 2, 0, NULL),
  (1400, 1500, 0, T, 22, 3, 0, NULL),
  (1600, 1700, 0, T, 23, 1, 0, NULL),
  (1800, 5200, 0, T, 24, 4, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (1200, 5000, 0, 1, 9, 20, P, 5, 5, 1),
  (5100, 6000, 0, 1, 7, 23, P, 6, 6, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (0, 1, 3, 2, P, 5), (0, 1, 9, 21, P, 5), (0, 1, 11, 40, P, 5);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES
  (1400, 1500, 0, 1, 7, 22, P, 2, 5),
  (1800, 5200, 0, 1, 4294967295, 24, P, 1, 5);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES
  (7000, 7100, 0, 1, 11, 50, P, 64, 1, 0, 2),
  (7200, 7300, 0, 1, 11, 51, P, 64, 13, 2, 2),
  (7400, 7500, 0, 1, 11, 52, P, 64, 20, 2, 9);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (7600, 7700, 0, 1, 11, 53, P, 0, 256, 2);
)sql";
  TempDir dir;
  const fs::path file = dir / "events.sqlite";
  write_db(file, with_ids(sql));
  const Trace trace = load_trace(file);

  const TraceEvent* wait = find_event(trace, EventKind::cuda_sync, "Stream Wait Event");
  REQUIRE(wait);
  CHECK(wait->sync_kind == SyncKind::stream_wait_event);
  CHECK(wait->sync_stream == 7);
  CHECK(wait->wait_on_stream == 9);
  CHECK(wait->wait_record_correlation == 21);
  const TraceEvent* event_sync = find_event(trace, EventKind::cuda_sync, "Event Sync");
  REQUIRE(event_sync);
  CHECK(event_sync->sync_kind == SyncKind::event_sync);
  CHECK(event_sync->sync_stream == kNone);
  CHECK(event_sync->wait_on_stream == 9);
  CHECK(event_sync->wait_record_correlation == 21);
  CHECK(trace.report.get("cuda_sync_event_record_unknown") == 0);
  CHECK(trace.report.get("cuda_sync_type_mismatch") == 0);

  // Copy and memset names from the export's own ENUM tables (ids 20 and 9 exist only there).
  CHECK(find_event(trace, EventKind::memcpy, "Memcpy HtoD (Pageable -> Device)"));
  CHECK(find_event(trace, EventKind::memcpy, "Memcpy UVM DtoD (Device -> Device)"));
  CHECK(find_event(trace, EventKind::memcpy, "Memcpy DtoH (Device -> Test Memory)"));
  const TraceEvent* memset = find_event(trace, EventKind::memset, "Memset (Device)");
  REQUIRE(memset);
  CHECK(memset->bytes == 256);
  CHECK(memset->start_ns == 7600);

  const Graph graph = build_graph(trace);
  const TaskId a = find_task(graph, TaskKind::kernel, 20), b = find_task(graph, TaskKind::kernel, 23);
  const TaskId sync_call = find_task(graph, TaskKind::runtime, 24);
  REQUIRE(a != kNoTask);
  REQUIRE(b != kNoTask);
  REQUIRE(sync_call != kNoTask);
  CHECK(has_edge(graph, a, b, EdgeType::cross_stream));     // recorded, not inferred
  CHECK(has_edge(graph, a, sync_call, EdgeType::sync));     // recorded, not inferred
  CHECK(graph.report().get("event_sync_unresolved") == 0);
}

TEST_CASE("nsys: SQLite files are recognised by their magic, not their name", "[nsys][ingest]") {
  TempDir dir;
  const fs::path file = dir / "looks-like.json";
  write_db(file, with_ids(tiny_export()));
  const Trace trace = load_trace(file);
  CHECK(trace.metadata.format == "nsys-sqlite");
  CHECK(trace.events.size() == 11);
  const InputFile json{"x.json", "{\"traceEvents\": []}"};
  CHECK_FALSE(NsysSqliteReader().can_read(json));
}

TEST_CASE("nsys: corrupt, truncated and incomplete exports raise Error naming file and table", "[nsys][bad]") {
  TempDir dir;
  const fs::path good = dir / "good.sqlite";
  write_db(good, with_ids(tiny_export()));
  const std::string bytes = read_bytes(good);
  REQUIRE(bytes.size() > 4096);

  SECTION("truncated to half") {
    const fs::path file = dir / "half.sqlite";
    write_bytes(file, bytes.substr(0, bytes.size() / 2));
    const auto e = load_error(file);
    REQUIRE(e);
    INFO(e->what());
    CHECK(e->file() == file.string());
    CHECK(contains(e->what(), "truncated SQLite file"));
  }
  SECTION("truncated inside the header") {
    const fs::path file = dir / "header.sqlite";
    write_bytes(file, bytes.substr(0, 40));
    const auto e = load_error(file);
    REQUIRE(e);
    CHECK(e->file() == file.string());
    CHECK(contains(e->what(), "truncated SQLite file"));
  }
  SECTION("garbage after the header") {
    std::string corrupt = bytes;
    for (std::size_t i = 100; i < corrupt.size(); ++i) corrupt[i] = static_cast<char>(0xA5 ^ (i * 7));
    const fs::path file = dir / "corrupt.sqlite";
    write_bytes(file, corrupt);
    const auto e = load_error(file);
    REQUIRE(e);
    INFO(e->what());
    CHECK(e->file() == file.string());
    CHECK(contains(e->what(), "SQLite error"));
    CHECK(e->field() == "sqlite_master");
  }
  SECTION("not an Nsight export") {
    const fs::path file = dir / "other.sqlite";
    write_db(file, "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);");
    const auto e = load_error(file);
    REQUIRE(e);
    CHECK(e->file() == file.string());
    CHECK(e->field() == "StringIds");
    CHECK(contains(e->what(), "missing table"));
  }
  SECTION("no CUDA or NVTX table") {
    const fs::path file = dir / "empty.sqlite";
    write_db(file, "CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);");
    const auto e = load_error(file);
    REQUIRE(e);
    CHECK(e->field() == "CUPTI_ACTIVITY_KIND_KERNEL");
    CHECK(contains(e->what(), "missing table"));
  }
  SECTION("a kernel 'table' that is a view over an endless recursive query") {
    // It read forever before: only real tables are read (and every query has a step budget).
    const fs::path file = dir / "view.sqlite";
    write_db(file, R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS
  WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r)
  SELECT n AS start, n + 1 AS end, 0 AS deviceId, 1 AS contextId, 7 AS streamId, n AS correlationId,
         0 AS globalPid, 1 AS demangledName, 1 AS shortName, 1 AS mangledName FROM r;
)sql");
    const auto e = load_error(file);
    REQUIRE(e);
    CHECK(e->field() == "CUPTI_ACTIVITY_KIND_KERNEL");
    CHECK(contains(e->what(), "missing table"));
  }
  SECTION("a required column missing") {
    const fs::path file = dir / "nocolumn.sqlite";
    write_db(file, R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER, correlationId INTEGER);
)sql");
    const auto e = load_error(file);
    REQUIRE(e);
    CHECK(e->field() == "CUPTI_ACTIVITY_KIND_RUNTIME.nameId");
    CHECK(contains(e->what(), "missing column"));
  }
  SECTION("text where Nsight writes integers") {
    const fs::path file = dir / "text.sqlite";
    write_db(file, kSchema + "INSERT INTO StringIds VALUES (1, 'k');"
                             "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 0, 1, 7, 1, 0, 1, 1, 1),"
                             " ('soon', 5, 0, 1, 7, 2, 0, 1, 1, 1);");
    const auto e = load_error(file);
    REQUIRE(e);
    CHECK(e->field() == "CUPTI_ACTIVITY_KIND_KERNEL.start");
    CHECK(e->event_index() == 1);
  }
}

TEST_CASE("nsys: a query that runs past the file's step budget is interrupted", "[nsys][bad]") {
  TempDir dir;
  const fs::path file = dir / "tiny.sqlite";
  write_db(file, "CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);");
  const nsys::Database db(file, "tiny.sqlite");
  nsys::Statement endless(db, "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
                          "probe");
  CHECK_THROWS_WITH(endless.step(), Catch::Contains("tiny.sqlite") && Catch::Contains("probe") &&
                                        Catch::Contains("more than 100000000 SQLite steps"));
}

TEST_CASE("nsys: the temporary copy is removed after reading, also after an error", "[nsys][ingest]") {
  TempDir dir;
  const fs::path good = dir / "good.sqlite";
  write_db(good, with_ids(tiny_export()));
  const fs::path missing_column = dir / "bad.sqlite";
  write_db(missing_column, "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
                           "CREATE TABLE NVTX_EVENTS (start INTEGER, eventType INTEGER);");
  std::string corrupt = read_bytes(good);
  for (std::size_t i = 100; i < corrupt.size(); ++i) corrupt[i] = 'x';
  const fs::path garbage = dir / "garbage.sqlite";
  write_bytes(garbage, corrupt);

  // The reader's temporary files go to $TMPDIR: point it at an empty folder of our own.
  TempDir tmp;
  const char* previous = std::getenv("TMPDIR");
  const std::string saved = previous ? previous : "";
  setenv("TMPDIR", tmp.path().c_str(), 1);
  const auto files_in_tmp = [&] { return std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator{}); };
  CHECK(load_trace(good).events.size() == 11);
  CHECK(files_in_tmp() == 0);
  CHECK_THROWS_AS(load_trace(missing_column), Error);
  CHECK(files_in_tmp() == 0);
  CHECK_THROWS_AS(load_trace(garbage), Error);
  CHECK(files_in_tmp() == 0);
  if (previous) setenv("TMPDIR", saved.c_str(), 1);
  else unsetenv("TMPDIR");
}

TEST_CASE("nsys: a streamed export gives the whole-file Trace (plain opened where it lies, gzip inflated in blocks)",
          "[nsys][ingest][stream]") {
  TempDir dir;
  const fs::path plain = dir / "tiny.sqlite";
  write_db(plain, with_ids(tiny_export()));
  const std::string bytes = read_bytes(plain);
  const fs::path gz = dir / "tiny.sqlite.gz";
  write_bytes(gz, test::gzip_member(bytes.substr(0, 1000)) + test::gzip_member(bytes.substr(1000)));
  const Trace whole = load_trace(plain);
  for (const fs::path& file : {plain, gz}) {
    CAPTURE(file.string());
    InputStream in(file);
    const Trace streamed = read_nsys_stream(in);
    CHECK(streamed.events.size() == whole.events.size());
    CHECK(streamed.strings == whole.strings);
    CHECK(streamed.lanes.size() == whole.lanes.size());
    CHECK(streamed.bytes_read == bytes.size());
    CHECK(build_graph(streamed).fingerprint() == build_graph(whole).fingerprint());
    InputStream again(file);  // what load_trace calls for a large export
    const std::optional<Trace> via_reader = NsysSqliteReader().read_stream(again);
    REQUIRE(via_reader.has_value());
    CHECK(build_graph(*via_reader).fingerprint() == build_graph(whole).fingerprint());
  }
  const fs::path cut = dir / "cut.sqlite.gz";
  write_bytes(cut, test::gzip_member(bytes).substr(0, 300));
  InputStream in(cut);
  CHECK_THROWS_WITH(read_nsys_stream(in),
                    Catch::Contains("corrupt or truncated gzip stream") && Catch::Contains(cut.string()));
  const fs::path short_file = dir / "short.sqlite";
  write_bytes(short_file, bytes.substr(0, 4096));
  InputStream truncated(short_file);
  CHECK_THROWS_WITH(read_nsys_stream(truncated), Catch::Contains("truncated SQLite file"));
}

// --- the real exports in ../shared/traces/nsys-sqlite --------------------------------------------

namespace {

const fs::path kShared = DAYDREAM_SHARED_TRACES;

// Catch2 v2 has no SKIP: warn visibly and leave the test case.
#define SKIP_WITHOUT_NSYS_TRACES()                                                         \
  do {                                                                                     \
    if (!fs::is_directory(kShared / "nsys-sqlite")) {                                      \
      WARN("shared traces folder " << (kShared / "nsys-sqlite").string() << " absent: skipped"); \
      return;                                                                              \
    }                                                                                      \
  } while (false)

}  // namespace

TEST_CASE("nsys: SCHED_EVENTS become the off-CPU stretches of the threads with events", "[nsys][ingest][scheduling]") {
  // Thread 101: a leading switch-in (no stretch), out 2600 -> in 5000, out 7000 and again 7500
  // (the later one counts) -> in 9000, out 19000 never back in (no stretch). Thread 102 has no
  // CUDA or NVTX events: its switches are ignored. Rows out of order, as a table may hold them.
  const std::string other = std::to_string(kPid | 102);
  const std::string sql = tiny_export() + R"sql(
CREATE TABLE SCHED_EVENTS (start INTEGER NOT NULL, cpu INTEGER NOT NULL, isSchedIn INTEGER NOT NULL,
  globalTid INTEGER);
INSERT INTO SCHED_EVENTS VALUES (5000, 0, 1, T), (100, 0, 1, T), (2600, 1, 0, T), (7500, 0, 0, T),
  (7000, 0, 0, T), (9000, 2, 1, T), (19000, 0, 0, T), (3000, 0, 0, )sql" + other + R"sql(), (4000, 3, 1, )sql" + other + R"sql();
)sql";
  TempDir dir;
  const fs::path file = dir / "sched.sqlite";
  write_db(file, with_ids(sql));
  const Trace trace = load_trace(file);
  REQUIRE(trace.lanes.size() == 2);  // no lane for thread 102
  const TraceEvent* launch = find_event(trace, EventKind::runtime, "cudaLaunchKernel");
  REQUIRE(launch);
  CHECK(trace.scheduled_lanes == std::vector<std::uint32_t>{launch->lane});
  REQUIRE(trace.off_cpu.size() == 2);
  CHECK(trace.off_cpu[0].lane == launch->lane);
  CHECK(trace.off_cpu[0].start_ns == 2600);
  CHECK(trace.off_cpu[0].end_ns == 5000);
  CHECK(trace.off_cpu[1].lane == launch->lane);
  CHECK(trace.off_cpu[1].start_ns == 7500);
  CHECK(trace.off_cpu[1].end_ns == 9000);

  // Without the table: no scheduling data at all.
  const fs::path plain = dir / "plain.sqlite";
  write_db(plain, with_ids(tiny_export()));
  const Trace without = load_trace(plain);
  CHECK(without.off_cpu.empty());
  CHECK(without.scheduled_lanes.empty());
}

TEST_CASE("nsys real: CloverLeaf imports with the counts of its tables and replays its GPU span within 2%",
          "[nsys][real]") {
  SKIP_WITHOUT_NSYS_TRACES();
  const fs::path file = kShared / "nsys-sqlite/cloverleaf-a100.sqlite.gz";
  REQUIRE(fs::is_regular_file(file));
  const Trace trace = load_trace(file);
  CHECK(trace.metadata.format == "nsys-sqlite");
  CHECK(trace.metadata.devices == std::vector<std::string>(4, "NVIDIA A100-SXM4-80GB"));
  // Read off the file with sqlite3: RUNTIME 3048 rows (3047 of event class 0, CUDA runtime; 1
  // of class 1, CUDA driver: cuModuleGetLoadingMode), KERNEL 1312, MEMCPY 279 (254 HtoD
  // Pageable -> Device, 25 DtoH Device -> Pageable), SYNCHRONIZATION 1312; no MEMSET or NVTX.
  REQUIRE(trace.events.size() == 5951);
  const auto kinds = kinds_of(trace);
  CHECK(n(kinds, EventKind::runtime) == 3047);
  CHECK(n(kinds, EventKind::driver) == 1);
  CHECK(n(kinds, EventKind::kernel) == 1312);
  CHECK(n(kinds, EventKind::memcpy) == 279);
  CHECK(n(kinds, EventKind::memset) == 0);
  CHECK(n(kinds, EventKind::cuda_sync) == 1312);
  CHECK(n(kinds, EventKind::user_annotation) == 0);
  std::int64_t htod = 0, dtoh = 0;
  for (const auto& e : trace.events) {
    if (e.kind != EventKind::memcpy) continue;
    htod += trace.name_of(e) == "Memcpy HtoD (Pageable -> Device)";
    dtoh += trace.name_of(e) == "Memcpy DtoH (Device -> Pageable)";
  }
  CHECK(htod == 254);
  CHECK(dtoh == 25);
  // One thread (pid = tid = 1701896, "cuda-cloverleaf" in ThreadNames and PROCESSES), stream 7.
  REQUIRE(trace.lanes.size() == 3);  // the thread, stream 7, and the sync records' (device 0, no stream)
  const TraceEvent* call = find_event(trace, EventKind::runtime, "cudaDeviceSynchronize");
  REQUIRE(call);
  CHECK(trace.lanes[call->lane].process == 1701896);
  CHECK(trace.lanes[call->lane].thread == 1701896);
  CHECK(trace.lanes[call->lane].name == "thread 1701896 (cuda-cloverleaf)");
  // Every sync record says "Event sync" (syncType 1, no event id) on a cudaDeviceSynchronize.
  CHECK(trace.report.get("cuda_sync_type_mismatch") == 1312);

  const Graph graph = build_graph(trace);
  CHECK(edges_of(graph, EdgeType::launch) == 1312 + 279);  // every GPU task has its call
  // 1312 cudaDeviceSynchronize + 68 cudaFree (implicit device syncs) + 25 blocking DtoH copies.
  CHECK(edges_of(graph, EdgeType::sync) == 1312 + 68 + 25);
  const SimulationResult result = simulate(graph);
  const ReplayReport report = make_replay_report(graph, result);
  CHECK(report.iterations.empty());  // an HPC code: no ProfilerStep
  // First GPU start 533338240 ns, last GPU end 875746050 ns.
  CHECK(report.span.measured_ns == 875746050 - 533338240);
  INFO("span: measured " << report.span.measured_ns << " ns, simulated " << report.span.simulated_ns
                         << " ns, error " << 100 * report.span.error() << "%");
  CHECK(std::abs(report.span.error()) <= 0.02);
}

TEST_CASE("nsys real: SAXPY's NVTX ranges become user annotations and its GPU span replays within 2%",
          "[nsys][real]") {
  SKIP_WITHOUT_NSYS_TRACES();
  const fs::path file = kShared / "nsys-sqlite/saxpy-mpi-a100.sqlite.gz";
  REQUIRE(fs::is_regular_file(file));
  const Trace trace = load_trace(file);
  CHECK(trace.metadata.devices == std::vector<std::string>{"NVIDIA A100-SXM4-40GB"});
  // Read off the file with sqlite3: RUNTIME 95 rows = 56 of class 0 (CUDA runtime) + 1 of class
  // 1 (driver) + 38 of class 67 (CUDABACKTRACE: second records of calls, skipped); KERNEL 5,
  // MEMCPY 15, MEMSET 0, SYNCHRONIZATION 0; NVTX_EVENTS 24 = 22 push/pop ranges + 1 domain
  // creation (75) + 1 thread name (39).
  REQUIRE(trace.events.size() == 99);
  const auto kinds = kinds_of(trace);
  CHECK(n(kinds, EventKind::runtime) == 56);
  CHECK(n(kinds, EventKind::driver) == 1);
  CHECK(n(kinds, EventKind::kernel) == 5);
  CHECK(n(kinds, EventKind::memcpy) == 15);
  CHECK(n(kinds, EventKind::cuda_sync) == 0);
  CHECK(n(kinds, EventKind::user_annotation) == 22);
  CHECK(trace.report.get("nsys_cuda_backtrace_rows") == 38);
  CHECK(trace.report.get("nvtx_other_events:75") == 1);
  CHECK(trace.report.get("nvtx_other_events:39") == 1);
  // The ranges, by name (text or a registered string of the MPI domain).
  const auto ranges = [&](std::string_view name) {
    std::int64_t count = 0;
    for (const auto& e : trace.events) count += e.kind == EventKind::user_annotation && trace.name_of(e) == name;
    return count;
  };
  CHECK(ranges("MPI_Init") == 1);
  CHECK(ranges("MPI_Send") == 10);
  CHECK(ranges("MPI_Recv") == 5);
  CHECK(ranges("saxpy") == 5);
  CHECK(ranges("MPI_Finalize") == 1);
  const TraceEvent* saxpy = find_event(trace, EventKind::user_annotation, "saxpy");
  REQUIRE(saxpy);
  CHECK(saxpy->start_ns == 924881857);
  CHECK(saxpy->end_ns() == 924940911);
  CHECK(trace.lanes[saxpy->lane].process == 1230493);
  CHECK(trace.lanes[saxpy->lane].thread == 1230493);
  CHECK(trace.lanes[saxpy->lane].name == "thread 1230493 (MPI Rank 0)");
  const TraceEvent* launch = find_event(trace, EventKind::runtime, "cudaLaunchKernel");
  REQUIRE(launch);
  CHECK(launch->start_ns == 924890173);  // the CUPTI row; its backtrace copy starts at 924889832
  CHECK(launch->correlation == 140);
  CHECK(launch->lane == saxpy->lane);

  const Graph graph = build_graph(trace);
  // Each saxpy kernel was launched inside an NVTX "saxpy" range: that range is its operator.
  std::int64_t kernels = 0;
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    if (graph.task(t).kind != TaskKind::kernel) continue;
    ++kernels;
    CHECK(graph.string(graph.task(t).op_name) == "saxpy");
  }
  CHECK(kernels == 5);
  CHECK(edges_of(graph, EdgeType::launch) == 5 + 15);
  const SimulationResult result = simulate(graph);
  const ReplayReport report = make_replay_report(graph, result);
  CHECK(report.iterations.empty());
  CHECK(report.span.measured_ns == 1985185585 - 887857742);
  INFO("span: measured " << report.span.measured_ns << " ns, simulated " << report.span.simulated_ns
                         << " ns, error " << 100 * report.span.error() << "%");
  CHECK(std::abs(report.span.error()) <= 0.02);
}

TEST_CASE("nsys: launch configurations and the GPU's SM resources feed the occupancy model", "[nsys][occupancy]") {
  // An A100: 108 SMs of 64 warps, 32 blocks, 64K registers, 164 KiB of shared memory. `big`:
  // 3456 blocks of 256 threads x 32 registers, 8 per SM: 4 waves of 250 us; launched at 1 us,
  // it starts at 11. `side` (4 blocks), launched at 100 us onto idle stream 20, gets in at 811,
  // 0.8 of the way through `big`.
  const std::string sql = R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT, smCount INTEGER, computeMajor INTEGER,
  computeMinor INTEGER, threadsPerWarp INTEGER, maxWarpsPerSm INTEGER, maxBlocksPerSm INTEGER,
  maxRegistersPerSm INTEGER, maxRegistersPerBlock INTEGER, maxShmemPerSm INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER,
  gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER,
  registersPerThread INTEGER, staticSharedMemory INTEGER, dynamicSharedMemory INTEGER, sharedMemoryExecuted INTEGER);
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'big'), (3, 'side');
INSERT INTO TARGET_INFO_GPU VALUES (0, 'A100-SXM4-40GB', 108, 8, 0, 32, 64, 32, 65536, 65536, 167936);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1000, 3000, 0, T, 1, 1, 0, NULL), (100000, 102000, 0, T, 2, 1, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (11000, 1011000, 0, 1, 7, 1, P, 2, 2, 1728, 2, 1, 128, 2, 1, 32, 1024, 512, 32768),
  (811000, 821000, 0, 1, 20, 2, P, 3, 3, 4, 1, 1, 128, 1, 1, 16, 0, 0, 8192);
)sql";
  TempDir dir;
  const fs::path file = dir / "held.sqlite";
  write_db(file, with_ids(sql));
  const Trace trace = load_trace(file);
  REQUIRE(trace.metadata.gpus.size() == 1);
  const GpuResources& gpu = trace.metadata.gpus.front();
  CHECK(gpu.device == 0);
  CHECK(gpu.sm_count == 108);
  CHECK(gpu.compute_major == 8);
  CHECK(gpu.warp_size == 32);
  CHECK(gpu.max_threads_per_sm == 2048);
  CHECK(gpu.max_blocks_per_sm == 32);
  CHECK(gpu.registers_per_sm == 65536);
  CHECK(gpu.registers_per_block == 65536);
  CHECK(gpu.shared_memory_per_sm == 167936);
  const TraceEvent* big = find_event(trace, EventKind::kernel, "big");
  REQUIRE(big);
  REQUIRE(big->launch >= 0);
  const LaunchConfig& config = trace.launches[static_cast<std::size_t>(big->launch)];
  CHECK(config.blocks == 3456);
  CHECK(config.threads_per_block == 256);
  CHECK(config.registers_per_thread == 32);
  CHECK(config.shared_memory_bytes == 1536);
  CHECK(config.shared_memory_config_bytes == 32768);

  const Graph graph = build_graph(trace);
  const TaskId big_task = find_task(graph, TaskKind::kernel, 1), side = find_task(graph, TaskKind::kernel, 2);
  CHECK(graph.holds(side).sm_held_by == big_task);
  CHECK(graph.holds(side).sm_let_in == Approx(0.8));
  CHECK(graph.report().get("gpu_holds_by_occupancy") == 1);
  CHECK(simulate(graph).start_ns[side] == graph.task(side).recorded_start_ns);
}

TEST_CASE("nsys: PyTorch's emit_nvtx messages name an operator, its sequence number and sizes", "[nsys][ingest]") {
  using nsys::parse_operator_range;
  // PyTorch 2.x with record_shapes (torch/csrc/profiler/util.cpp, getNvtxStr).
  auto op = parse_operator_range("aten::addmm, seq = 7, op_id = 21, sizes = [[256], [8, 512], [512, 256], [], []], "
                                 "input_op_ids = [(20, 0)]");
  REQUIRE(op);
  CHECK(op->name == "aten::addmm");
  CHECK(op->sequence_number == 7);
  CHECK(op->has_sizes);
  CHECK_FALSE(op->sizes_malformed);
  CHECK(op->ranks == std::vector<std::uint32_t>{1, 2, 2, 0, 0});
  CHECK(op->dims == std::vector<std::int64_t>{256, 8, 512, 512, 256});
  // A backward node; PyTorch 1.x's backward ranges; an operator without a sequence number.
  op = parse_operator_range("AddmmBackward0, seq = 7, op_id = 31");
  REQUIRE(op);
  CHECK(op->name == "AddmmBackward0");
  CHECK(op->sequence_number == 7);
  CHECK_FALSE(op->has_sizes);
  op = parse_operator_range("CudnnConvolutionBackward, stashed seq = 3");
  REQUIRE(op);
  CHECK(op->name == "CudnnConvolutionBackward");
  CHECK(op->sequence_number == 3);
  op = parse_operator_range("aten::empty, op_id = 5, sizes = [[], [], []]");
  REQUIRE(op);
  CHECK(op->name == "aten::empty");
  CHECK_FALSE(op->sequence_number);
  CHECK(op->ranks == std::vector<std::uint32_t>{0, 0, 0});
  op = parse_operator_range("aten::empty");  // no field: an operator by its namespace alone
  REQUIRE(op);
  CHECK(op->name == "aten::empty");
  // Sizes that are not lists of non-negative integers are dropped, the operator kept.
  for (const char* bad : {"aten::mul, seq = 9, sizes = [[8, x]]", "aten::mul, sizes = [[8, -1]]",
                          "aten::mul, sizes = [[8, 3]", "aten::mul, sizes = [8, 3]"}) {
    op = parse_operator_range(bad);
    REQUIRE(op);
    CHECK(op->name == "aten::mul");
    CHECK(op->sizes_malformed);
    CHECK(op->dims.empty());
  }
  // A program's own ranges are no operators.
  for (const char* own : {"forward", "step 3", "Optimizer.step#Adam.step", "[DALI][Executor] RunGPU", "aten", ""})
    CHECK_FALSE(parse_operator_range(own));
}

namespace {

// An emit_nvtx run on an A100: the main thread (tid 101) runs step 0's forward pass, a linear
// layer (addmm: a GEMM) and a layer_norm, each inside its operator ranges, and the optimizer
// step; the autograd thread (tid 102) runs the layer_norm's and the addmm's backward nodes.
std::string emit_nvtx_export() {
  const std::string t2 = std::to_string(kPid | 102);
  std::string sql = kSchema + R"sql(
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'ampere_sgemm_128x64_tn'),
  (3, 'void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, const float *)'),
  (4, 'void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float, float>(const float *)'),
  (5, 'void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)');
INSERT INTO TARGET_INFO_GPU VALUES (1, 0, 'NVIDIA A100-SXM4-40GB', '0000:01:00.0');
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (3000, 4000, 0, T, 10, 1, 0, NULL), (22000, 23000, 0, T, 11, 1, 0, NULL),
  (42000, 43000, 0, T2, 12, 1, 0, NULL), (52000, 53000, 0, T2, 13, 1, 0, NULL),
  (82000, 83000, 0, T, 14, 1, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (5000, 30000, 0, 1, 7, 10, P, 2, 2, 1), (31000, 35000, 0, 1, 7, 11, P, 3, 3, 1),
  (44000, 48000, 0, 1, 7, 12, P, 4, 4, 1), (54000, 74000, 0, 1, 7, 13, P, 2, 2, 1),
  (84000, 86000, 0, 1, 7, 14, P, 5, 5, 1);
INSERT INTO NVTX_EVENTS VALUES
  (0, 100000, 59, NULL, 'step 0', T, NULL, NULL, NULL),
  (1000, 20000, 59, NULL, 'aten::linear, seq = 7, op_id = 20, sizes = [[8, 512], [256, 512], [256]]', T, NULL, NULL, NULL),
  (2000, 19000, 59, NULL, 'aten::addmm, seq = 7, op_id = 21, sizes = [[256], [8, 512], [512, 256], [], []]', T, NULL, NULL, NULL),
  (20000, 30000, 59, NULL, 'aten::layer_norm, seq = 8, op_id = 22, sizes = [[8, 256], [], [256], [256], [], []]', T, NULL, NULL, NULL),
  (21000, 29000, 59, NULL, 'aten::native_layer_norm, seq = 8, op_id = 23, sizes = [[8, 256], [], [256], [256], []]', T, NULL, NULL, NULL),
  (30500, 30600, 59, NULL, 'aten::empty', T, NULL, NULL, NULL),
  (31000, 32000, 59, NULL, 'aten::mul, seq = 9, op_id = 24, sizes = [[8, x]]', T, NULL, NULL, NULL),
  (40000, 50000, 59, NULL, 'NativeLayerNormBackward0, seq = 8, op_id = 30', T2, NULL, NULL, NULL),
  (41000, 49000, 59, NULL, 'aten::native_layer_norm_backward, op_id = 32', T2, NULL, NULL, NULL),
  (50000, 60000, 59, NULL, 'AddmmBackward0, seq = 7, op_id = 31', T2, NULL, NULL, NULL),
  (80000, 90000, 59, NULL, 'Optimizer.step#SGD.step', T, NULL, NULL, NULL);
)sql";
  for (std::size_t pos = 0; (pos = sql.find(", T2,", pos)) != std::string::npos;) sql.replace(pos + 2, 2, t2);
  return sql;
}

}  // namespace

TEST_CASE("nsys: an emit_nvtx run's operator ranges are operators, as a Kineto trace's", "[nsys][graph]") {
  TempDir dir;
  const fs::path file = dir / "emit_nvtx.sqlite";
  write_db(file, with_ids(emit_nvtx_export()));
  const Trace trace = load_trace(file);
  const auto kinds = kinds_of(trace);
  CHECK(n(kinds, EventKind::cpu_op) == 9);
  CHECK(n(kinds, EventKind::user_annotation) == 2);  // step 0, Optimizer.step#SGD.step
  CHECK(trace.report.get("nvtx_operator_ranges") == 9);
  CHECK(trace.report.get("nvtx_malformed_sizes") == 1);  // aten::mul's
  const TraceEvent* addmm = find_event(trace, EventKind::cpu_op, "aten::addmm");
  REQUIRE(addmm);
  CHECK(addmm->sequence_number == 7);
  CHECK(find_event(trace, EventKind::cpu_op, "AddmmBackward0")->sequence_number == 7);
  CHECK(find_event(trace, EventKind::cpu_op, "aten::empty")->sequence_number == kNone);
  // Shapes of the four operators with sizes (not aten::empty's bare name, not aten::mul's).
  REQUIRE(trace.shapes.size() == 4);
  CHECK(trace.name_of(trace.events[static_cast<std::size_t>(trace.shapes.key(1))]) == "aten::addmm");
  REQUIRE(trace.shapes.operand_count(1) == 5);
  CHECK(std::vector<std::int64_t>(trace.shapes.operand(1, 2).dims.begin(), trace.shapes.operand(1, 2).dims.end()) ==
        std::vector<std::int64_t>{512, 256});
  CHECK(trace.shapes.operand(1, 2).type.empty());  // emit_nvtx writes no types

  const Graph graph = build_graph(trace);
  const TaskId gemm = find_task(graph, TaskKind::kernel, 10);
  const TaskId norm = find_task(graph, TaskKind::kernel, 11);
  const TaskId norm_grad = find_task(graph, TaskKind::kernel, 12);
  REQUIRE((gemm != kNoTask && norm != kNoTask && norm_grad != kNoTask));
  CHECK(graph.string(graph.task(gemm).op_name) == "aten::addmm");
  CHECK(graph.task(gemm).phase == Phase::forward);  // inside operators autograd numbered
  CHECK(graph.task(norm).phase == Phase::forward);
  CHECK(graph.task(norm_grad).phase == Phase::backward);
  CHECK(graph.task(find_task(graph, TaskKind::kernel, 14)).phase == Phase::update);
  // Operators add no layer: the path is the program's own ranges (step 0). The autograd thread has
  // none; its kernel takes its forward operator's layer by their shared sequence number (8).
  CHECK(graph.string(graph.task(gemm).layer) == "step 0");
  CHECK(graph.string(graph.task(norm).layer) == "step 0");
  CHECK(graph.string(graph.task(norm_grad).layer) == "step 0");
  CHECK(graph.report().get("layers_from_forward_ops") > 0);
  CHECK(graph.iterations().size() == 1);  // `step 0`
  REQUIRE(graph.find_operator(graph.task(gemm).op_event));  // its shapes, for the GPU model
}

TEST_CASE("nsys: amp on an emit_nvtx run keeps autocast's fp32 operators and casts the GEMM's weight", "[nsys][scenario]") {
  TempDir dir;
  const fs::path file = dir / "emit_nvtx.sqlite";
  write_db(file, with_ids(emit_nvtx_export()));
  Graph graph = build_graph(load_trace(file));
  const TaskId gemm = find_task(graph, TaskKind::kernel, 10);
  const TaskId norm = find_task(graph, TaskKind::kernel, 11);
  const TaskId norm_grad = find_task(graph, TaskKind::kernel, 12);
  const ScenarioOutcome out = apply_scenario(graph, parse_scenario_spec("amp"));
  // layer_norm is on autocast's float32 list: its forward kernel (innermost operator
  // aten::native_layer_norm, forward) and its backward's (aten::native_layer_norm_backward) keep
  // their time; the fp32 SIMT GEMM moves to the fp16 tensor cores.
  CHECK(graph.task(norm).duration_ns == 4000);
  CHECK(graph.task(norm_grad).duration_ns == 4000);
  CHECK(graph.task(gemm).duration_ns < 25000 / 8);
  const std::string notes = test::all_notes(out);
  CHECK_THAT(notes, Catch::Contains("native_layer_norm 1") && Catch::Contains("native_layer_norm_backward 1"));
  CHECK_THAT(notes, Catch::Contains("1 fp16 weight casts inserted"));  // the addmm's GEMM, in the forward pass
}
