// Heavy: every algebraic strategy at every site, at most 3 parameter choices per site, on the 40
// public translator programs; every result verified on all four input profiles, 2 seeds each.
#include <map>
#include <set>

#include "strategies/algebraic_test_util.h"

namespace steptp::strategies::testing {
namespace {

TEST(AlgebraicCorpusHeavy, EveryResultVerifies) {
  auto corpus = corpus_programs();
  std::map<std::string, std::set<std::string>> applied;
  std::map<std::string, int> results, failures;
  for (const auto& name : algebraic_strategy_names()) {
    const Strategy& s = strategy(name);
    for (const auto& c : corpus) {
      for (const auto& cand : all_results(s, c.program, 3)) {
        ++results[name];
        applied[name].insert(c.program.name);
        std::string why = verify_equivalent(c.program, cand.program, 2);
        if (!why.empty()) ++failures[name];
        EXPECT_EQ(why, "") << name << " on " << c.program.name << " " << params_to_json(cand.params) << ": "
                           << changed_statements(c.program, cand.program)[0];
      }
    }
  }
  for (const auto& name : algebraic_strategy_names())
    std::printf("%-22s %4d results on %2zu workloads, %d verification failures\n", name.c_str(), results[name],
                applied[name].size(), failures[name]);
}

}  // namespace
}  // namespace steptp::strategies::testing
