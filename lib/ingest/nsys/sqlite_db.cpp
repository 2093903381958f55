// The SQLite layer of the Nsight Systems importer (see sqlite_db.hpp).
#include "ingest/nsys/sqlite_db.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include <functional>

#include "daydream/error.hpp"

namespace daydream::nsys {
namespace {

constexpr std::uint64_t kStepsPerByte = 1000;
constexpr int kStepsPerCallback = 10'000;  // SQLite calls the progress handler this often

}  // namespace

// --- Statement ---------------------------------------------------------------------------------

Statement::Statement(const Database& db, const std::string& sql, std::string what) : db_(db), what_(std::move(what)) {
  const int rc = sqlite3_prepare_v2(db.handle(), sql.c_str(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    db_.fail(what_, rc);
  }
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail(what_, rc);
}

int Statement::type(int column) const { return sqlite3_column_type(stmt_, column); }

std::int64_t Statement::int64(int column) const {
  return static_cast<std::int64_t>(sqlite3_column_int64(stmt_, column));
}

std::optional<std::string_view> Statement::text(int column) const {
  if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
  const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  const int size = sqlite3_column_bytes(stmt_, column);
  if (data == nullptr) return std::string_view{};
  return std::string_view(data, static_cast<std::size_t>(size));
}

// --- Database ----------------------------------------------------------------------------------

Database::Database(const std::filesystem::path& path, std::string display_name) : file_(std::move(display_name)) {
  const int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(file_, Error::kNoEvent, "", "cannot open as SQLite: " + message);
  }
  // Reading an export is a few passes over its rows: ~1000 SQLite steps per byte of file (at
  // least 10^8) is far more than any real query needs, and ends a runaway one in seconds.
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  budget_steps_ = std::max<std::uint64_t>(100'000'000, ec ? 0 : bytes * kStepsPerByte);
  sqlite3_progress_handler(db_, kStepsPerCallback, &Database::spend, this);
  // Reading the schema is the first access to the file: a corrupt header or schema fails here.
  try {
    Statement list(*this, "SELECT name FROM sqlite_master WHERE type = 'table'", "sqlite_master");
    while (list.step()) {
      if (auto name = list.text(0)) tables_.emplace(*name);
    }
  } catch (...) {
    sqlite3_close(db_);  // the destructor does not run when the constructor throws
    db_ = nullptr;
    throw;
  }
}

Database::~Database() { sqlite3_close(db_); }

int Database::spend(void* self) {
  auto* db = static_cast<Database*>(self);
  db->spent_steps_ += kStepsPerCallback;
  return db->spent_steps_ > db->budget_steps_ ? 1 : 0;
}

bool Database::has_table(std::string_view table) const { return tables_.find(table) != tables_.end(); }

std::set<std::string, std::less<>> Database::columns(std::string_view table) const {
  std::set<std::string, std::less<>> names;
  if (!has_table(table)) return names;
  Statement info(*this, fmt::format("PRAGMA table_info(\"{}\")", table), std::string(table));
  while (info.step()) {
    if (auto name = info.text(1)) names.emplace(*name);
  }
  return names;
}

void Database::fail(const std::string& what, int code) const {
  if (code == SQLITE_INTERRUPT)
    throw Error(file_, Error::kNoEvent, what,
                fmt::format("reading it took more than {} SQLite steps, the budget for a file of this size: "
                            "not an Nsight Systems export?",
                            budget_steps_));
  std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(code);
  if (message.empty()) message = sqlite3_errstr(code);
  throw Error(file_, Error::kNoEvent, what,
              fmt::format("SQLite error {} ({}): corrupt or truncated SQLite file?", code, message));
}

// --- TemporaryFile -----------------------------------------------------------------------------

namespace {

// Creates the temporary file and returns its descriptor; `path` gets its name.
int create_temporary(std::filesystem::path& path, const std::string& display_name) {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec) throw Error(display_name, Error::kNoEvent, "", "no temporary directory for the SQLite copy: " + ec.message());
  std::string pattern = (dir / "daydream-nsys-XXXXXX.sqlite").string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = mkstemps(name.data(), 7);  // 7 = strlen(".sqlite")
  if (fd < 0)
    throw Error(display_name, Error::kNoEvent, "",
                fmt::format("cannot create a temporary file in {}: {}", dir.string(), std::strerror(errno)));
  path = name.data();
  return fd;
}

// Writes all of `data`; false (errno set) on failure.
bool write_all(int fd, const char* data, std::size_t size) {
  for (std::size_t written = 0; written < size;) {
    const ssize_t n = ::write(fd, data + written, size - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

TemporaryFile::TemporaryFile(std::string_view contents, const std::string& display_name)
    : TemporaryFile([&](int fd) { return write_all(fd, contents.data(), contents.size()); }, display_name) {}

TemporaryFile::TemporaryFile(InputStream& in, const std::string& display_name)
    : TemporaryFile(
          [&](int fd) {
            std::vector<char> block(std::size_t{4} << 20);
            for (std::size_t n; (n = in.read(block.data(), block.size())) > 0;)
              if (!write_all(fd, block.data(), n)) return false;
            return true;
          },
          display_name) {}

TemporaryFile::TemporaryFile(const std::function<bool(int fd)>& fill, const std::string& display_name) {
  const int fd = create_temporary(path_, display_name);
  std::error_code ec;
  bool written = false;
  try {
    written = fill(fd);
  } catch (...) {
    ::close(fd);
    std::filesystem::remove(path_, ec);
    throw;
  }
  const std::string reason = std::strerror(errno);
  if (::close(fd) != 0 || !written) {
    std::filesystem::remove(path_, ec);
    throw Error(display_name, Error::kNoEvent, "",
                fmt::format("cannot write the temporary copy {}: {}", path_.string(),
                            written ? std::strerror(errno) : reason));
  }
}

TemporaryFile::~TemporaryFile() {
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

}  // namespace daydream::nsys
