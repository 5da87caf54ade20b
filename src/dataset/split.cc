#include "dataset/split.h"

#include <algorithm>
#include <map>

#include "strategies/sampler.h"

namespace steptp::dataset {

std::vector<std::string> root_families(const std::vector<Root>& roots) {
  std::vector<std::string> families;
  for (const auto& r : roots) families.push_back(r.family);
  std::sort(families.begin(), families.end());
  families.erase(std::unique(families.begin(), families.end()), families.end());
  return families;
}

std::set<std::string> eval_families(const std::vector<Root>& roots, double eval_fraction, uint64_t seed) {
  const std::vector<std::string> families = root_families(roots);
  std::set<std::string> eval_fams;
  if (families.size() < 2 || eval_fraction <= 0) return eval_fams;
  std::map<std::string, int> roots_of;
  for (const auto& r : roots) roots_of[r.family]++;
  const double budget = eval_fraction * double(roots.size());
  int taken = 0;
  auto fam_order = strategies::choose_indices(families.size(), families.size(), base::mix_seed(seed, 0xe7a1));
  for (size_t i : fam_order) {
    if (eval_fams.size() + 1 >= families.size()) break;
    int n = roots_of[families[i]];
    if (double(taken + n) > budget) continue;
    eval_fams.insert(families[i]);
    taken += n;
  }
  if (eval_fams.empty()) eval_fams.insert(families[fam_order.front()]);
  return eval_fams;
}

}  // namespace steptp::dataset
