// The softmax family: structural recognition, the one-pass forms checked against the input
// program and against PyTorch's stored outputs (corpus MHA/MQA programs), rows masked with -inf,
// including rows masked everywhere (PyTorch and the original program give NaN there), statistics
// that are known outputs or read again, and the memory of the one-pass forms (running values per
// row, not arrays over the reduction axis).
#include <cmath>
#include <tuple>

#include "ir/leir/tensors.h"
#include "ir/leir/validate.h"
#include "ir/leir/values.h"
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

// Scores S, a bool mask (true = masked) and values V; attention of `rows` queries over 4 keys.
leir::Program masked_attention(int rows = 3) {
  return parse_program(fmt::format(
      "input S: f64[{0},4]\ninput K: bool[{0},4]\ninput V: f64[4,2]\noutput O: f64[{0},2]\n"
      "B^{{{0}}}_{{tx=0}}L^{{4}}_{{a=0}}[Y^{{f64,g}}_{{tx,a}}=if_then_else(K^{{bool,g}}_{{tx,a}},-inf,S^{{f64,g}}_{{tx,a}});];"
      "B^{{{0}}}_{{tx=0}}L^{{4}}_{{a=0}}[M^{{f64,g}}_{{tx}}=max(M^{{f64,g}}_{{tx}},Y^{{f64,g}}_{{tx,a}});];"
      "B^{{{0}}}_{{tx=0}}L^{{4}}_{{a=0}}[E^{{f64,g}}_{{tx}}=E^{{f64,g}}_{{tx}}+exp(Y^{{f64,g}}_{{tx,a}}-M^{{f64,g}}_{{tx}});];"
      "B^{{{0}}}_{{tx=0}}L^{{4}}_{{a=0}}[Z^{{f64,g}}_{{tx,a}}=exp(Y^{{f64,g}}_{{tx,a}}-M^{{f64,g}}_{{tx}})/E^{{f64,g}}_{{tx}};];"
      "B^{{{0}}}_{{tx=0}}L^{{2}}_{{c=0}}L^{{4}}_{{a=0}}[O^{{f64,g}}_{{tx,c}}=O^{{f64,g}}_{{tx,c}}+Z^{{f64,g}}_{{tx,a}}*V^{{f64,g}}_{{a,c}};];",
      rows));
}

