// Deterministic sharding of work over ranks (docs/mpi.md). Each root (and, for measurement,
// each root's group of kept records) gets a cost estimate computed from its content only, and
// the items go to ranks by longest-processing-time-first: every rank computes the same
// assignment, and the ranks' estimated loads differ by at most the largest item's cost.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/leir/ast.h"

namespace steptp::dataset {

// Estimated search cost of a root (arbitrary units, deterministic, integer): the search
// verifies every candidate on the interpreter, so a candidate costs about the statements the
// program executes (analysis::program_facts: iterations summed over statements) plus a fixed
// part (apply, analysis, the verifier's set-up); the candidates per state grow with the
// program's nests and statements. Hence (nests + statements) x (executed statements + 4096).
uint64_t root_cost(const leir::Program& p);

// Estimated cost of a root under --trajectories tune (the tuned profiles), in milliseconds of one
// worker: the tuner compiles, verifies and times `trials` candidates against the root, in
// sessions of at least kMinRepeats runs a side (up to kSessions when noisy), so each trial costs a
// fixed part (compiling, verifying, the timing floor) and a part proportional to the root's naive
// one-core time `naive_ms` (the root sizing's measurement; when the run did not size its roots,
// 0: the program's executed statement instances at 1 ns each, the bench size class's estimate).
// The two constants are fitted to a tuned run's own per-root tuning wall times
// (bench/mpi_projection.py --fit; docs/mpi.md). The kept records' measurement after the search is
// sharded on its own, by missing comparisons (apps/dataset/measurement.h).
uint64_t tuned_root_cost(const leir::Program& p, double naive_ms, int trials);

// owner[i] in [0, parts) for items of the given costs: items in decreasing cost (ties: lower
// index first) each go to the least loaded part (ties: lower part).
std::vector<int> shard_by_cost(const std::vector<uint64_t>& costs, int parts);
// The same assignment as each part's item indices, in the order they were assigned (decreasing
// cost): a part that works through its list takes its longest item first.
std::vector<std::vector<size_t>> shard_lists_by_cost(const std::vector<uint64_t>& costs, int parts);

}  // namespace steptp::dataset
