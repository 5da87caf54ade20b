// SQLite measurement store.
#include "search/tune/database.h"

#include <sqlite3.h>

#include <stdexcept>
#include <string>

#include "base/error.h"
#include "lower/cpu/compiler.h"
#include "base/sqlite.h"

namespace steptp::tune {
namespace {

using nlohmann::json;

void exec(sqlite3* db, const char* sql) { base::sqlite_exec(db, sql, "measurement store"); }

}  // namespace

// ---- store ----
ObservationStore::ObservationStore(const std::string& path) {
  db_ = base::open_sqlite(path, "measurement store");
  exec(db_, "CREATE TABLE IF NOT EXISTS measurements(key TEXT PRIMARY KEY, payload TEXT)");
  exec(db_, "CREATE TABLE IF NOT EXISTS candidates(key TEXT PRIMARY KEY, payload TEXT)");
}

ObservationStore::~ObservationStore() { sqlite3_close(db_); }

std::optional<json> ObservationStore::get(const std::string& key) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, "SELECT payload FROM measurements WHERE key=?", -1, &st, nullptr);
  sqlite3_bind_text(st, 1, key.c_str(), -1, SQLITE_TRANSIENT);
  std::optional<json> v;
  if (sqlite3_step(st) == SQLITE_ROW) v = json::parse(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  return v;
}

void ObservationStore::put_all(const std::vector<std::pair<std::string, json>>& entries) {
  put_into("measurements", entries);
}

void ObservationStore::put_candidates(const std::vector<std::pair<std::string, json>>& entries) {
  put_into("candidates", entries);
}

void ObservationStore::put_into(const char* table, const std::vector<std::pair<std::string, json>>& entries) {
  if (entries.empty()) return;
  exec(db_, "BEGIN IMMEDIATE");
  sqlite3_stmt* st = nullptr;
  const std::string sql = std::string("INSERT OR IGNORE INTO ") + table + "(key, payload) VALUES(?, ?)";
  sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr);
  for (const auto& [k, v] : entries) {
    std::string p = v.dump();
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, k.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, p.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE) {
      std::string m = sqlite3_errmsg(db_);
      sqlite3_finalize(st);
      exec(db_, "ROLLBACK");
      throw base::Error(base::ErrorKind::Failed, "measurement store write: " + m);
    }
  }
  sqlite3_finalize(st);
  exec(db_, "COMMIT");
}

int64_t ObservationStore::size() {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, "SELECT COUNT(*) FROM measurements", -1, &st, nullptr);
  int64_t n = 0;
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

std::vector<std::pair<std::string, json>> ObservationStore::entries() { return entries_of("measurements"); }

std::vector<std::pair<std::string, json>> ObservationStore::candidates() { return entries_of("candidates"); }

std::vector<std::pair<std::string, json>> ObservationStore::entries_of(const char* table) {
  sqlite3_stmt* st = nullptr;
  const std::string sql = std::string("SELECT key, payload FROM ") + table + " ORDER BY key";
  sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr);
  std::vector<std::pair<std::string, json>> all;
  while (sqlite3_step(st) == SQLITE_ROW)
    all.push_back({reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                   json::parse(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)))});
  sqlite3_finalize(st);
  return all;
}

std::string observation_key(const std::vector<std::string>& parts) {
  std::string all;
  for (const auto& p : parts) all += p + '\0';
  return backend::cpu::content_hash(all);
}

}  // namespace steptp::tune
