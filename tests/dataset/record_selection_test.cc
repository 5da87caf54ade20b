// Which of a root's transitions become records (apps/dataset/record_selection.h): the per-root
// contrast goes to the strategies the root shows least, never to a path step or an improving
// one; a multi-answer set keeps its last place for the rarest strategy of the state.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "apps/dataset/record_selection.h"

namespace steptp::dataset {
namespace {

search::Transition step(const std::string& strategy, double cost, bool improving = false) {
  search::Transition t;
  t.strategy = strategy;
  t.cost_result.value = cost;
  t.improving = improving;
  return t;
}

std::set<std::string> strategies_of(const std::vector<search::Transition>& ts, const std::set<size_t>& chosen) {
  std::set<std::string> s;
  for (size_t i : chosen) s.insert(ts[i].strategy);
  return s;
}

TEST(RecordSelection, ContrastGoesToTheStrategiesTheRootShowsLeast) {
  std::vector<search::Transition> ts;
  for (int k = 0; k < 5; ++k) ts.push_back(step("loop_reorder", 10 + k));
  ts.push_back(step("common_subexpression_elimination", 20));
  ts.push_back(step("common_subexpression_elimination", 21));
  ts.push_back(step("cancellation", 30));
  ts.push_back(step("expand_log", 31));
  ts.back().path_step = 1;  // a path step is the trajectory, never contrast
  ts.push_back(step("factorization", 32, /*improving=*/false));
  ts.back().tuner_faster = true;  // measured faster by the tuner: improving, not contrast
  ts.push_back(step("apart", 33, /*improving=*/true));
  ts.back().tuner_faster = false;  // the tuner's measurement wins over the label
  for (uint64_t seed : {1, 2, 3}) {
    EXPECT_TRUE(contrast_steps(ts, 0, seed).empty());
    const auto one = contrast_steps(ts, 1, seed);
    const auto s1 = strategies_of(ts, one);
    EXPECT_EQ(one.size(), 1u);
    EXPECT_TRUE(s1 == std::set<std::string>{"cancellation"} || s1 == std::set<std::string>{"apart"}) << *s1.begin();
    EXPECT_EQ(strategies_of(ts, contrast_steps(ts, 2, seed)), (std::set<std::string>{"cancellation", "apart"}));
    const auto three = contrast_steps(ts, 3, seed);
    EXPECT_EQ(three.size(), 3u);
    EXPECT_EQ(strategies_of(ts, three).count("common_subexpression_elimination"), 1u);
    EXPECT_EQ(contrast_steps(ts, 100, seed).size(), 9u);  // every non-path, non-improving step
  }
}

TEST(RecordSelection, MultiAnswerSetKeepsItsLastPlaceForTheRarestStrategy) {
  // (loop_split is trivially applicable, apps/dataset/shortcut.h: one such per set here.)
  std::vector<search::Transition> ts = {step("loop_reorder", 1), step("loop_reorder", 2), step("loop_split", 3),
                                        step("loop_tiling", 4), step("cancellation", 5)};
  std::vector<size_t> by_cost = {0, 1, 2, 3, 4};
  std::map<std::string, int> counts = {{"loop_reorder", 6}, {"loop_split", 3}, {"loop_tiling", 4}, {"cancellation", 1}};
  EXPECT_EQ(multi_answer_set(ts, by_cost, counts, 3, 1), (std::vector<size_t>{0, 2, 4}));
  EXPECT_EQ(multi_answer_set(ts, by_cost, counts, 4, 1), (std::vector<size_t>{0, 2, 3, 4}));
  EXPECT_EQ(multi_answer_set(ts, by_cost, counts, 2, 1), (std::vector<size_t>{0, 4}));
  // Without a rare strategy left the last place is the cheapest of the least shown.
  counts["cancellation"] = 9;
  EXPECT_EQ(multi_answer_set(ts, by_cost, counts, 3, 1), (std::vector<size_t>{0, 2, 3}));
  // At most `trivial_max` trivially applicable strategies, in the last place too.
  // (loop_vectorization and loop_unrolling are trivial, loop_tiling is not: dataset/shortcut.h.)
  std::vector<search::Transition> tv = {step("loop_vectorization", 1), step("loop_unrolling", 2), step("loop_tiling", 3)};
  std::map<std::string, int> tc = {{"loop_vectorization", 5}, {"loop_unrolling", 1}, {"loop_tiling", 2}};
  EXPECT_EQ(multi_answer_set(tv, {0, 1, 2}, tc, 3, 1), (std::vector<size_t>{0, 2}));
  EXPECT_EQ(multi_answer_set(tv, {0, 1, 2}, tc, 3, 2), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(multi_answer_set(tv, {0, 2, 1}, tc, 2, 2), (std::vector<size_t>{0, 1}));
}

}  // namespace
}  // namespace steptp::dataset
