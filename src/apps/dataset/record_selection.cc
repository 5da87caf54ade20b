#include "apps/dataset/record_selection.h"

#include <algorithm>
#include <optional>

#include "apps/dataset/shortcut.h"
#include "transform/sampler.h"

namespace steptp::dataset {

bool counts_as_improving(const search::Transition& t) { return t.tuner_faster.value_or(t.improving); }

std::map<std::string, int> strategy_counts(const std::vector<search::Transition>& transitions) {
  std::map<std::string, int> counts;
  for (const auto& t : transitions) counts[t.strategy]++;
  return counts;
}

std::set<size_t> contrast_steps(const std::vector<search::Transition>& transitions, int per_root, uint64_t seed) {
  const auto counts = strategy_counts(transitions);
  std::vector<size_t> others;
  for (size_t i : strategies::choose_indices(transitions.size(), transitions.size(), base::mix_seed(seed, 0xc0)))
    if (transitions[i].path_step == 0 && !counts_as_improving(transitions[i])) others.push_back(i);
  std::stable_sort(others.begin(), others.end(), [&](size_t a, size_t b) {
    return counts.at(transitions[a].strategy) < counts.at(transitions[b].strategy);
  });
  return {others.begin(), others.begin() + std::clamp<long>(per_root, 0, long(others.size()))};
}

std::vector<size_t> multi_answer_set(const std::vector<search::Transition>& transitions,
                                     const std::vector<size_t>& by_cost, const std::map<std::string, int>& counts,
                                     int max_answers, int trivial_max) {
  std::set<std::string> used;
  int trivial = 0;
  std::vector<size_t> picked;
  auto eligible = [&](size_t i) {
    const auto& name = transitions[i].strategy;
    return !used.count(name) && !(is_trivial_strategy(name) && trivial >= trivial_max);
  };
  auto take = [&](size_t i) {
    used.insert(transitions[i].strategy);
    trivial += is_trivial_strategy(transitions[i].strategy);
    picked.push_back(i);
  };
  for (size_t i : by_cost)
    if (int(picked.size()) + 1 < max_answers && eligible(i)) take(i);
  std::optional<size_t> rarest;
  for (size_t i : by_cost)
    if (eligible(i) && (!rarest || counts.at(transitions[i].strategy) < counts.at(transitions[*rarest].strategy)))
      rarest = i;
  if (rarest) take(*rarest);
  return picked;
}

}  // namespace steptp::dataset
