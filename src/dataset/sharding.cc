#include "dataset/sharding.h"

#include <algorithm>
#include <numeric>
#include <queue>
#include <utility>

#include "search/search.h"

namespace steptp::dataset {

uint64_t root_cost(const leir::Program& p) {
  search::ProgramFacts f = search::program_facts(p);
  uint64_t executed = 0;
  for (const auto& n : f.nests) executed += uint64_t(std::max<int64_t>(0, n.iterations));
  return uint64_t(f.nests.size() + uint64_t(std::max<int64_t>(0, f.statements))) * (executed + 4096);
}

std::vector<int> shard_by_cost(const std::vector<uint64_t>& costs, int parts) {
  std::vector<size_t> order(costs.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  // (load, part): the smallest load first, the lower part on ties.
  std::priority_queue<std::pair<uint64_t, int>, std::vector<std::pair<uint64_t, int>>, std::greater<>> load;
  for (int k = 0; k < parts; ++k) load.push({0, k});
  std::vector<int> owner(costs.size(), 0);
  for (size_t i : order) {
    auto [l, k] = load.top();
    load.pop();
    owner[i] = k;
    load.push({l + costs[i], k});
  }
  return owner;
}

}  // namespace steptp::dataset
