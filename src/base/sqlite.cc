#include "base/sqlite.h"

#include <sqlite3.h>

#include <stdexcept>

#include "base/error.h"

namespace steptp::base {

sqlite3* open_sqlite(const std::string& path, const std::string& what) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    std::string m = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw base::Error(base::ErrorKind::Failed, "cannot open " + what + " " + path + ": " + m);
  }
  sqlite3_busy_timeout(db, 600000);
  try {
    sqlite_exec(db, "PRAGMA journal_mode=WAL", what);
  } catch (...) {
    sqlite3_close(db);
    throw;
  }
  return db;
}

void sqlite_exec(sqlite3* db, const std::string& sql, const std::string& what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "?";
    sqlite3_free(err);
    throw base::Error(base::ErrorKind::Failed, what + ": " + m);
  }
}

}  // namespace steptp::base
