#pragma once
// A thin RAII layer over the SQLite C API for the Nsight Systems importer: a read-only
// connection, prepared statements, typed column access. Every SQLite failure becomes a
// daydream::Error naming the file and the table being read.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "ingest/input_stream.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace daydream::nsys {

class Database;

/// One prepared SELECT. Columns are read by index, as in the SQL text.
class Statement {
 public:
  Statement(const Database& db, const std::string& sql, std::string what);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  /// Advances to the next row; false at the end. Throws Error on any SQLite failure.
  bool step();
  /// SQLite's storage class of `column` in the current row: SQLITE_INTEGER, SQLITE_FLOAT,
  /// SQLITE_TEXT, SQLITE_BLOB or SQLITE_NULL.
  int type(int column) const;
  std::int64_t int64(int column) const;
  /// The text in `column`, or nullopt for NULL; the view lives until the next step().
  std::optional<std::string_view> text(int column) const;

 private:
  const Database& db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string what_;  // the table being read, for messages
};

/// A read-only connection to one SQLite file.
class Database {
 public:
  /// Opens `path` read-only; messages name `display_name` (the trace file the user gave).
  Database(const std::filesystem::path& path, std::string display_name);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  bool has_table(std::string_view table) const;
  /// The column names of `table` (empty when the table does not exist).
  std::set<std::string, std::less<>> columns(std::string_view table) const;

  const std::string& file() const { return file_; }
  sqlite3* handle() const { return db_; }
  /// Throws Error(file, -, what, "SQLite error: <message>").
  [[noreturn]] void fail(const std::string& what, int code) const;

 private:
  /// SQLite's progress callback: counts virtual-machine steps against the budget; a nonzero
  /// return interrupts the query (SQLITE_INTERRUPT).
  static int spend(void* self);

  sqlite3* db_ = nullptr;
  std::string file_;
  std::set<std::string, std::less<>> tables_;  // real tables only: a view could compute forever
  std::uint64_t budget_steps_ = 0;              // for the whole file: every query together
  std::uint64_t spent_steps_ = 0;
};

/// A copy of in-memory bytes in a fresh file under the system temporary directory, removed when
/// this object is destroyed (also when reading fails with an exception).
class TemporaryFile {
 public:
  TemporaryFile(std::string_view contents, const std::string& display_name);
  /// The decoded bytes of `in`, written as they come.
  TemporaryFile(InputStream& in, const std::string& display_name);
  ~TemporaryFile();
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  /// Creates the file and has `fill` write it (false: a write failed, errno says why); removes
  /// it again when that fails or throws.
  TemporaryFile(const std::function<bool(int fd)>& fill, const std::string& display_name);
  std::filesystem::path path_;
};

}  // namespace daydream::nsys
