// tensor_concat_to_fuse_operators, tensor_split_to_decouple_operators,
// partially_equivalent_then_correct.
#include "strategies/dataflow_check.h"

namespace steptp::dataflow_test {
namespace {

using strategies::Params;

TEST(TensorConcat, ConcatenatesAlongTheAxisAndSharesTheRest) {
  auto corpus = corpus_translator();
  const auto& s = strategy("tensor_concat_to_fuse_operators");
  // TripletMarginLoss: two squared distances from the same anchor A; conv1d_conv1d: two
  // convolutions with the same weights (shared, not copied).
  for (const char* w : {"TripletMarginLoss", "conv1d_conv1d", "MatMul4D_MatMul4D"}) {
    SCOPED_TRACE(w);
    const auto& p = corpus_program(corpus, w)->program;
    auto sites = s.sites(p);
    ASSERT_FALSE(sites.empty());
    EXPECT_GT(check_all(s, p, 3, 2), 0);
  }
  const auto& conv = corpus_program(corpus, "conv1d_conv1d")->program;
  auto site = s.sites(conv).at(0);
  auto c = s.apply(conv, site, Params{{"axis", std::string("tx")}});
  ASSERT_TRUE(c);
  std::string text = leir::print_body(c->program.body);
  EXPECT_NE(text.find("L^{8}_{a=0}L^{62}_{c=0}L^{3}_{d=0}L^{3}_{f=0}"), std::string::npos);
  EXPECT_NE(text.find("B^{4}_{tx=0}"), std::string::npos);  // batch 2 + 2
  // The weights G are read directly by the one convolution, never copied.
  EXPECT_EQ(text.find("=G^{f64,g}_{tx"), std::string::npos);
}

TEST(TensorConcat, RefusesDifferentSkeletonsAndUnsharedBroadcasts) {
  const auto& s = strategy("tensor_concat_to_fuse_operators");
  auto p = parse_program(
      "input A: f64[4,3]\ninput C: f64[4,3]\ninput G: f64[3]\ninput H: f64[3]\noutput D: f64[4,3]\noutput E: f64[4,3]\n"
      "B^{4}_{tx=0}L^{3}_{a=0}[D^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}*G^{f64,g}_{a};];"
      "B^{4}_{tx=0}L^{3}_{a=0}[E^{f64,g}_{tx,a}=C^{f64,g}_{tx,a}*H^{f64,g}_{a};];");
  // Along tx, G and H are not indexed by tx but differ; along a they are concatenated.
  auto sites = s.sites(p);
  ASSERT_EQ(sites.size(), 1u);
  auto space = s.param_space(p, sites[0]);
  ASSERT_EQ(space.size(), 1u);
  EXPECT_EQ(std::get<std::string>(space[0].at("axis")), "a");
  EXPECT_EQ(check_all(s, p, 3, 3), 1);
  auto other = parse_program(
      "input A: f64[4,3]\ninput C: f64[4,3]\noutput D: f64[4,3]\noutput E: f64[4,3]\n"
      "B^{4}_{tx=0}L^{3}_{a=0}[D^{f64,g}_{tx,a}=exp(A^{f64,g}_{tx,a});];"
      "B^{4}_{tx=0}L^{3}_{a=0}[E^{f64,g}_{tx,a}=log(C^{f64,g}_{tx,a});];");
  EXPECT_TRUE(s.sites(other).empty());
}

TEST(TensorSplit, SpatialSplitIsExactAndReductionSplitCombinesOnce) {
  auto corpus = corpus_translator();
  const auto& s = strategy("tensor_split_to_decouple_operators");
  const auto& scal = corpus_program(corpus, "Matrix_scalar_multiplication")->program;
  auto c = s.apply(scal, s.sites(scal).at(0), Params{{"axis", std::string("a")}, {"split", int64_t{13}}});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->exactness, strategies::Exactness::Exact);
  EXPECT_TRUE(compare_programs(scal, c->program, 3, 0, 0).bit_exact);
  // conv with a reduction over (d, f): splitting f must combine each output once (the public
  // engine added the partials once per remaining reduction iteration).
  const auto& conv = corpus_program(corpus, "conv1d_conv1d")->program;
  auto rc = s.apply(conv, {{0}, {}, ""}, Params{{"axis", std::string("f")}, {"split", int64_t{1}}});
  ASSERT_TRUE(rc);
  EXPECT_EQ(rc->exactness, strategies::Exactness::Reassoc);
  auto cmp = compare_programs(conv, rc->program, 2, 1e-12, 1e-12);
  EXPECT_TRUE(cmp.equivalent) << cmp.detail;
  EXPECT_NE(leir::print_body(rc->program.body).find("B^{2}_{tx=0}L^{8}_{a=0}L^{62}_{c=0}[D^{f64,g}_{tx,a,c}="),
            std::string::npos);
  // Max reductions split exactly.
  auto mx = parse_program(
      "input A: f64[4,9]\noutput M: f64[4]\nB^{4}_{tx=0}L^{9}_{a=0}[M^{f64,g}_{tx}=max(M^{f64,g}_{tx},A^{f64,g}_{tx,a});];");
  EXPECT_EQ(check_all(s, mx, 9, 3), 6);  // tx at 2, 1, 3 (spatial) and a at 4, 2, 7 (reduction)
  // A scan carries a recurrence along its axis: splitting it there would restart the scan.
  auto scan = parse_program(
      "input A: f64[2,8]\noutput C: f64[2,8]\n"
      "B^{2}_{tx=0}L^{8}_{a=0}[C^{f64,g}_{tx,a}=if_then_else(a<1,0,C^{f64,g}_{tx,a-1})+A^{f64,g}_{tx,a};];");
  EXPECT_TRUE(s.sites(scan).empty());
  ASSERT_EQ(s.explain(scan).size(), 1u);
  EXPECT_NE(s.explain(scan)[0].reason.find("recurrence"), std::string::npos);
  for (const char* w : {"MatMul4D_MatMul4D", "TripletMarginLoss", "Conv2d_Subtract_Subtract_Mish"}) {
    SCOPED_TRACE(w);
    EXPECT_GT(check_all(s, corpus_program(corpus, w)->program, 2, 1), 0);
  }
}

// An intermediate set only where the nest reads it (a cache of a slice) is copied over that
// footprint, never whole: a whole copy reads unset elements (found by the 500-composition sweep,
// after cache_read_write staged G_{tx,a,d+5}). A sparse footprint is read in place.
TEST(TensorSplit, CopiesOnlyTheFootprintOfPartlyWrittenIntermediates) {
  const auto& s = strategy("tensor_split_to_decouple_operators");
  auto p = parse_program(
      "input H: f64[6,7]\noutput K: f64[6]\n"
      "L^{6}_{a=0}L^{2}_{d=0}[G^{f64,l}_{a,d+5}=H^{f64,g}_{a,d+5};];"
      "L^{6}_{a=0}L^{2}_{d=0}[K^{f64,g}_{a}=K^{f64,g}_{a}+G^{f64,l}_{a,d+5}*2;];");
  auto c = s.apply(p, {{1}, {}, ""}, Params{{"axis", std::string("a")}, {"split", int64_t{3}}});
  ASSERT_TRUE(c);
  std::string text = leir::print_body(c->program.body);
  // The copies of each half cover d+5 in 5..6 only.
  EXPECT_NE(text.find("B^{3}_{tx=0}L^{2}_{a=0}[A^{f64,l}_{tx,a+5}=G^{f64,l}_{tx,a+5};]"), std::string::npos) << text;
  EXPECT_NE(text.find("B^{3}_{tx=0}L^{2}_{a=0}[C^{f64,l}_{tx,a+5}=G^{f64,l}_{tx+3,a+5};]"), std::string::npos) << text;
  auto cmp = compare_programs(p, c->program, 3, 0, 0);
  EXPECT_TRUE(cmp.equivalent && cmp.bit_exact) << cmp.detail << "\n" << text;
  EXPECT_EQ(check_all(s, p, 5, 2), 4);  // a at 3, 1, 5 (spatial) and d at 1 (reduction)
  // Strided reads of a strided intermediate: no dense footprint, G is read in place.
  auto strided = parse_program(
      "input H: f64[8]\noutput K: f64[4]\n"
      "L^{4}_{a=0}[G^{f64,g}_{a*2}=H^{f64,g}_{a*2};];"
      "L^{4}_{a=0}[K^{f64,g}_{a}=G^{f64,g}_{a*2}+1;];");
  for (const auto& site : s.sites(strided))
    for (const auto& params : s.param_space(strided, site)) {
      auto r = s.apply(strided, site, params);
      ASSERT_TRUE(r);
      EXPECT_TRUE(compare_programs(strided, r->program, 2, 0, 0).equivalent) << leir::print_body(r->program.body);
    }
}

TEST(PartiallyEquivalentThenCorrect, ConvolutionsWithPaddingOnTwoInputs) {
  auto corpus = corpus_translator();
  const auto& s = strategy("partially_equivalent_then_correct");
  const auto& p = corpus_program(corpus, "conv2d_conv2d_padding")->program;
  auto sites = s.sites(p);
  ASSERT_EQ(sites.size(), 1u);
  auto space = s.param_space(p, sites[0]);
  ASSERT_EQ(space.size(), 2u);  // the two padded spatial axes
  for (const auto& params : space) {
    auto c = s.apply(p, sites[0], params);
    ASSERT_TRUE(c);
    auto cmp = compare_programs(p, c->program, 3, 0, 0);
    EXPECT_TRUE(cmp.equivalent && cmp.bit_exact) << cmp.detail << "\n" << leir::print_body(c->program.body);
    // Stored inputs: the result equals PyTorch's output.
    auto inputs = leir::values_from_json(corpus_program(corpus, "conv2d_conv2d_padding")->raw["inputs"]);
    auto torch = leir::values_from_json(corpus_program(corpus, "conv2d_conv2d_padding")->raw["pytorch_output"]);
    auto got = interp::run_program(c->program, inputs);
    for (const auto& [name, v] : torch)
      for (size_t k = 0; k < v.data.size(); ++k) ASSERT_TRUE(close(got.at(name).data[k], v.data[k], 1e-9, 1e-9));
  }
  // Different weights: not one convolution.
  std::string text = leir::print_body(p.body);
  auto pos = text.rfind("*G^{f64,g}");
  auto q = p;
  q.body = leir::parse_body(text.substr(0, pos) + "*Gw^{f64,g}" + text.substr(pos + 10));
  q.known.push_back(*q.find_known("G"));
  q.known.back().name = "Gw";
  EXPECT_TRUE(s.sites(q).empty());
  auto why = s.explain(q);
  ASSERT_FALSE(why.empty());
  EXPECT_NE(why[0].reason.find("different weights"), std::string::npos) << why[0].reason;
}

}  // namespace
}  // namespace steptp::dataflow_test
