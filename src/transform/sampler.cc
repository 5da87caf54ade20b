#include "transform/sampler.h"

#include <numeric>

#include "ir/interp/inputs.h"
#include "transform/schedule_state.h"

namespace steptp::strategies {


std::vector<size_t> choose_indices(size_t n, size_t k, uint64_t seed) {
  std::vector<size_t> idx(n);
  std::iota(idx.begin(), idx.end(), size_t{0});
  interp::Rng rng(seed);
  size_t m = std::min(n, k);
  for (size_t i = 0; i < m; ++i) {
    size_t j = i + static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(n - i - 1)));
    std::swap(idx[i], idx[j]);
  }
  idx.resize(m);
  return idx;
}

std::vector<Candidate> sample_candidates(const Strategy& s, const leir::Program& p, const SampleOptions& opts) {
  ScheduleState st(p);
  return sample_candidates(s, st, opts);
}

std::vector<Candidate> sample_candidates(const Strategy& s, const ScheduleState& p, const SampleOptions& opts) {
  std::vector<Candidate> out;
  const auto& sites = s.sites(p);
  for (size_t i = 0; i < sites.size(); ++i) {
    if (opts.only_site && *opts.only_site != static_cast<int>(i)) continue;
    auto space = s.param_space(p, sites[i]);
    if (space.empty()) continue;
    for (size_t k : choose_indices(space.size(), static_cast<size_t>(std::max(opts.per_site, 0)), base::mix_seed(opts.seed, i))) {
      if (auto c = s.apply(p, sites[i], space[k])) {
        c->site = static_cast<int>(i);
        out.push_back(std::move(*c));
      }
    }
  }
  return out;
}

std::optional<Candidate> sample_one(const Strategy& s, const leir::Program& program, uint64_t seed) {
  ScheduleState p(program);
  const auto& sites = s.sites(p);
  for (size_t i : choose_indices(sites.size(), sites.size(), seed)) {
    auto space = s.param_space(p, sites[i]);
    for (size_t k : choose_indices(space.size(), space.size(), base::mix_seed(seed, i))) {
      if (auto c = s.apply(p, sites[i], space[k])) {
        c->site = static_cast<int>(i);
        return std::move(*c);
      }
    }
  }
  return std::nullopt;
}

}  // namespace steptp::strategies
