// The evidence rule and domain-aware inputs (LEIR.md §5, issue 11): agreement on NaN = NaN is no
// evidence. The `log_log` program of the issue (two log producers feeding a batched matmul) and
// its sqrt twin were accepted with the reduction shortened 16 -> 15 because every seeded input
// made every output NaN; they must be rejected now, and a program whose outputs are NaN on every
// input set must come out inconclusive, never equivalent.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ir/interp/inputs.h"
#include "ir/leir/program_io.h"
#include "ir/verify/verifier.h"
#include "error_kind.h"

using namespace steptp;
using verify::Verdict;

namespace {

leir::Program text(const std::string& t) { return leir::program_from_text(t, "t.leir"); }

// Two `f` producers feeding a batched matmul, f64 [2,8,16] x [2,16,32]; `k` is the extent of
// the reduction loop (16 is right).
leir::Program producers_into_bmm(const std::string& f, int k) {
  return text(
      "input A: f64[2,8,16]\ninput C: f64[2,16,32]\noutput D: f64[2,8,32]\n"
      "B^{2}_{bx=0}L^{8}_{a=0}L^{16}_{c=0}[E^{f64,g}_{bx,a,c}=" + f + "(A^{f64,g}_{bx,a,c});];"
      "B^{2}_{bx=0}L^{16}_{c=0}L^{32}_{d=0}[F^{f64,g}_{bx,c,d}=" + f + "(C^{f64,g}_{bx,c,d});];"
      "B^{2}_{bx=0}L^{8}_{a=0}L^{32}_{d=0}L^{" + std::to_string(k) +
      "}_{c=0}[D^{f64,g}_{bx,a,d}=D^{f64,g}_{bx,a,d}+E^{f64,g}_{bx,a,c}*F^{f64,g}_{bx,c,d};];");
}

}  // namespace

class ShortenedReduction : public ::testing::TestWithParam<std::string> {};

TEST_P(ShortenedReduction, IsRejected) {
  auto right = producers_into_bmm(GetParam(), 16);
  auto wrong = producers_into_bmm(GetParam(), 15);
  auto self = verify::verify(right, right);
  EXPECT_TRUE(self.equivalent) << self.error;
  EXPECT_EQ(self.verdict, Verdict::Exact);
  EXPECT_GE(self.evidential, 1);
  auto r = verify::verify(right, wrong);
  EXPECT_FALSE(r.equivalent) << verify::to_json(r);
  EXPECT_EQ(r.verdict, Verdict::Failed);
  ASSERT_TRUE(r.worst.has_value());
  EXPECT_EQ(r.worst->tensor, "D");
  // One trial suffices: the first input set is in-domain.
  verify::VerifyOptions one;
  one.trials = 1;
  auto r1 = verify::verify(right, wrong, one);
  EXPECT_EQ(r1.verdict, Verdict::Failed) << verify::to_json(r1);
  EXPECT_EQ(r1.evidential, 1);
  // The inputs the old verifier drew (signed, U(-1,1)) make every output NaN in both programs:
  // that is no evidence, so not "equivalent" any more.
  auto ordinary = interp::generate_inputs(right, 0, interp::InputProfile::Ordinary);
  auto vacuous = verify::verify(right, wrong, std::vector<leir::TensorMap>{ordinary});
  EXPECT_FALSE(vacuous.equivalent);
  EXPECT_EQ(vacuous.verdict, Verdict::Inconclusive) << verify::to_json(vacuous);
  EXPECT_EQ(vacuous.evidential, 0);
  EXPECT_EQ(vacuous.finite_share, 0.0);
}

INSTANTIATE_TEST_SUITE_P(LogAndSqrt, ShortenedReduction, ::testing::Values("log", "sqrt"));

TEST(Evidence, OutputsNanOnEveryInputAreInconclusive) {
  // log of a negative number on every input: NaN everywhere, in both programs.
  auto a = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=log(-1-A^{f64,g}_{a}*A^{f64,g}_{a});];");
  auto b = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=log(-2-A^{f64,g}_{a}*A^{f64,g}_{a});];");
  for (const auto* other : {&a, &b}) {
    auto r = verify::verify(a, *other);
    EXPECT_FALSE(r.equivalent);
    EXPECT_EQ(r.verdict, Verdict::Inconclusive);
    EXPECT_EQ(r.trials, 4);
    EXPECT_EQ(r.evidential, 0);
    EXPECT_NE(r.error.find("inconclusive: no trial gave evidence"), std::string::npos) << r.error;
    auto j = nlohmann::json::parse(verify::to_json(r));
    EXPECT_EQ(j["class"], "inconclusive");
    EXPECT_EQ(j["equivalent"], false);
    EXPECT_EQ(j["finite_share"], 0.0);
  }
}

