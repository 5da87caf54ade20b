// Seeded choice of sites and parameters. Same program + strategy + seed ⇒ same candidates, byte
// for byte, on every machine (interp::Rng, no std distributions, no hash-order dependence).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/hash.h"
#include "ir/leir/ast.h"
#include "transform/schedule_state.h"

namespace steptp::strategies {

struct SampleOptions {
  uint64_t seed = 0;
  int per_site = 3;               // parameter choices per site (all when the space is smaller)
  std::optional<int> only_site;   // restrict to one site index
};

// Candidates at every site (or the one asked for), up to `per_site` parameter choices each,
// in site order; parameter choices at a site are drawn without replacement from a generator
// seeded by (seed, site index), so adding sites never changes the choices at earlier ones.
std::vector<Candidate> sample_candidates(const Strategy& s, const leir::Program& p, const SampleOptions& opts);
std::vector<Candidate> sample_candidates(const Strategy& s, const ScheduleState& st, const SampleOptions& opts);

// One candidate: a site, then parameters, drawn from `seed`; tries other sites/params if the
// drawn choice turns out illegal. nullopt when nothing applies.
std::optional<Candidate> sample_one(const Strategy& s, const leir::Program& p, uint64_t seed);

// k distinct indices of [0, n) in draw order (all of them, shuffled, when k >= n).
std::vector<size_t> choose_indices(size_t n, size_t k, uint64_t seed);

}  // namespace steptp::strategies
