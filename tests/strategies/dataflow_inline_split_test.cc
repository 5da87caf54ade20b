// compute_inline, expression_splitting, common_subexpression_elimination.
#include "strategies/dataflow_check.h"

namespace steptp::dataflow_test {
namespace {

using strategies::Params;

std::string reason_at(const strategies::Strategy& s, const leir::Program& p, const std::string& prefix) {
  for (const auto& r : s.explain(p))
    if (r.site.rfind(prefix, 0) == 0) return r.reason;
  return "";
}

TEST(ComputeInline, SubstitutesShiftedReadsAndDropsTheProducer) {
  auto p = parse_program(
      "input A: f64[8]\noutput Y: f64[7]\n"
      "L^{8}_{a=0}[X^{f64,g}_{a}=A^{f64,g}_{a}*2;];"
      "L^{7}_{c=0}[Y^{f64,g}_{c}=X^{f64,g}_{c+1}-X^{f64,g}_{c};];");
  const auto& s = strategy("compute_inline");
  auto sites = s.sites(p);
  ASSERT_EQ(sites.size(), 1u);
  auto c = s.apply(p, sites[0], {});
  ASSERT_TRUE(c);
  EXPECT_EQ(leir::print_body(c->program.body), "L^{7}_{c=0}[Y^{f64,g}_{c}=A^{f64,g}_{c+1}*2-A^{f64,g}_{c}*2;];");
  auto cmp = compare_programs(p, c->program, 3, 0, 0);
  EXPECT_TRUE(cmp.equivalent && cmp.bit_exact) << cmp.detail;
}

TEST(ComputeInline, KeepsAProducerThatIsAnOutput) {
  auto p = parse_program(
      "input A: f64[4,3]\noutput X: f64[4,3]\noutput Y: f64[4]\n"
      "B^{4}_{tx=0}L^{3}_{a=0}[X^{f64,g}_{tx,a}=exp(A^{f64,g}_{tx,a});];"
      "B^{4}_{tx=0}L^{3}_{a=0}[Y^{f64,g}_{tx}=Y^{f64,g}_{tx}+X^{f64,g}_{tx,a};];");
  const auto& s = strategy("compute_inline");
  auto c = s.apply(p, s.sites(p).at(0), {});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->program.body.size(), 2u);
  EXPECT_EQ(leir::print_body({c->program.body[1]}),
            "B^{4}_{tx=0}L^{3}_{a=0}[Y^{f64,g}_{tx}=Y^{f64,g}_{tx}+exp(A^{f64,g}_{tx,a});];");
  EXPECT_EQ(check_all(s, p, 3, 3), 1);
}

TEST(ComputeInline, RefusesReductionsGathersAndOverwrittenOperands) {
  const auto& s = strategy("compute_inline");
  auto red = parse_program(
      "input A: f64[4,8]\noutput Y: f64[4]\n"
      "B^{4}_{tx=0}L^{8}_{a=0}[S^{f64,g}_{tx}=S^{f64,g}_{tx}+A^{f64,g}_{tx,a};];"
      "B^{4}_{tx=0}[Y^{f64,g}_{tx}=S^{f64,g}_{tx}*2;];");
  EXPECT_NE(reason_at(s, red, "producer item 0").find("accumulation"), std::string::npos);
  auto gather = parse_program(
      "input A: f64[8]\ninput I: i64[8]\noutput Y: f64[8]\n"
      "L^{8}_{a=0}[X^{f64,g}_{a}=A^{f64,g}_{a}*2;];L^{8}_{a=0}[Y^{f64,g}_{a}=X^{f64,g}_{I^{i64,g}_{a}};];");
  EXPECT_NE(reason_at(s, gather, "producer item 0").find("gather"), std::string::npos);
  auto overwritten = parse_program(
      "input A: f64[8]\noutput Y: f64[8]\n"
      "L^{8}_{a=0}[W^{f64,g}_{a}=A^{f64,g}_{a};];"
      "L^{8}_{a=0}[X^{f64,g}_{a}=W^{f64,g}_{a}*2;];"
      "L^{8}_{a=0}[W^{f64,g}_{a}=W^{f64,g}_{a}+1;];"
      "L^{8}_{a=0}[Y^{f64,g}_{a}=X^{f64,g}_{a}+W^{f64,g}_{a};];");
  EXPECT_NE(reason_at(s, overwritten, "producer item 1").find("overwritten"), std::string::npos);
  EXPECT_NE(reason_at(s, overwritten, "producer item 0").find("also written"), std::string::npos);
  EXPECT_TRUE(s.sites(overwritten).empty());
}

TEST(ComputeInline, CorpusProgramsVerify) {
  auto corpus = corpus_translator();
  const auto& s = strategy("compute_inline");
  for (const char* w : {"Gemm_Multiply_LeakyReLU", "Conv2d_Multiply_LeakyReLU_GELU", "KLDivLoss", "TripletMarginLoss"}) {
    SCOPED_TRACE(w);
    EXPECT_GT(check_all(s, corpus_program(corpus, w)->program, 1, 2), 0);
  }
}

TEST(ExpressionSplitting, HoistsLoopInvariantWork) {
  auto p = parse_program(
      "input A: f64[4,8]\ninput G: f64[4]\noutput Y: f64[4,8]\n"
      "L^{4}_{a=0}L^{8}_{c=0}[Y^{f64,g}_{a,c}=A^{f64,g}_{a,c}*exp(G^{f64,g}_{a});];");
  const auto& s = strategy("expression_splitting");
  auto sites = s.sites(p);
  ASSERT_EQ(sites.size(), 1u);
  auto space = s.param_space(p, sites[0]);
  ASSERT_EQ(space.size(), 1u);  // exp(G_a); the whole right side is not a split
  EXPECT_EQ(std::get<std::string>(space[0].at("expr")), "exp(G^{f64,g}_{a})");
  auto c = s.apply(p, sites[0], space[0]);
  ASSERT_TRUE(c);
  EXPECT_EQ(leir::print_body(c->program.body),
            "L^{4}_{a=0}[C^{f64,g}_{a}=exp(G^{f64,g}_{a});];"
            "L^{4}_{a=0}L^{8}_{c=0}[Y^{f64,g}_{a,c}=A^{f64,g}_{a,c}*C^{f64,g}_{a};];");
  EXPECT_TRUE(compare_programs(p, c->program, 3, 0, 0).bit_exact);
}

TEST(ExpressionSplitting, NeverHoistsGuardedOrSelfDependentParts) {
  const auto& s = strategy("expression_splitting");
  // A_{a-1} is only read when a >= 1: hoisting the branch would read A_{-1}.
  auto guarded = parse_program(
      "input A: f64[8]\noutput Y: f64[8]\n"
      "L^{8}_{a=0}[Y^{f64,g}_{a}=if_then_else(a<1,0,A^{f64,g}_{a-1}*2);];");
  EXPECT_TRUE(s.sites(guarded).empty());
  // The accumulation's running value is never split off; the term is.
  auto gemm = parse_program(
      "input A: f64[4,8]\ninput C: f64[8,3]\noutput D: f64[4,3]\n"
      "B^{4}_{tx=0}L^{3}_{a=0}L^{8}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];");
  auto space = s.param_space(gemm, s.sites(gemm).at(0));
  ASSERT_EQ(space.size(), 1u);
  EXPECT_EQ(std::get<std::string>(space[0].at("expr")), "A^{f64,g}_{tx,c}*C^{f64,g}_{c,a}");
  EXPECT_EQ(check_all(s, gemm), 1);
}

TEST(CommonSubexpressionElimination, AcrossNestsAndWithinAStatement) {
  auto corpus = corpus_translator();
  const auto& s = strategy("common_subexpression_elimination");
  const auto& p = corpus_program(corpus, "Matmul_Mean_Softmax")->program;
  auto sites = s.sites(p);
  ASSERT_FALSE(sites.empty());
  bool found = false;
  for (const auto& site : sites) found |= site.description.rfind("exp(D^{f64,g}_{tx,a}-I^{f64,g}_{tx}) x2", 0) == 0;
  EXPECT_TRUE(found);
  EXPECT_EQ(check_all(s, p), static_cast<int>(sites.size()));
  // After inlining LeakyReLU's input, C*F occurs three times in one statement.
  auto leaky = parse_program(
      "input C: f64[4,3]\ninput F: f64[]\noutput E: f64[4,3]\n"
      "B^{4}_{tx=0}L^{3}_{a=0}[E^{f64,g}_{tx,a}=if_then_else(C^{f64,g}_{tx,a}*F^{f64,g}<0,"
      "0.1*(C^{f64,g}_{tx,a}*F^{f64,g}),C^{f64,g}_{tx,a}*F^{f64,g});];");
  auto ls = s.sites(leaky);
  ASSERT_EQ(ls.size(), 1u);
  auto c = s.apply(leaky, ls[0], {});
  ASSERT_TRUE(c);
  EXPECT_EQ(leir::print_body(c->program.body),
            "B^{4}_{tx=0}L^{3}_{a=0}[A^{f64,g}_{tx,a}=C^{f64,g}_{tx,a}*F^{f64,g};];"
            "B^{4}_{tx=0}L^{3}_{a=0}[E^{f64,g}_{tx,a}=if_then_else(A^{f64,g}_{tx,a}<0,0.1*A^{f64,g}_{tx,a},A^{f64,g}_{tx,a});];");
  EXPECT_TRUE(compare_programs(leaky, c->program, 3, 0, 0).bit_exact);
}

}  // namespace
}  // namespace steptp::dataflow_test
