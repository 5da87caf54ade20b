// The roofline statement (search/tune/roofline.h): the bytes every equivalent program moves and its
// operations, hand-counted on known programs; the shares derived from a copy time; and the
// CPU runner's copy, which is a timing (the fake and model runners give none).
#include <gtest/gtest.h>

#include "ir/leir/program_io.h"
#include "search/tune/roofline.h"
#include "search/tune/runner.h"

namespace steptp::tune {
namespace {

// lerp with a per-column weight and a constant scale: O = A + W * (B - A) * K over 64 x 32 f32.
const char* kLerp =
    "input A: f32[64,32]\ninput B: f32[64,32]\nparam W: f32[32]\nconstant K: f32[32]\noutput O: f32[64,32]\n"
    "B^{64}_{tx=0}L^{32}_{a=0}[O^{f32,g}_{tx,a}=A^{f32,g}_{tx,a}+W^{f32,g}_{a}*(B^{f32,g}_{tx,a}-A^{f32,g}_{tx,a})*"
    "K^{f32,g}_{a};];";

TEST(Roofline, LerpMovesItsInputsAndParamsOnceButNotItsConstants) {
  const ProgramTraffic t = program_traffic(leir::program_from_text(kLerp, "lerp.leir"));
  EXPECT_EQ(t.read_bytes, 64 * 32 * 4 * 2 + 32 * 4);  // A, B and W; K may be computed instead
  EXPECT_EQ(t.write_bytes, 64 * 32 * 4);               // O
  EXPECT_EQ(t.ops, 64 * 32 * 4);                       // +, *, -, * per element
}

TEST(Roofline, GemmCountsAMultiplyAndAnAddPerProductAndGeluItsCall) {
  const ProgramTraffic g = program_traffic(leir::program_from_text(
      "input A: f64[8,6]\ninput C: f64[6,4]\noutput D: f64[8,4]\n"
      "B^{8}_{tx=0}L^{4}_{a=0}L^{6}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];",
      "gemm.leir"));
  EXPECT_EQ(g.read_bytes, (8 * 6 + 6 * 4) * 8);
  EXPECT_EQ(g.write_bytes, 8 * 4 * 8);
  EXPECT_EQ(g.ops, 2 * 8 * 4 * 6);
  // tanh-form GELU: 0.5 * x * (1 + tanh(0.79788 * (x + 0.044715 * x * x * x))): 8 binary
  // operations and one call (4) per element.
  const ProgramTraffic e = program_traffic(leir::program_from_text(
      "input X: f32[1000]\noutput Y: f32[1000]\n"
      "L^{1000}_{a=0}[Y^{f32,g}_{a}=0.5*X^{f32,g}_{a}*(1+tanh(0.79788*(X^{f32,g}_{a}+0.044715*X^{f32,g}_{a}*"
      "X^{f32,g}_{a}*X^{f32,g}_{a})));];",
      "gelu.leir"));
  EXPECT_EQ(e.read_bytes, 4000);
  EXPECT_EQ(e.write_bytes, 4000);
  EXPECT_EQ(e.ops, 1000 * (8 + 4));
}

TEST(Roofline, SharesAreTheCopyTimeOverTheProgramsTime) {
  Roofline r{program_traffic(leir::program_from_text(kLerp, "lerp.leir")), 0.01, 0.05, 0.02, 2};
  const auto j = roofline_json(r);
  const double bytes = 64 * 32 * 4 * 3 + 32 * 4;
  EXPECT_DOUBLE_EQ(j["best_copy_share"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["root_copy_share"].get<double>(), 0.2);
  EXPECT_NEAR(j["copy_gb_per_s"].get<double>(), bytes / 1e-5 / 1e9, 1e-4);
  EXPECT_NEAR(j["best_gb_per_s"].get<double>(), bytes / 2e-5 / 1e9, 1e-4);
  EXPECT_NEAR(j["best_gops_per_s"].get<double>(), 8192 / 2e-5 / 1e9, 1e-4);
  const std::string line = roofline_line(r);
  EXPECT_NE(line.find("50% of a copy of the same bytes"), std::string::npos) << line;
  EXPECT_NE(line.find("root 20%"), std::string::npos) << line;
}

TEST(Roofline, TheCpuRunnerTimesACopy) {
  backend::MeasureOptions mo;
  mo.min_time_s = 0.001;
  mo.max_time_s = 0.1;
  mo.threads = 1;
  CpuRunner runner(mo, 1);
  const auto small = runner.copy_ms(1 << 16, 1 << 16), large = runner.copy_ms(1 << 24, 1 << 24);
  ASSERT_TRUE(small && large);
  EXPECT_GT(*small, 0);
  EXPECT_GT(*large, *small);  // 256 times the bytes
}

}  // namespace
}  // namespace steptp::tune