TEST(Softmax, MaskedRowsIncludingFullyMaskedOnes) {
  auto p = masked_attention(5);
  leir::TensorMap in;
  in["S"] = {leir::DType::F64, {5, 4}, {0.5, -1.0, 2.0, 0.25, 1.0, 3.0, -2.0, 0.0, 0.1, 0.2, 0.3, 0.4,
                                        0.9, 0.8, 0.7, -3.0, -0.5, 4.0, 1.5, 2.0}};
  // Row 0: first key masked (the running max starts at -inf); row 1: all masked; row 2: none;
  // row 3: only the last key left (the sum restarts at the end); row 4: the last keys masked
  // after finite ones (exp(-inf - max) = 0 terms, no restart).
  in["K"] = {leir::DType::Bool, {5, 4}, {1, 0, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1}};
  in["V"] = {leir::DType::F64, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}};
  auto ref = interp::run_program(p, in);
  const auto& o = ref.at("O").data;
  ASSERT_TRUE(std::isnan(o[2]) && std::isnan(o[3]));  // as torch.softmax on an all -inf row
  // Hand-computed row 0: softmax over keys 1 and 3 with scores -1 and 0.25.
  double w1 = std::exp(-1.0 - 0.25), w3 = 1.0;
  EXPECT_NEAR(o[0], (w1 * 3 + w3 * 7) / (w1 + w3), 1e-12);
  EXPECT_EQ(o[6], 7.0);  // row 3: all weight on key 3
  EXPECT_EQ(o[7], 8.0);
  double w0 = std::exp(-0.5 - 4.0);  // row 4: keys 0 and 1
  EXPECT_NEAR(o[8], (w0 * 1 + 3) / (w0 + 1), 1e-12);
  for (const char* name : kFamily) {
    const auto& s = strategy(name);
    auto sites = s.sites(p);
    ASSERT_EQ(sites.size(), 1u) << name;
    auto c = s.apply(p, sites[0], {});
    ASSERT_TRUE(c) << name;
    auto cmp = compare_on(p, c->program, in, 1e-12, 1e-12);
    EXPECT_TRUE(cmp.equivalent) << name << ": " << cmp.detail << "\n" << leir::print_body(c->program.body);
    // The same rows element by element: NaN exactly where the original has it, no unset read
    // (the interpreter refuses those) anywhere in the one pass.
    auto got = interp::run_program(c->program, in).at("O").data;
    for (size_t k = 0; k < o.size(); ++k) EXPECT_EQ(std::isnan(got[k]), std::isnan(o[k])) << name << " O[" << k << "]";
    EXPECT_EQ(got[6], 7.0) << name;
    EXPECT_TRUE(leir::validate_all(c->program).ok()) << name;
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

// The tensor written by the single statement of top-level nest `item`.
std::string flat_nest_stmt_lhs(const leir::Program& p, int item) { return p.body.at(item).nest.body.at(0).stmt.lhs->tensor; }

// Bytes of the tensors a program keeps besides its signature (as `steptp strategy-sweep --results`).
int64_t intermediate_bytes(const leir::Program& p) {
  int64_t bytes = 0;
  for (const auto& [name, t] : leir::build_tensor_table(p).tensors)
    if (!t.known) bytes += t.numel() * leir::byte_size(t.dtype);
  return bytes;
}

TEST(Softmax, RunningValuesPerRowUseLessMemoryThanArrays) {
  auto corpus = corpus_translator();
  struct Case {
    std::string input;
    leir::Program program;
    const char* strategy;
    int64_t array_form;  // intermediate bytes of the result when the running values were arrays over k (0813842)
  };
  std::vector<Case> cases;
  for (auto [name, b40, b41] : {std::tuple{"softmax", 2112, 2048}}) {
    cases.push_back({std::string("example ") + name, example(name), kFamily[1], b40});
    cases.push_back({std::string("example ") + name, example(name), kFamily[2], b41});
  }
  cases.push_back({"masked attention", masked_attention(), kFamily[1], 432});
  cases.push_back({"masked attention", masked_attention(), kFamily[2], 384});
  cases.push_back({"masked attention", masked_attention(), kFamily[3], 504});
  for (auto [name, b40, b41, b42] : {std::tuple{"softmax", 32800, 32768, 0}, std::tuple{"MHA_max", 243224, 240152, 296984},
                                     std::tuple{"MQA_sum", 295448, 291352, 391704}}) {
    const auto* r = corpus_program(corpus, name);
    ASSERT_TRUE(r) << name;
    cases.push_back({std::string("corpus ") + name, r->program, kFamily[1], b40});
    cases.push_back({std::string("corpus ") + name, r->program, kFamily[2], b41});
    if (b42) cases.push_back({std::string("corpus ") + name, r->program, kFamily[3], b42});
  }
  for (const auto& [input, p, name, array_form] : cases) {
    SCOPED_TRACE(std::string(name) + " on " + input);
    const auto& s = strategy(name);
    auto sites = s.sites(p);
    ASSERT_EQ(sites.size(), 1u);
    auto c = s.apply(p, sites[0], {});
    ASSERT_TRUE(c);
    EXPECT_TRUE(leir::validate_all(c->program).ok());
    EXPECT_TRUE(compare_programs(p, c->program, 2, 1e-9, 1e-12).equivalent);
    // One per-row buffer per running value at most: max and sum, and for flash attention the
    // output (kept in the product's own output, so in fact only the previous sum is added).
    auto table = leir::build_tensor_table(p);
    const auto& stat = table.at(flat_nest_stmt_lhs(p, sites[0].path.at(0)));
    int64_t row = stat.numel() * leir::byte_size(stat.dtype);
    int running = std::string(name) == kFamily[3] ? 3 : 2;
    int64_t before = intermediate_bytes(p), after = intermediate_bytes(c->program);
    EXPECT_LT(after, array_form);
    EXPECT_LE(after, before + running * row);
    std::printf("%-58s %-18s intermediate bytes: input %7lld, arrays %7lld, per row %7lld\n", name, input.c_str(),
                static_cast<long long>(before), static_cast<long long>(array_form), static_cast<long long>(after));
  }
}

TEST(Softmax, KnownOrReusedStatisticsKeepTheirValues) {
  // The statistics are outputs too: written in place by the one pass, they end as the reductions'.
  auto known = parse_program(
      "input X: f64[3,5]\noutput M: f64[3]\noutput S: f64[3]\noutput Z: f64[3,5]\n"
      "B^{3}_{tx=0}L^{5}_{k=0}[M^{f64,g}_{tx}=max(M^{f64,g}_{tx},X^{f64,g}_{tx,k});];"
      "B^{3}_{tx=0}L^{5}_{k=0}[S^{f64,g}_{tx}=S^{f64,g}_{tx}+exp(X^{f64,g}_{tx,k}-M^{f64,g}_{tx});];"
      "B^{3}_{tx=0}L^{5}_{k=0}[Z^{f64,g}_{tx,k}=exp(X^{f64,g}_{tx,k}-M^{f64,g}_{tx})/S^{f64,g}_{tx};];");
  // Intermediate statistics read again after the normalization (a log-sum-exp beside the softmax).
  auto reused = parse_program(
      "input X: f64[3,5]\noutput L: f64[3]\noutput Z: f64[3,5]\n"
      "B^{3}_{tx=0}L^{5}_{k=0}[M^{f64,g}_{tx}=max(M^{f64,g}_{tx},X^{f64,g}_{tx,k});];"
      "B^{3}_{tx=0}L^{5}_{k=0}[S^{f64,g}_{tx}=S^{f64,g}_{tx}+exp(X^{f64,g}_{tx,k}-M^{f64,g}_{tx});];"
      "B^{3}_{tx=0}L^{5}_{k=0}[Z^{f64,g}_{tx,k}=exp(X^{f64,g}_{tx,k}-M^{f64,g}_{tx})/S^{f64,g}_{tx};];"
      "B^{3}_{tx=0}[L^{f64,g}_{tx}=log(S^{f64,g}_{tx})+M^{f64,g}_{tx};];");
  for (const auto* p : {&known, &reused})
    for (const char* name : {kFamily[1], kFamily[2]}) {
      SCOPED_TRACE(name);
      std::vector<strategies::Candidate> kept;
      EXPECT_EQ(check_all(strategy(name), *p, 3, 4, &kept), 1);
      // No copy nest: the fused pass (41: with the normalization inside) and what followed it.
      if (!kept.empty()) EXPECT_EQ(kept[0].program.body.size(), p->body.size() - (std::string(name) == kFamily[1] ? 1 : 2));
    }
  // Flash attention whose row maximum is an output too.
  auto p = masked_attention();
  leir::TensorDecl m;
  m.name = "M";
  m.role = leir::Role::Output;
  m.shape = {3};
  p.known.push_back(m);
  EXPECT_EQ(check_all(strategy(kFamily[3]), p, 3, 4), 1);
}

TEST(Softmax, OnlineSoftmaxNeedsTheNormalizationInsideTheRowLoops) {
  const auto& online = strategy("online_softmax");
  const auto& sum = strategy("normal_loop_summation_on_exp_to_prefix_summation_on_exp");
  auto with_norm = [](const std::string& norm) {
    return parse_program(
        "input A: f64[4,8]\noutput Z: f64[4,8]\n"
        "B^{4}_{tx=0}L^{8}_{a=0}[M^{f64,g}_{tx}=max(M^{f64,g}_{tx},A^{f64,g}_{tx,a});];"
        "B^{4}_{tx=0}L^{8}_{a=0}[S^{f64,g}_{tx}=S^{f64,g}_{tx}+exp(A^{f64,g}_{tx,a}-M^{f64,g}_{tx});];" + norm);
  };
  // Row tx reads the statistics of row 3-tx, not final when row tx is done.
  auto other_row = with_norm("B^{4}_{tx=0}L^{8}_{a=0}[Z^{f64,g}_{tx,a}=exp(A^{f64,g}_{tx,a}-M^{f64,g}_{3-tx})/S^{f64,g}_{3-tx};];");
  // The normalization's loops are swapped: it does not run inside the statistics' row loop.
  auto swapped = with_norm("L^{8}_{a=0}B^{4}_{tx=0}[Z^{f64,g}_{tx,a}=exp(A^{f64,g}_{tx,a}-M^{f64,g}_{tx})/S^{f64,g}_{tx};];");
  for (const auto& [p, why] : {std::pair{other_row, "statistics of other rows"}, std::pair{swapped, "loops around the reduction loop"}}) {
    EXPECT_TRUE(online.sites(p).empty());
    auto r = online.explain(p);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_NE(r[0].reason.find(why), std::string::npos) << r[0].reason;
    EXPECT_EQ(check_all(sum, p, 3, 4), 1);  // 40 fuses the reductions whatever reads them
  }
  // A softmax over a middle axis shares the loops outside it (the channel softmax of a convolution).
  auto channels = parse_program(
      "input A: f64[2,3,4]\noutput Z: f64[2,3,4]\n"
      "B^{2}_{tx=0}L^{3}_{a=0}L^{4}_{c=0}[M^{f64,g}_{tx,c}=max(M^{f64,g}_{tx,c},A^{f64,g}_{tx,a,c});];"
      "B^{2}_{tx=0}L^{3}_{a=0}L^{4}_{c=0}[S^{f64,g}_{tx,c}=S^{f64,g}_{tx,c}+exp(A^{f64,g}_{tx,a,c}-M^{f64,g}_{tx,c});];"
      "B^{2}_{tx=0}L^{3}_{a=0}L^{4}_{c=0}[Z^{f64,g}_{tx,a,c}=exp(A^{f64,g}_{tx,a,c}-M^{f64,g}_{tx,c})/S^{f64,g}_{tx,c};];");
  std::vector<strategies::Candidate> kept;
  EXPECT_EQ(check_all(online, channels, 3, 4, &kept), 1);
  ASSERT_EQ(kept.size(), 1u);
  ASSERT_EQ(kept[0].program.body.size(), 1u);
  EXPECT_EQ(kept[0].program.body[0].nest.loops.size(), 1u);  // B^{2}_{tx}[pass; normalization]
  EXPECT_EQ(kept[0].program.body[0].nest.body.size(), 2u);
}

}  // namespace
}  // namespace steptp::dataflow_test
