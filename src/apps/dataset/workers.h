// Forked worker processes for generate's two parallel phases (search, measurement). Workers
// share no memory with the parent but what the caller maps; their results go to SQLite stores,
// so a worker that crashes loses only its unfinished work, which the caller redoes serially.
#pragma once

#include <functional>
#include <vector>

namespace steptp::dataset {

// Runs worker(k) for k in [0, jobs): in this process when jobs == 1, else in `jobs` forked
// children. Returns each worker's exit code (its return value; 1 if it threw; -1 if it died).
std::vector<int> run_workers(int jobs, const std::function<int(int)>& worker);

}  // namespace steptp::dataset
