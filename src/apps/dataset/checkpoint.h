// The checkpoint of `steptp generate` (OUT/checkpoint.sqlite, and OUT/ranks/rank-R/ per MPI
// rank): each finished root's raw records, so a killed run resumes where it stopped. A
// checkpoint belongs to one set of options (its fingerprint); one of other options is emptied.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <sqlite3.h>

#include "apps/dataset/dataset.h"

namespace steptp::dataset {

class CheckpointDb {
 public:
  explicit CheckpointDb(const std::string& path);  // throws base::Error (Failed)
  ~CheckpointDb();
  CheckpointDb(const CheckpointDb&) = delete;
  CheckpointDb& operator=(const CheckpointDb&) = delete;

  void exec(const std::string& sql);
  std::string get_meta(const std::string& k);
  // Runs `sql` with (idx if >= 0, a, b) bound in that order.
  void put(const char* sql, int idx, const std::string& a, const std::string& b);
  std::map<int, std::string> done();  // root index -> payload
  sqlite3* handle() { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

// Indices of the finished roots of a checkpoint; a checkpoint of other options is emptied.
std::vector<int> open_checkpoint(const std::string& path, const std::string& fingerprint);

// The rank folders no rank of this run owns (OUT/ranks/rank-R with R >= ranks; every one when
// ranks is 1: an earlier run had more ranks, or an MPI run is resumed by one process).
std::vector<std::filesystem::path> unowned_rank_dirs(const std::filesystem::path& out, int ranks);

// Rank 0 takes into the merged checkpoint the finished roots of rank folders no rank of this
// run owns (OUT/ranks/rank-R with R >= ranks: an earlier run had more ranks, or an MPI run is
// resumed by one process), where it sees them (a filesystem shared by the nodes). A folder of
// other options is left alone.
void adopt_rank_checkpoints(const std::filesystem::path& out, int ranks, const std::string& merged_db,
                            const std::string& fingerprint, const std::vector<Root>& roots);

}  // namespace steptp::dataset
