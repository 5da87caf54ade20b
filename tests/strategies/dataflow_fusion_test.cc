// operator_fusion, operator_fission, dead_code_elimination, expression_reorder: expected texts
// from the public corpus where the public result was right, refusals where it would be wrong,
// and every result checked against its input in the interpreter.
#include "strategies/dataflow_check.h"

namespace steptp::dataflow_test {
namespace {

using strategies::Params;

std::string corpus_after(const std::string& workload, const std::string& strategy, std::string* before = nullptr) {
  std::ifstream in(std::string(STEPTP_SHARED_DIR) + "/corpus/public_strategy_pairs_sample.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j["workload"] == workload && j["strategy"] == strategy) {
      if (before) *before = j["before_leir"];
      return j["after_leir"];
    }
  }
  return "";
}

std::string refusal_for(const strategies::Strategy& s, const leir::Program& p, const std::string& site) {
  for (const auto& r : s.explain(p))
    if (r.site == site) return r.reason;
  return "";
}

TEST(OperatorFusion, MatchesPublicResultAndMovesOnlyIntermediates) {
  auto corpus = corpus_translator();
  const auto& p = corpus_program(corpus, "Conv2d_Min_Add_Multiply")->program;
  const auto& s = strategy("operator_fusion");
  std::string before;
  std::string after = corpus_after("Conv2d_Min_Add_Multiply", "operator_fusion", &before);
  ASSERT_EQ(leir::print_body(p.body), before);
  // Nests 1 (D = min(C, G)) and 2 (E = D + J): D is used only inside, E is read later.
  strategies::Site site{{1, 2}, {}, ""};
  auto c = s.apply(p, site, Params{{"scope", std::string("s")}});
  ASSERT_TRUE(c);
  EXPECT_EQ(leir::print_body(c->program.body), after);
  EXPECT_TRUE(compare_programs(p, c->program).bit_exact);
  // The last nest writes the output F: fusing (2,3) may never move F (or E, read later) off g.
  auto c2 = s.apply(p, {{2, 3}, {}, ""}, Params{{"scope", std::string("l")}});
  ASSERT_TRUE(c2);
  EXPECT_EQ(leir::print_body(c2->program.body).find("F^{f64,l}"), std::string::npos);
  EXPECT_NE(leir::print_body(c2->program.body).find("E^{f64,l}"), std::string::npos);  // E only used inside
  EXPECT_GT(check_all(s, p), 0);
}

TEST(OperatorFusion, RefusesReadsOfUnfinishedOrLaterElements) {
  const auto& s = strategy("operator_fusion");
  // The second nest reads the reduction S before the first nest has finished it.
  auto red = parse_program(
      "input A: f64[4,8]\noutput Y: f64[4,8]\n"
      "L^{4}_{a=0}L^{8}_{c=0}[S^{f64,g}_{a}=S^{f64,g}_{a}+A^{f64,g}_{a,c};];"
      "L^{4}_{a=0}L^{8}_{c=0}[Y^{f64,g}_{a,c}=A^{f64,g}_{a,c}/S^{f64,g}_{a};];");
  EXPECT_TRUE(s.sites(red).empty());
  EXPECT_NE(refusal_for(s, red, "nests 0 and 1").find("S"), std::string::npos);
  // Reading X_{a+1}: produced by the first nest at a later iteration.
  auto ahead = parse_program(
      "input A: f64[9]\noutput Y: f64[8]\n"
      "L^{9}_{a=0}[X^{f64,g}_{a}=A^{f64,g}_{a}*2;];L^{8}_{a=0}[Y^{f64,g}_{a}=X^{f64,g}_{a+1};];");
  EXPECT_TRUE(s.sites(ahead).empty());  // (also: different headers)
  auto ahead2 = parse_program(
      "input A: f64[9]\noutput Y: f64[8]\n"
      "L^{8}_{a=0}[X^{f64,g}_{a+1}=A^{f64,g}_{a}*2;];L^{8}_{a=0}[Y^{f64,g}_{a}=if_then_else(a<7,X^{f64,g}_{a+2},0);];");
  EXPECT_TRUE(s.sites(ahead2).empty());
  // Reading X_{a-1} is fine on a serial loop (produced one iteration earlier) ...
  auto behind = parse_program(
      "input A: f64[8]\noutput Y: f64[8]\n"
      "L^{8}_{a=0}[X^{f64,g}_{a}=A^{f64,g}_{a}*2;];L^{8}_{a=0}[Y^{f64,g}_{a}=if_then_else(a-1<0,0,X^{f64,g}_{a-1});];");
  EXPECT_EQ(s.sites(behind).size(), 1u);
  EXPECT_EQ(check_all(s, behind), 3);
  // ... but not on a parallel one: the fused nest would carry a dependence across threads.
  auto parallel = parse_program(
      "input A: f64[8]\noutput Y: f64[8]\n"
      "B^{8}_{tx=0}[X^{f64,g}_{tx}=A^{f64,g}_{tx}*2;];B^{8}_{tx=0}[Y^{f64,g}_{tx}=if_then_else(tx-1<0,0,X^{f64,g}_{tx-1});];");
  EXPECT_TRUE(s.sites(parallel).empty());
  EXPECT_NE(refusal_for(s, parallel, "nests 0 and 1").find("independent loop"), std::string::npos);
}

TEST(OperatorFission, SplitsOnlyWhenNoDependenceIsReversed) {
  const auto& s = strategy("operator_fission");
  // The public online softmax: running max and running sum read earlier iterations only.
  auto online = example("online_softmax");
  ASSERT_EQ(s.sites(online).size(), 1u);
  EXPECT_EQ(check_all(s, online), 1);
  auto c = s.apply(online, s.sites(online)[0], {});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->program.body.size(), 3u);
  // A max and a sum that reads the unfinished max: splitting would change the sum.
  auto fused = parse_program(
      "input A: f64[4,8]\noutput S: f64[4]\n"
      "B^{4}_{tx=0}L^{8}_{a=0}[M^{f64,g}_{tx}=max(M^{f64,g}_{tx},A^{f64,g}_{tx,a});"
      "S^{f64,g}_{tx}=S^{f64,g}_{tx}+exp(A^{f64,g}_{tx,a}-M^{f64,g}_{tx});];");
  EXPECT_TRUE(s.sites(fused).empty());
  EXPECT_NE(refusal_for(s, fused, "nest 0 (2 items)").find("M"), std::string::npos);
}

