// The observation store: what a run observes of the world outside its inputs — timings,
// verification verdicts, a model server's replies (`optimize`) — is recorded once in SQLite, not
// re-drawn, so every consumer (the tuner, the dataset, optimize) is a deterministic function of
// its inputs and the store. A run, a resumed run (kill -9 + rerun) or a run with more workers
// takes what it finds and observes only the missing entries. ("Facts", elsewhere, are static
// analysis of a program: ir/analysis/program_facts.h.) On disk it is still `measurements.sqlite`
// with a `measurements` table, so stores written before read unchanged.
//
// Keys are content hashes (observation_key) of the machine fingerprint (search/tune/machine.h), the
// measured programs' texts and the measurement options: stores copied between machines,
// compilers or thread counts never answer for each other. Failures (compile error, crash,
// timeout) are stored too, so a rerun drops the same candidates.
//
// Beside the observations, the store keeps the programs they were taken on where a consumer
// needs them back: the tuner keeps each measured candidate with its measured log2 speedup over
// the root (`candidates` table, search/tune/training_set.h reads it to pre-train a cost model),
// because the observation keys are hashes and do not give the programs back. A store written
// before the table existed opens as one without candidates.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

struct sqlite3;

namespace steptp::tune {

class ObservationStore {
 public:
  explicit ObservationStore(const std::string& path);  // throws base::Error (Failed)
  ~ObservationStore();
  ObservationStore(const ObservationStore&) = delete;
  ObservationStore& operator=(const ObservationStore&) = delete;

  std::optional<nlohmann::json> get(const std::string& key);
  // One transaction; an entry that is already stored (another worker was first) is kept.
  void put_all(const std::vector<std::pair<std::string, nlohmann::json>>& entries);
  int64_t size();
  // Every (key, value), in key order (to merge stores: put_all into another).
  std::vector<std::pair<std::string, nlohmann::json>> entries();

  // The kept candidates (see above): as put_all and entries, in their own table.
  void put_candidates(const std::vector<std::pair<std::string, nlohmann::json>>& entries);
  std::vector<std::pair<std::string, nlohmann::json>> candidates();

 private:
  void put_into(const char* table, const std::vector<std::pair<std::string, nlohmann::json>>& entries);
  std::vector<std::pair<std::string, nlohmann::json>> entries_of(const char* table);

  sqlite3* db_ = nullptr;
};

// Content hash of the parts (each NUL-terminated, so no two lists collide).
std::string observation_key(const std::vector<std::string>& parts);

}  // namespace steptp::tune
