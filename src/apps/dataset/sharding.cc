#include "apps/dataset/sharding.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>
#include <utility>

#include "ir/analysis/program_facts.h"

namespace steptp::dataset {

namespace {

uint64_t executed_instances(const analysis::ProgramFacts& f) {
  uint64_t executed = 0;
  for (const auto& n : f.nests) executed += uint64_t(std::max<int64_t>(0, n.iterations));
  return executed;
}

}  // namespace

uint64_t root_cost(const leir::Program& p) {
  analysis::ProgramFacts f = analysis::program_facts(p);
  return uint64_t(f.nests.size() + uint64_t(std::max<int64_t>(0, f.statements))) * (executed_instances(f) + 4096);
}

uint64_t tuned_root_cost(const leir::Program& p, double naive_ms, int trials) {
  // Per trial, fitted by bench/mpi_projection.py --fit to a 1-rank tuned run's tuning wall times
  // (8 bench roots, 16 trials, this 2-core VM under load; docs/mpi.md): seconds fixed, and seconds
  // per ms of naive one-core time. The fixed part dominates at the profile's root sizes.
  constexpr double kFixedS = 2.19, kPerNaiveMsS = 0.0135;
  if (!(naive_ms > 0)) naive_ms = double(executed_instances(analysis::program_facts(p))) * 1e-6;
  return uint64_t(std::llround(1000.0 * std::max(1, trials) * (kFixedS + kPerNaiveMsS * naive_ms)));
}

std::vector<std::vector<size_t>> shard_lists_by_cost(const std::vector<uint64_t>& costs, int parts) {
  std::vector<size_t> order(costs.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  // (load, part): the smallest load first, the lower part on ties.
  std::priority_queue<std::pair<uint64_t, int>, std::vector<std::pair<uint64_t, int>>, std::greater<>> load;
  for (int k = 0; k < parts; ++k) load.push({0, k});
  std::vector<std::vector<size_t>> lists(static_cast<size_t>(std::max(parts, 0)));
  for (size_t i : order) {
    auto [l, k] = load.top();
    load.pop();
    lists[size_t(k)].push_back(i);
    load.push({l + costs[i], k});
  }
  return lists;
}

std::vector<int> shard_by_cost(const std::vector<uint64_t>& costs, int parts) {
  std::vector<int> owner(costs.size(), 0);
  const auto lists = shard_lists_by_cost(costs, parts);
  for (size_t k = 0; k < lists.size(); ++k)
    for (size_t i : lists[k]) owner[i] = int(k);
  return owner;
}

}  // namespace steptp::dataset
