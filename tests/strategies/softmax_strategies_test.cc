// The softmax family: structural recognition, the one-pass forms checked against the input
// program and against PyTorch's stored outputs (corpus MHA/MQA programs), and rows masked with
// -inf, including rows masked everywhere (PyTorch and the original program give NaN there).
#include <cmath>

#include "leir/values.h"
#include "strategies/dataflow_check.h"

namespace steptp::dataflow_test {
namespace {

const char* kFamily[] = {"normal_loop_max_to_prefix_max", "normal_loop_summation_on_exp_to_prefix_summation_on_exp",
                         "online_softmax", "flashattention_wo_tiling"};

TEST(Softmax, OnlineSoftmaxOfThePublicExample) {
  auto p = example("softmax");
  const auto& s = strategy("online_softmax");
  auto sites = s.sites(p);
  ASSERT_EQ(sites.size(), 1u);
  auto c = s.apply(p, sites[0], {});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->exactness, strategies::Exactness::Reassoc);
  // Per row: the previous max F, the max D and the rescaled sum E updated in place along a, then
  // the normalization of that row (the public output, example online_softmax, kept arrays over a).
  const std::string pass =
      "L^{32}_{a=0}[F^{f64,g}_{tx}=if_then_else(a-1<0,-inf,D^{f64,g}_{tx});D^{f64,g}_{tx}=max(D^{f64,g}_{tx},A^{f64,g}_{tx,a});"
      "E^{f64,g}_{tx}=if_then_else(F^{f64,g}_{tx}==-inf,0,E^{f64,g}_{tx}*exp(F^{f64,g}_{tx}-D^{f64,g}_{tx}))"
      "+exp(A^{f64,g}_{tx,a}-D^{f64,g}_{tx});];";
  const std::string norm = "L^{32}_{a=0}[C^{f64,g}_{tx,a}=exp(A^{f64,g}_{tx,a}-D^{f64,g}_{tx})/E^{f64,g}_{tx};];";
  EXPECT_EQ(leir::print_body(c->program.body), "B^{4}_{tx=0}[" + pass + norm + "];");
  // 40 fuses the two reductions only: the same pass where the sum was, the normalization untouched.
  const auto& sum = strategy("normal_loop_summation_on_exp_to_prefix_summation_on_exp");
  auto c40 = sum.apply(p, sum.sites(p).at(0), {});
  ASSERT_TRUE(c40);
  EXPECT_EQ(leir::print_body(c40->program.body), "B^{4}_{tx=0}" + pass + "B^{4}_{tx=0}" + norm);
  for (const char* name : kFamily) {
    SCOPED_TRACE(name);
    EXPECT_EQ(check_all(strategy(name), p, 3, 4), std::string(name) == "flashattention_wo_tiling" ? 0 : 1);
  }
  // An already-online softmax has no max reduction left to rewrite.
  for (const char* name : kFamily) EXPECT_TRUE(strategy(name).sites(example("online_softmax")).empty()) << name;
}

TEST(Softmax, PrefixMaxIsExact) {
  auto p = example("softmax");
  const auto& s = strategy("normal_loop_max_to_prefix_max");
  auto c = s.apply(p, s.sites(p).at(0), {});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->exactness, strategies::Exactness::Exact);
  auto cmp = compare_programs(p, c->program, 4, 0, 0);
  EXPECT_TRUE(cmp.equivalent && cmp.bit_exact) << cmp.detail;
}

TEST(Softmax, RecognizesStructureNotNames) {
  // A sum of exp(x - M) where x differs from the reduced value is not a softmax statistic.
  auto p = parse_program(
      "input A: f64[4,8]\ninput C: f64[4,8]\noutput S: f64[4]\n"
      "B^{4}_{tx=0}L^{8}_{a=0}[Q^{f64,g}_{tx}=max(Q^{f64,g}_{tx},A^{f64,g}_{tx,a});];"
      "B^{4}_{tx=0}L^{8}_{a=0}[S^{f64,g}_{tx}=S^{f64,g}_{tx}+exp(C^{f64,g}_{tx,a}-Q^{f64,g}_{tx});];");
  const auto& s = strategy("normal_loop_summation_on_exp_to_prefix_summation_on_exp");
  EXPECT_TRUE(s.sites(p).empty());
  auto why = s.explain(p);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].reason.find("same x"), std::string::npos) << why[0].reason;
  // Renamed tensors and variables, the statistics read by a log (log-sum-exp): still recognized.
  auto lse = parse_program(
      "input X: f64[3,5]\noutput Y: f64[3]\n"
      "B^{3}_{tx=0}L^{5}_{k=0}[W^{f64,g}_{tx}=max(X^{f64,g}_{tx,k},W^{f64,g}_{tx});];"
      "B^{3}_{tx=0}L^{5}_{k=0}[R^{f64,g}_{tx}=exp(X^{f64,g}_{tx,k}-W^{f64,g}_{tx})+R^{f64,g}_{tx};];"
      "B^{3}_{tx=0}[Y^{f64,g}_{tx}=log(R^{f64,g}_{tx})+W^{f64,g}_{tx};];");
  EXPECT_EQ(check_all(s, lse, 3, 4), 1);
  EXPECT_EQ(check_all(strategy("online_softmax"), lse, 3, 4), 1);
}

