#include "apps/dataset/split.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/hash.h"
#include "apps/dataset/token_stats.h"
#include "transform/sampler.h"

namespace steptp::dataset {

using nlohmann::json;

std::vector<std::string> root_families(const std::vector<Root>& roots) {
  std::vector<std::string> families;
  for (const auto& r : roots) families.push_back(r.family);
  std::sort(families.begin(), families.end());
  families.erase(std::unique(families.begin(), families.end()), families.end());
  return families;
}

namespace {

// What moves between train and eval as one: a root of a sampled family, or a whole small family.
// Swaps exchange units of the same group (the family; "" for the small families).
struct Unit {
  std::vector<size_t> roots;
  std::string group;
  bool eval = false;
};

struct Medians {
  double train = 0, eval = 0;
  // How far apart the two are: |log(eval / train)|; 0 when a side is empty (nothing to balance).
  double distance() const { return train > 0 && eval > 0 ? std::abs(std::log(eval / train)) : 0; }
};

Medians medians(const std::vector<Unit>& units, const std::vector<SplitRoot>& roots) {
  std::vector<double> side[2];
  for (const auto& u : units)
    for (size_t r : u.roots) side[u.eval].insert(side[u.eval].end(), roots[r].tokens.begin(), roots[r].tokens.end());
  return {median(side[0]), median(side[1])};
}

}  // namespace

json EvalSplit::to_json() const {
  return {{"by", "root: whole roots within every family with at least 3 roots, plus whole smaller families"},
          {"eval_roots", roots},
          {"whole_families", whole_families},
          {"sampled_families", sampled_families},
          {"median_tokens", {{"train", train_median_tokens}, {"eval", eval_median_tokens},
                             {"ratio", train_median_tokens > 0 ? std::round(1e4 * eval_median_tokens /
                                                                            train_median_tokens) / 1e4
                                                               : 0.0}}},
          {"balancing_swaps", swaps}};
}

EvalSplit split_roots(const std::vector<SplitRoot>& roots, double eval_fraction, uint64_t seed) {
  EvalSplit out;
  std::map<std::string, std::vector<size_t>> of_family;  // root indices in a seeded order
  for (size_t i : strategies::choose_indices(roots.size(), roots.size(), base::mix_seed(seed, 0xe7a1)))
    of_family[roots[i].family].push_back(i);
  std::vector<Unit> units;
  std::vector<std::string> small;
  size_t small_roots = 0;
  if (eval_fraction > 0 && roots.size() >= 2) {
    for (const auto& [family, idx] : of_family) {
      const int n = int(idx.size());
      if (n < kRootsForHeldOutRoots) {
        small.push_back(family);
        small_roots += idx.size();
        continue;
      }
      out.sampled_families.insert(family);
      const int held = std::clamp(int(std::lround(eval_fraction * n)), 1, n - 2);
      for (int k = 0; k < n; ++k) units.push_back({{idx[size_t(k)]}, family, k < held});
    }
  } else {
    for (const auto& [family, idx] : of_family) small.push_back(family);
  }
  // Whole small families: seeded order, within the share, at least one of two or more, never all.
  std::set<std::string> held;
  if (eval_fraction > 0 && roots.size() >= 2 && !small.empty() && (small.size() >= 2 || !units.empty())) {
    const double budget = eval_fraction * double(small_roots);
    size_t taken = 0;
    for (size_t i : strategies::choose_indices(small.size(), small.size(), base::mix_seed(seed, 0xe7a2))) {
      if (held.size() + 1 >= small.size() && units.empty()) break;
      const size_t n = of_family[small[i]].size();
      if (!held.empty() && double(taken + n) > budget) continue;
      held.insert(small[i]);
      taken += n;
    }
  }
  for (const auto& f : small) units.push_back({of_family[f], "", held.count(f) > 0});

  // Balance the token medians by swaps within a group, the best one first.
  Medians m = medians(units, roots);
  const double target = std::log1p(kTokenMedianTarget);
  for (size_t iter = 0; iter < units.size() && m.distance() > target; ++iter) {
    size_t best_e = 0, best_t = 0;
    Medians best = m;
    for (size_t e = 0; e < units.size(); ++e) {
      if (!units[e].eval) continue;
      for (size_t t = 0; t < units.size(); ++t) {
        if (units[t].eval || units[t].group != units[e].group) continue;
        units[e].eval = false, units[t].eval = true;
        Medians c = medians(units, roots);
        units[e].eval = true, units[t].eval = false;
        if (c.distance() < best.distance() - 1e-12) best = c, best_e = e, best_t = t;
      }
    }
    if (best.distance() >= m.distance() - 1e-12) break;
    units[best_e].eval = false, units[best_t].eval = true;
    m = best;
    out.swaps++;
  }
  for (const auto& u : units) {
    if (!u.eval) continue;
    for (size_t r : u.roots) out.roots.insert(roots[r].key);
    if (u.group.empty()) out.whole_families.insert(roots[u.roots.front()].family);
  }
  out.train_median_tokens = m.train;
  out.eval_median_tokens = m.eval;
  return out;
}

}  // namespace steptp::dataset