TEST(Evidence, NanPositionsMustStillAgree) {
  // Mostly NaN (3 of 4 elements), and the candidate makes one of the NaNs a number.
  auto a = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=if_then_else(a==0,A^{f64,g}_{a},"
                "log(-1-A^{f64,g}_{a}*A^{f64,g}_{a}));];");
  auto b = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=if_then_else(a<=1,A^{f64,g}_{a},"
                "log(-1-A^{f64,g}_{a}*A^{f64,g}_{a}));];");
  auto r = verify::verify(a, b);
  EXPECT_EQ(r.verdict, Verdict::Failed) << verify::to_json(r);
  ASSERT_TRUE(r.worst.has_value());
  EXPECT_EQ(r.worst->index, std::vector<int64_t>{1});
}

TEST(Evidence, HalfFiniteIsEvidence) {
  // A causal-mask-like output: half the elements -inf by design, the other half finite.
  auto a = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=if_then_else(a<2,A^{f64,g}_{a},-inf);];");
  auto r = verify::verify(a, a);
  EXPECT_TRUE(r.equivalent) << r.error;
  EXPECT_EQ(r.evidential, 4);
  EXPECT_DOUBLE_EQ(r.finite_share, 0.5);
  // One finite element of four is not.
  auto m = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=if_then_else(a<1,A^{f64,g}_{a},-inf);];");
  auto rm = verify::verify(m, m);
  EXPECT_EQ(rm.verdict, Verdict::Inconclusive);
  EXPECT_DOUBLE_EQ(rm.finite_share, 0.25);
}

TEST(Evidence, CallerGivenInDomainInputsAreEvidence) {
  auto right = producers_into_bmm("log", 16);
  auto inputs = interp::generate_inputs(right, 5, interp::InputProfile::Domain);
  for (const auto& [name, v] : inputs)
    for (double x : v.data) ASSERT_GT(x, 0.0) << name;
  auto r = verify::verify(right, producers_into_bmm("log", 15), std::vector<leir::TensorMap>{inputs});
  EXPECT_EQ(r.verdict, Verdict::Failed);
  auto same = verify::verify(right, right, std::vector<leir::TensorMap>{inputs});
  EXPECT_TRUE(same.equivalent);
  EXPECT_EQ(same.evidential, 1);
  EXPECT_DOUBLE_EQ(same.finite_share, 1.0);
}

// A report stored as JSON (the tuner's verdict facts, search/tune/observations.h) reads back to the same
// report: a failed one with its worst element, an exact one without, and an inconclusive one
// whose finite share is zero; malformed objects are clear errors.
TEST(ReportJson, RoundTripsAndRejectsMalformedObjects) {
  auto right = producers_into_bmm("log", 16);
  auto wrong = producers_into_bmm("log", 15);
  auto ordinary = interp::generate_inputs(right, 0, interp::InputProfile::Ordinary);
  for (const auto& r : {verify::verify(right, wrong), verify::verify(right, right),
                        verify::verify(right, wrong, std::vector<leir::TensorMap>{ordinary})}) {
    const std::string j = verify::to_json(r);
    const auto back = verify::report_from_json(j);
    EXPECT_EQ(verify::to_json(back), j);
    EXPECT_EQ(back.equivalent, r.equivalent);
    EXPECT_EQ(back.verdict, r.verdict);
    EXPECT_EQ(back.worst.has_value(), r.worst.has_value());
  }
  // A stored report that does not read back is invalid input.
  const auto invalid = steptp::base::ErrorKind::Invalid;
  EXPECT_EQ(steptp::testing::thrown_kind([] { verify::report_from_json("{}"); }), invalid);
  EXPECT_EQ(steptp::testing::thrown_kind([] {
              verify::report_from_json(R"({"equivalent":true,"class":"maybe","trials":1,"evidential":1,)"
                                       R"("finite_share":1,"worst":null})");
            }),
            invalid);
  EXPECT_EQ(steptp::testing::thrown_kind([] { verify::report_from_json("not json"); }), invalid);
}
