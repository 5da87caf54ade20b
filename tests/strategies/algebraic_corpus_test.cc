// The algebraic strategies on the 40 public translator programs and on the public engine's own
// before/after pairs. Results are run against their inputs by the reference interpreter on
// seeded inputs of all four profiles (ordinary, x1e3, x1e-3, signs) and must agree. The full
// sweep (every site, 3 parameter choices) is algebraic_corpus_heavy_test.cc.
#include <map>
#include <set>

#include "ir/leir/parser.h"
#include "strategies/algebraic_test_util.h"
#include "ir/analysis/algebra.h"

namespace steptp::strategies::testing {
namespace {

// The first and the last site of each strategy on each program, first parameter choice.
TEST(AlgebraicCorpus, SampledResultsVerifyOnEveryProfile) {
  auto corpus = corpus_programs();
  ASSERT_EQ(corpus.size(), 40u);
  std::map<std::string, std::set<std::string>> applied;
  for (const auto& name : algebraic_strategy_names()) {
    const Strategy& s = strategy(name);
    for (const auto& c : corpus) {
      auto sites = s.sites(c.program);
      if (sites.empty()) continue;
      applied[name].insert(c.program.name);
      for (size_t i : {size_t{0}, sites.size() - 1}) {
        auto space = s.param_space(c.program, sites[i]);
        ASSERT_FALSE(space.empty()) << name << " site without parameters on " << c.program.name;
        auto cand = s.apply(c.program, sites[i], space[0]);
        ASSERT_TRUE(cand.has_value()) << name << " on " << c.program.name;
        EXPECT_EQ(cand->exactness, Exactness::Algebraic);
        auto changed = changed_statements(c.program, cand->program);
        ASSERT_EQ(changed.size(), 1u) << name << " on " << c.program.name;
        EXPECT_EQ(verify_equivalent(c.program, cand->program, 1), "")
            << name << " on " << c.program.name << ": " << changed[0];
        if (sites.size() == 1) break;
      }
    }
  }
  for (const auto& name : algebraic_strategy_names()) {
    std::string list;
    for (const auto& w : applied[name]) list += " " + w;
    std::printf("%-22s applies to %2zu of 40:%s\n", name.c_str(), applied[name].size(), list.substr(0, 160).c_str());
  }
  // The strategies whose patterns occur in the translator's own output (the others need
  // composites such as inlined softmax/log or products of exponentials, see the pairs test).
  for (const char* name : {"factorization", "expand_factorization", "cancellation", "expand_powsimp",
                           "expand_collect", "exponential_split", "multiplicative_split", "additive_split"})
    EXPECT_GE(applied[name].size(), 3u) << name;
}

struct Pair {
  std::string workload, strategy;
  leir::Program before, after;
  bool public_equivalent;
};

std::vector<Pair> algebraic_pairs() {
  std::map<std::string, leir::Program> by_name;
  for (auto& c : corpus_programs()) by_name.emplace(c.program.name, c.program);
  std::set<std::string> algebraic(algebraic_strategy_names().begin(), algebraic_strategy_names().end());
  std::vector<Pair> out;
  std::ifstream in(std::string(STEPTP_SHARED_DIR) + "/corpus/public_strategy_pairs_sample.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    if (!algebraic.count(j["strategy"])) continue;
    auto it = by_name.find(j["workload"]);
    if (it == by_name.end()) continue;
    Pair p{j["workload"], j["strategy"], it->second, it->second, j["equivalent_on_stored_inputs"]};
    p.before.body = leir::parse_body(j["before_leir"].get<std::string>());
    p.after.body = leir::parse_body(j["after_leir"].get<std::string>());
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<leir::Stmt> stmts(const leir::Program& p) {
  std::vector<leir::Stmt> out;
  leir::for_each_stmt(p.body, [&](const leir::Stmt& s, const std::vector<const leir::Loop*>&) { out.push_back(s); });
  return out;
}

// Where the public engine applied an algebraic strategy: ours, on the same input program,
// must (1) give only verified results, (2) not count a mere reprint (1e-05 -> 1.0e-5) as a
// transformation, and (3) act on the statement the public engine changed when that change was
// real and sound, with the same intent (checked by the strategy-specific expectations below).
TEST(AlgebraicCorpus, PublicPairsSameIntent) {
  auto pairs = algebraic_pairs();
  ASSERT_GE(pairs.size(), 30u);
  int reprints = 0, real = 0, ours_at_same_stmt = 0;
  for (const auto& pair : pairs) {
    auto before = stmts(pair.before), after = stmts(pair.after);
    ASSERT_EQ(before.size(), after.size()) << pair.workload;
    int changed = -1;
    for (size_t i = 0; i < before.size(); ++i)
      if (leir::print_stmt(before[i]) != leir::print_stmt(after[i])) changed = static_cast<int>(i);
    ASSERT_GE(changed, 0);
    bool reprint = analysis::canonical_key(before[static_cast<size_t>(changed)].rhs) ==
                   analysis::canonical_key(after[static_cast<size_t>(changed)].rhs);
    (reprint ? reprints : real)++;
    bool ours_here = false;
    for (const auto& cand : all_results(strategy(pair.strategy), pair.before, 1)) {
      auto ours = stmts(cand.program);
      bool here = leir::print_stmt(ours[static_cast<size_t>(changed)]) != leir::print_stmt(before[static_cast<size_t>(changed)]);
      ours_here |= here;
      if (here)
        std::printf("%-20s %s\n  public: %s\n  ours:   %s\n", pair.strategy.c_str(), pair.workload.c_str(),
                    leir::print_expr(after[static_cast<size_t>(changed)].rhs).c_str(),
                    leir::print_expr(ours[static_cast<size_t>(changed)].rhs).c_str());
      EXPECT_EQ(verify_equivalent(pair.before, cand.program, 1), "") << pair.strategy << " on " << pair.workload;
    }
    ours_at_same_stmt += ours_here ? 1 : 0;
    // Sound public rewrites whose intent ours shares must be reproduced at the same statement.
    static const std::set<std::string> shared = {"expand_factorization", "additive_split", "multiplicative_split",
                                                  "together"};
    if (!reprint && pair.public_equivalent && shared.count(pair.strategy))
      EXPECT_TRUE(ours_here) << pair.strategy << " on " << pair.workload << ": "
                             << leir::print_stmt(before[static_cast<size_t>(changed)]);
    // The public factorization exp(D-I) -> exp(D)*exp(-I) overflows to inf*0 on large inputs.
    if (pair.strategy == "factorization" && leir::print_stmt(after[static_cast<size_t>(changed)]).find("*exp(-") != std::string::npos)
      for (const auto& cand : all_results(strategy("expand_powsimp"), pair.before))
        EXPECT_EQ(leir::print_stmt(stmts(cand.program)[static_cast<size_t>(changed)]).find("*exp(-"), std::string::npos);
  }
  std::printf("public algebraic pairs: %zu (%d only reprint, %d real); ours acts on the same statement in %d\n",
              pairs.size(), reprints, real, ours_at_same_stmt);
}

}  // namespace
}  // namespace steptp::strategies::testing
