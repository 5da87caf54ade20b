#include "apps/dataset/checkpoint.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "base/error.h"
#include "base/sqlite.h"

namespace fs = std::filesystem;

namespace steptp::dataset {

CheckpointDb::CheckpointDb(const std::string& path) {
  db_ = base::open_sqlite(path, "checkpoint");
  exec("CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT)");
  exec("CREATE TABLE IF NOT EXISTS roots(idx INTEGER PRIMARY KEY, key TEXT, payload TEXT)");
}

CheckpointDb::~CheckpointDb() { sqlite3_close(db_); }

void CheckpointDb::exec(const std::string& sql) { base::sqlite_exec(db_, sql, "checkpoint"); }

std::string CheckpointDb::get_meta(const std::string& k) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, "SELECT v FROM meta WHERE k=?", -1, &st, nullptr);
  sqlite3_bind_text(st, 1, k.c_str(), -1, SQLITE_TRANSIENT);
  std::string v;
  if (sqlite3_step(st) == SQLITE_ROW) v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  return v;
}

void CheckpointDb::put(const char* sql, int idx, const std::string& a, const std::string& b) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, sql, -1, &st, nullptr);
  int c = 1;
  if (idx >= 0) sqlite3_bind_int(st, c++, idx);
  sqlite3_bind_text(st, c++, a.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, c++, b.c_str(), -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    throw base::Error(base::ErrorKind::Failed, std::string("checkpoint write: ") + sqlite3_errmsg(db_));
}

std::map<int, std::string> CheckpointDb::done() {
  std::map<int, std::string> m;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, "SELECT idx, payload FROM roots", -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW)
    m[sqlite3_column_int(st, 0)] = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
  sqlite3_finalize(st);
  return m;
}

std::vector<int> open_checkpoint(const std::string& path, const std::string& fingerprint) {
  CheckpointDb db(path);
  if (db.get_meta("fingerprint") != fingerprint) {
    db.exec("DELETE FROM roots");
    db.put("INSERT OR REPLACE INTO meta(k, v) VALUES(?, ?)", -1, "fingerprint", fingerprint);
  }
  std::vector<int> idx;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db.handle(), "SELECT idx FROM roots ORDER BY idx", -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) idx.push_back(sqlite3_column_int(st, 0));
  sqlite3_finalize(st);
  return idx;
}

std::vector<fs::path> unowned_rank_dirs(const fs::path& out, int ranks) {
  std::vector<fs::path> dirs;
  std::error_code ec;
  if (!fs::is_directory(out / "ranks", ec)) return dirs;
  for (const auto& e : fs::directory_iterator(out / "ranks", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("rank-", 0) != 0 || name.size() == 5 ||
        name.find_first_not_of("0123456789", 5) != std::string::npos)
      continue;
    if (ranks > 1 && std::atoi(name.c_str() + 5) < ranks) continue;
    dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());  // directory order is the filesystem's
  return dirs;
}

void adopt_rank_checkpoints(const fs::path& out, int ranks, const std::string& merged_db,
                            const std::string& fp, const std::vector<Root>& roots) {
  std::vector<std::pair<int, std::string>> rows;
  for (const fs::path& dir : unowned_rank_dirs(out, ranks)) {
    if (!fs::exists(dir / "checkpoint.sqlite")) continue;
    CheckpointDb db((dir / "checkpoint.sqlite").string());
    if (db.get_meta("fingerprint") != fp) continue;
    for (auto& [i, payload] : db.done())
      if (i >= 0 && i < int(roots.size())) rows.push_back({i, std::move(payload)});
  }
  if (rows.empty()) return;
  CheckpointDb db(merged_db);
  db.exec("BEGIN IMMEDIATE");
  for (const auto& [i, payload] : rows)
    db.put("INSERT OR IGNORE INTO roots(idx, key, payload) VALUES(?, ?, ?)", i, roots[size_t(i)].key, payload);
  db.exec("COMMIT");
}

}  // namespace steptp::dataset