// Scores S, a bool mask (true = masked) and values V; attention over 4 keys.
leir::Program masked_attention() {
  return parse_program(
      "input S: f64[3,4]\ninput K: bool[3,4]\ninput V: f64[4,2]\noutput O: f64[3,2]\n"
      "B^{3}_{tx=0}L^{4}_{a=0}[Y^{f64,g}_{tx,a}=if_then_else(K^{bool,g}_{tx,a},-inf,S^{f64,g}_{tx,a});];"
      "B^{3}_{tx=0}L^{4}_{a=0}[M^{f64,g}_{tx}=max(M^{f64,g}_{tx},Y^{f64,g}_{tx,a});];"
      "B^{3}_{tx=0}L^{4}_{a=0}[E^{f64,g}_{tx}=E^{f64,g}_{tx}+exp(Y^{f64,g}_{tx,a}-M^{f64,g}_{tx});];"
      "B^{3}_{tx=0}L^{4}_{a=0}[Z^{f64,g}_{tx,a}=exp(Y^{f64,g}_{tx,a}-M^{f64,g}_{tx})/E^{f64,g}_{tx};];"
      "B^{3}_{tx=0}L^{2}_{c=0}L^{4}_{a=0}[O^{f64,g}_{tx,c}=O^{f64,g}_{tx,c}+Z^{f64,g}_{tx,a}*V^{f64,g}_{a,c};];");
}

TEST(Softmax, MaskedRowsIncludingFullyMaskedOnes) {
  auto p = masked_attention();
  leir::TensorMap in;
  in["S"] = {leir::DType::F64, {3, 4}, {0.5, -1.0, 2.0, 0.25, 1.0, 3.0, -2.0, 0.0, 0.1, 0.2, 0.3, 0.4}};
  // Row 0: first key masked (the running max starts at -inf); row 1: all masked; row 2: none.
  in["K"] = {leir::DType::Bool, {3, 4}, {1, 0, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0}};
  in["V"] = {leir::DType::F64, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}};
  auto ref = interp::run_program(p, in);
  const auto& o = ref.at("O").data;
  ASSERT_TRUE(std::isnan(o[2]) && std::isnan(o[3]));  // as torch.softmax on an all -inf row
  // Hand-computed row 0: softmax over keys 1 and 3 with scores -1 and 0.25.
  double w1 = std::exp(-1.0 - 0.25), w3 = 1.0;
  EXPECT_NEAR(o[0], (w1 * 3 + w3 * 7) / (w1 + w3), 1e-12);
  for (const char* name : kFamily) {
    const auto& s = strategy(name);
    auto sites = s.sites(p);
    ASSERT_EQ(sites.size(), 1u) << name;
    auto c = s.apply(p, sites[0], {});
    ASSERT_TRUE(c) << name;
    auto cmp = compare_on(p, c->program, in, 1e-12, 1e-12);
    EXPECT_TRUE(cmp.equivalent) << name << ": " << cmp.detail << "\n" << leir::print_body(c->program.body);
    // Seeded inputs with random masks too (rows of 4 keys are often fully masked).
    EXPECT_TRUE(compare_programs(p, c->program, 4, 1e-9, 1e-12).equivalent) << name;
  }
}

TEST(Softmax, FlashAttentionOnCorpusMultiHeadAttentionMatchesPyTorch) {
  auto corpus = corpus_translator();
  const auto& s = strategy("flashattention_wo_tiling");
  int checked = 0;
  for (const char* w : {"MHA_max", "MQA_sum", "MHA_Gemm_GeLU"}) {
    const auto* r = corpus_program(corpus, w);
    ASSERT_TRUE(r) << w;
    auto sites = s.sites(r->program);
    ASSERT_EQ(sites.size(), 1u) << w;
    auto c = s.apply(r->program, sites[0], {});
    ASSERT_TRUE(c);
    auto inputs = leir::values_from_json(r->raw["inputs"]);
    auto torch = leir::values_from_json(r->raw["pytorch_output"]);
    auto got = interp::run_program(c->program, inputs);
    for (const auto& [name, v] : torch) {
      const auto& g = got.at(name).data;
      ASSERT_EQ(g.size(), v.data.size());
      for (size_t k = 0; k < g.size(); ++k) ASSERT_TRUE(close(g[k], v.data[k], 1e-6, 1e-9)) << w << " " << name << "[" << k << "]";
    }
    auto cmp = compare_on(r->program, c->program, inputs, 1e-9, 1e-12);
    EXPECT_TRUE(cmp.equivalent) << w << ": " << cmp.detail;
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

TEST(Softmax, SummationOnExpOnCorpusMatchesOriginal) {
  auto corpus = corpus_translator();
  const auto* r = corpus_program(corpus, "MQA_Gemm_GeLU");
  ASSERT_TRUE(r);
  for (const char* name : kFamily) {
    SCOPED_TRACE(name);
    EXPECT_EQ(check_all(strategy(name), r->program, 3, 2), 1);
  }
}

}  // namespace
}  // namespace steptp::dataflow_test
