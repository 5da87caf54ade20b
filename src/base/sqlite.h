// Opening the project's SQLite stores (the tuner's measurement store, generate's checkpoint) the
// one way: WAL journal so readers never block the writer, and a 10-minute busy timeout because
// several processes (MPI ranks, worker processes, serve's jobs) share one file and a writer may
// hold it for a whole batch.
#pragma once

#include <string>

struct sqlite3;

namespace steptp::base {

// Opens (creating when absent) the database at `path`. `what` names the store in errors
// ("cannot open <what> <path>: <sqlite's reason>"). Throws base::Error (Failed); the caller owns
// the handle (sqlite3_close).
sqlite3* open_sqlite(const std::string& path, const std::string& what);

// Runs `sql` (statements without results); throws base::Error (Failed) "<what>: <sqlite's reason>".
void sqlite_exec(sqlite3* db, const std::string& sql, const std::string& what);

}  // namespace steptp::base
