// The numeric probes of the algebraic strategies (transform/algebraic_base.h) run through the
// reference interpreter, so they follow its scalar semantics (ir/interp/scalar_ops.h: Python // and
// %) where the former stand-alone evaluator did not (floor(x/y) and x-y*floor(x/y)); and the
// tolerance still scales with the largest finite magnitude of any node evaluated, if_then_else
// branches only where taken.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "ir/interp/interpreter.h"
#include "ir/leir/parser.h"
#include "ir/leir/program_io.h"
#include "transform/algebraic_base.h"

namespace steptp::strategies::algebraic {
namespace {

leir::ExprPtr e(const std::string& text) { return leir::parse_expr(text); }

// What the interpreter computes for a leaf-free expression (one statement of a real program).
double interpreted(const std::string& text) {
  auto p = leir::program_from_text("output Z: f64[1]\nL^{1}_{i=0}[Z^{f64,g}_{i}=" + text + ";];", "probes.leir");
  return interp::run_program(p, {}).at("Z").data[0];
}

const std::string A = "A^{f64,g}_{i}";
const std::string I = "I^{i64,g}_{i}";

TEST(AlgebraicProbes, FloorDivisionAndModuloFollowTheInterpreter) {
  // Python: 1 // 0.1 == 9 and 1 % 0.1 == 0.09999999999999995; floor(1/0.1) is 10.
  ASSERT_EQ(interpreted("1//0.1"), 9.0);
  ASSERT_EQ(interpreted("1%0.1"), 0.09999999999999995);
  EXPECT_EQ(probe_disagreement(e("1//0.1"), e("9")), "");
  EXPECT_NE(probe_disagreement(e("1//0.1"), e("10")), "");
  EXPECT_EQ(probe_disagreement(e("1%0.1"), e("0.1")), "");
  EXPECT_NE(probe_disagreement(e("1%0.1"), e("0")), "");
  // A negative operand: -3 // 0.3 == -11 and -3 % 0.3 == 0.2999999999999999 (floor(-3/0.3) is
  // -10, and -3-0.3*floor(-3/0.3) is 0).
  ASSERT_EQ(interpreted("-3//0.3"), -11.0);
  EXPECT_EQ(probe_disagreement(e("-3//0.3"), e("-11")), "");
  EXPECT_NE(probe_disagreement(e("-3//0.3"), e("-10")), "");
  EXPECT_EQ(probe_disagreement(e("-3%0.3"), e("0.3")), "");
  EXPECT_NE(probe_disagreement(e("-3%0.3"), e("0")), "");
  // With a leaf: an integer tensor (probe values -3..3) modulo 0.3 is not the former formula.
  std::string why = probe_disagreement(e(I + "%0.3"), e(I + "-0.3*floor(" + I + "/0.3)"));
  EXPECT_NE(why, "");
  EXPECT_NE(why.find("A:I:i64:g(v:i)="), std::string::npos) << why;
}

TEST(AlgebraicProbes, ConstantsFollowTheInterpreter) {
  // 1 % 0.1 is 0.09999999999999995, not 0: dividing by it is no division by a possible zero.
  EXPECT_TRUE(nonzero(e("1%0.1"), {}));
  EXPECT_TRUE(risky_denominators(e(A + "/(1%0.1)"), {}).empty());
  EXPECT_FALSE(nonzero(e("1%0.5"), {}));  // 0
  EXPECT_EQ(risky_denominators(e(A + "/(1%0.5)"), {}).size(), 1u);
}

TEST(AlgebraicProbes, ToleranceScalesWithEveryNodeEvaluated) {
  // (A+1e8)-1e8 loses A's low digits; the 1e8 nodes make that rounding.
  EXPECT_EQ(probe_disagreement(e("(" + A + "+100000000)-100000000"), e(A)), "");
  EXPECT_NE(probe_disagreement(e(A + "*1.001"), e(A)), "");
  // A taken branch counts, an untaken one does not.
  EXPECT_EQ(probe_disagreement(e("if_then_else(1,(" + A + "+1e300)-1e300,0)"), e(A)), "");
  EXPECT_NE(probe_disagreement(e("if_then_else(0,1e300," + A + ")"), e(A + "*1.001")), "");
  // NaN only with NaN, infinities only the same infinity.
  EXPECT_EQ(probe_disagreement(e("log(-1-abs(" + A + "))"), e("sqrt(-1-abs(" + A + "))")), "");
  EXPECT_NE(probe_disagreement(e("exp(800+abs(" + A + "))"), e("-exp(800+abs(" + A + "))")), "");
}

TEST(AlgebraicProbes, RefusalNamesTheProbeTheLeavesAndBothResults) {
  std::string why = probe_disagreement(e(A + "+1"), e(A + "+2"));
  EXPECT_TRUE(std::regex_match(why, std::regex(R"(on probe 0 \(ordinary: A:A:f64:g\(v:i\)=[-0-9.e]+\) the input gives [-0-9.e]+ but the result gives [-0-9.e]+)")))
      << why;
}

}  // namespace
}  // namespace steptp::strategies::algebraic
