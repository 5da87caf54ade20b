// Every registered strategy on the 10 public-style examples (../shared/examples): every result
// (up to 3 parameter choices per site) must run and agree with its input; plus short random
// compositions. The 43-strategy registry check lives here too.
#include <gtest/gtest.h>

#include <map>

#include "ir/leir/printer.h"
#include "strategies/check_util.h"
#include "transform/sampler.h"
#include "transform/strategy.h"

namespace steptp::strategies {
namespace {

TEST(Registry, NamesInStrategiesMdOrder) {
  const auto& names = strategy_names();
  EXPECT_EQ(names.size(), 43u);
  EXPECT_EQ(names[0], "operator_fusion");
  EXPECT_EQ(names[9], "loop_reorder");
  EXPECT_EQ(names[22], "precompute_indices");
  EXPECT_EQ(names[42], "flashattention_wo_tiling");
  int last = -1;
  for (const auto* s : all_strategies()) {
    int i = strategy_index(s->name());
    EXPECT_GT(i, last) << s->name();
    last = i;
    EXPECT_EQ(find_strategy(s->name()), s);
  }
  EXPECT_EQ(find_strategy("no_such_strategy"), nullptr);
}

// Expected to fail until all three strategy engineers have landed their files (issue 4).
TEST(Registry, AllFortyThreeRegistered) {
  std::string missing;
  for (auto n : strategy_names())
    if (!find_strategy(n)) missing += std::string(n) + " ";
  EXPECT_TRUE(missing.empty()) << "not registered: " << missing;
  EXPECT_EQ(all_strategies().size(), 43u);
}

TEST(Examples, EveryResultVerifies) {
  auto progs = testing::examples();
  ASSERT_EQ(progs.size(), 10u);
  for (const auto* s : all_strategies()) {
    for (const auto& p : progs) {
      SampleOptions o;
      o.seed = 1;
      std::vector<Candidate> cands;
      try {
        cands = sample_candidates(*s, p, o);
      } catch (const std::exception& e) {
        ADD_FAILURE() << s->name() << " on " << p.name << " threw: " << e.what();
        continue;
      }
      for (const auto& c : cands) {
        auto eq = testing::check_equivalent(p, c.program);
        EXPECT_TRUE(eq.ok) << s->name() << " on " << p.name << " " << params_to_json(c.params) << ": " << eq.message
                           << "\n" << leir::print_body(c.program.body);
        if (eq.ok && c.exactness == Exactness::Exact)
          EXPECT_TRUE(eq.exact) << s->name() << " on " << p.name << " claims exact but differs in rounding\n"
                                << leir::print_body(c.program.body);
      }
    }
  }
}

// Random sequences of 5 strategies from the registered ones, each step sampled with a seed;
// the end program must agree with the start program.
TEST(Composition, FiftySequencesOfFiveVerify) {
  auto progs = testing::examples();
  const auto& strategies = all_strategies();
  ASSERT_FALSE(strategies.empty());
  int sequences = 0;
  for (uint64_t seq = 0; seq < 50; ++seq) {
    const auto& start = progs[seq % progs.size()];
    leir::Program cur = start;
    std::string trail;
    for (int step = 0; step < 5; ++step) {
      // First strategy (in a seeded order) that applies.
      for (size_t k : choose_indices(strategies.size(), strategies.size(), base::mix_seed(seq, step))) {
        std::optional<Candidate> c;
        try {
          c = sample_one(*strategies[k], cur, base::mix_seed(seq * 31 + step, k));
        } catch (const std::exception& e) {
          ADD_FAILURE() << strategies[k]->name() << " threw: " << e.what() << "\n" << leir::print_body(cur.body);
        }
        if (!c) continue;
        trail += std::string(strategies[k]->name()) + " ";
        cur = std::move(c->program);
        break;
      }
    }
    auto eq = testing::check_equivalent(start, cur);
    EXPECT_TRUE(eq.ok) << start.name << " after " << trail << ": " << eq.message << "\n" << leir::print_body(cur.body);
    ++sequences;
  }
  EXPECT_EQ(sequences, 50);
}

}  // namespace
}  // namespace steptp::strategies