TEST(DeadCodeElimination, RemovesExactlyWhatNeverReachesAnOutput) {
  const auto& s = strategy("dead_code_elimination");
  std::string before;
  std::string after = corpus_after("Matrix_scalar_multiplication", "dead_code_elimination", &before);
  auto corpus = corpus_translator();
  auto p = corpus_program(corpus, "Matrix_scalar_multiplication")->program;
  p.body = leir::parse_body(before);  // the public "input" with a duplicated, unused nest
  auto sites = s.sites(p);
  ASSERT_EQ(sites.size(), 1u);
  auto c = s.apply(p, sites[0], {});
  ASSERT_TRUE(c);
  EXPECT_EQ(leir::print_body(c->program.body), after);
  // A composite with an unused branch: F depends on E, neither reaches the output; the live
  // nest also holds a dead statement.
  auto branch = parse_program(
      "input A: f64[4,8]\noutput D: f64[4,8]\n"
      "B^{4}_{tx=0}L^{8}_{a=0}[E^{f64,g}_{tx,a}=exp(A^{f64,g}_{tx,a});];"
      "B^{4}_{tx=0}[F^{f64,g}_{tx}=E^{f64,g}_{tx,0}*2;];"
      "B^{4}_{tx=0}L^{8}_{a=0}[D^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}+1;G^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}*3;];");
  // E is dead but read by F: F goes first (one removal per step), then E.
  auto bs = s.sites(branch);
  ASSERT_EQ(bs.size(), 2u);
  EXPECT_EQ(check_all(s, branch), 2);
  EXPECT_NE(refusal_for(s, branch, "item 0 (writes E)").find("still read"), std::string::npos);
  auto without_f = s.apply(branch, bs[0], {});
  ASSERT_TRUE(without_f);
  EXPECT_EQ(s.sites(without_f->program).size(), 2u);  // now E, and still G
  EXPECT_EQ(check_all(s, without_f->program), 2);
  EXPECT_NE(refusal_for(s, branch, "item 2").find("output D"), std::string::npos);
  // An intermediate that feeds the output through a chain stays.
  auto chain = parse_program(
      "input A: f64[4]\noutput D: f64[4]\n"
      "B^{4}_{tx=0}[E^{f64,g}_{tx}=exp(A^{f64,g}_{tx});];B^{4}_{tx=0}[D^{f64,g}_{tx}=E^{f64,g}_{tx}+1;];");
  EXPECT_TRUE(s.sites(chain).empty());
}

TEST(ExpressionReorder, SwapsOnlyIndependentNeighbours) {
  const auto& s = strategy("expression_reorder");
  auto corpus = corpus_translator();
  const auto& p = corpus_program(corpus, "conv1d_conv1d")->program;
  std::string before;
  std::string after = corpus_after("conv1d_conv1d", "expression_reorder", &before);
  ASSERT_EQ(leir::print_body(p.body), before);
  auto sites = s.sites(p);
  ASSERT_EQ(sites.size(), 1u);  // (1,2) is RAW: F reads E
  auto c = s.apply(p, sites[0], {});
  ASSERT_TRUE(c);
  EXPECT_EQ(leir::print_body(c->program.body), after);
  EXPECT_NE(refusal_for(s, p, "items 1 and 2").find("RAW"), std::string::npos);
  EXPECT_EQ(check_all(s, p), 1);
}

}  // namespace
}  // namespace steptp::dataflow_test
