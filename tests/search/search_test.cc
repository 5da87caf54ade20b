#include <gtest/gtest.h>

#include <cmath>

#include "ir/analysis/cost.h"
#include "ir/analysis/program_facts.h"
#include "ir/leir/program_io.h"
#include "search/analytic/search.h"
#include "ir/verify/verifier.h"

namespace steptp::search {
namespace {

// The search module does not depend on the workload suite: a matmul written out in LEIR.
leir::Program tiny(const char*) {
  return leir::program_from_text(
      "input A: f64[8,16]\ninput C: f64[16,12]\noutput D: f64[8,12]\n"
      "B^{8}_{tx=0}L^{12}_{a=0}[D^{f64,g}_{tx,a}=0;L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];];");
}

TEST(Search, GreedyTransitionsAreVerifiedAndDeterministic) {
  auto p = tiny("matmul");
  SearchOptions o;
  o.seed = 11;
  o.mode = Mode::Greedy;
  o.depth = 2;
  auto a = run_search(p, o);
  auto b = run_search(p, o);
  ASSERT_FALSE(a.transitions.empty());
  ASSERT_EQ(a.transitions.size(), b.transitions.size());
  int chosen_per_depth[3] = {0, 0, 0};
  for (size_t i = 0; i < a.transitions.size(); ++i) {
    const auto& t = a.transitions[i];
    EXPECT_EQ(t.strategy, b.transitions[i].strategy);
    EXPECT_EQ(t.result_hash, b.transitions[i].result_hash);
    EXPECT_NE(t.report.verdict, verify::Verdict::Failed);
    // Re-verify against the root independently.
    EXPECT_TRUE(verify::verify(p, t.result).equivalent) << t.strategy;
    EXPECT_FALSE(t.cost_result.measured);
    if (t.chosen) {
      EXPECT_TRUE(t.improving);
      EXPECT_LT(t.cost_result.value, t.cost_parent.value);
      chosen_per_depth[t.depth]++;
    }
    if (t.depth == 2) EXPECT_EQ(t.steps_so_far.size(), 1u);
  }
  EXPECT_LE(chosen_per_depth[1], 1);  // greedy keeps one
}

TEST(Search, BeamKeepsUpToBStates) {
  auto p = tiny("matmul");
  SearchOptions o;
  o.seed = 3;
  o.mode = Mode::Beam;
  o.beam = 2;
  o.depth = 1;
  auto r = run_search(p, o);
  int chosen = 0;
  for (const auto& t : r.transitions) chosen += t.chosen;
  EXPECT_LE(chosen, 2);
  EXPECT_GE(r.stats.verified, int(r.transitions.size()));
}

TEST(Search, ModelCostRewardsParallelLoops) {
  auto p = leir::program_from_text(
      "input A: f64[64,32]\noutput C: f64[64,32]\nL^{64}_{i=0}L^{32}_{j=0}[C^{f64,g}_{i,j}=A^{f64,g}_{i,j}*2.0;];");
  auto q = leir::program_from_text(
      "input A: f64[64,32]\noutput C: f64[64,32]\nP^{64}_{i=0}L^{32}_{j=0}[C^{f64,g}_{i,j}=A^{f64,g}_{i,j}*2.0;];");
  EXPECT_LT(model_cost(q).value, model_cost(p).value);
  auto f = analysis::program_facts(p);
  ASSERT_EQ(f.nests.size(), 1u);
  EXPECT_EQ(f.nests[0].iterations, 64 * 32);
  EXPECT_EQ(f.nests[0].flops, 64 * 32);
  EXPECT_EQ(f.nests[0].bytes, 64 * 32 * 16);
}

// The search's cost is the tuner's analytic cost (ir/analysis/cost.h) on the fixed reference
// machine: it sees strides (a transposed walk costs more) and parallelism up to its 16 cores,
// whatever machine computes it.
TEST(Search, ModelCostIsTheAnalyticCostOnTheReferenceMachine) {
  auto rows = leir::program_from_text(
      "input A: f64[64,32]\noutput C: f64[64,32]\nL^{64}_{i=0}L^{32}_{j=0}[C^{f64,g}_{i,j}=A^{f64,g}_{i,j}*2.0;];");
  auto cols = leir::program_from_text(
      "input A: f64[64,32]\noutput C: f64[64,32]\nL^{32}_{j=0}L^{64}_{i=0}[C^{f64,g}_{i,j}=A^{f64,g}_{i,j}*2.0;];");
  EXPECT_LT(model_cost(rows).value, model_cost(cols).value);
  for (const auto& p : {rows, cols})
    EXPECT_EQ(model_cost(p).value,
              std::round(analysis::analytic_cost(p, analysis::kReferenceMachine) * 10.0) / 10.0);
  auto par = leir::program_from_text(
      "input A: f64[64,32]\noutput C: f64[64,32]\nP^{64}_{i=0}L^{32}_{j=0}[C^{f64,g}_{i,j}=A^{f64,g}_{i,j}*2.0;];");
  // A machine with 64 cores runs the 64 rows in one wave, where the reference machine takes four:
  // the reference machine, not the one computing the cost, decides.
  analysis::CostMachine wide = analysis::kReferenceMachine;
  wide.cores = 64;
  EXPECT_LT(analysis::analytic_cost(par, wide), model_cost(par).value - 1);
}

}  // namespace
}  // namespace steptp::search
