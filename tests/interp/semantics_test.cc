// One test per semantic rule of LEIR.md §3, against values computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/interp/interpreter.h"
#include "interp_test_util.h"

namespace steptp::interp_test {
namespace {

using leir::DType;
const double kInf = std::numeric_limits<double>::infinity();

// --- accumulations: an unset X reads as the identity of its operator ---

TEST(Accumulation, SumStartsAtZero) {
  const char* p = "input A: f64[3]\noutput S: f64[]\nL^{3}_{i=0}[S^{f64,g}=S^{f64,g}+A^{f64,g}_{i};];";
  EXPECT_EQ(run_output(p, {{"A", f64({3}, {1, 2, 4})}}, "S"), std::vector<double>{7});
}

TEST(Accumulation, TermMayComeLastOrAmongSeveral) {
  leir::TensorMap in{{"A", f64({3}, {1, 2, 4})}};
  EXPECT_EQ(run_output("input A: f64[3]\noutput S: f64[]\nL^{3}_{i=0}[S^{f64,g}=A^{f64,g}_{i}+S^{f64,g};];", in, "S"),
            std::vector<double>{7});
  // X+e1+e2: 3 iterations add A_i + 1 each.
  EXPECT_EQ(run_output("input A: f64[3]\noutput S: f64[]\nL^{3}_{i=0}[S^{f64,g}=S^{f64,g}+A^{f64,g}_{i}+1;];", in, "S"),
            std::vector<double>{10});
  // e1-(e2-X): X is positive after flattening the +/- chain.
  EXPECT_EQ(
      run_output("input A: f64[3]\noutput S: f64[]\nL^{3}_{i=0}[S^{f64,g}=A^{f64,g}_{i}-(1-S^{f64,g});];", in, "S"),
      std::vector<double>{4});
}

TEST(Accumulation, DifferenceStartsAtZero) {
  const char* p = "input A: f64[3]\noutput S: f64[]\nL^{3}_{i=0}[S^{f64,g}=S^{f64,g}-A^{f64,g}_{i};];";
  EXPECT_EQ(run_output(p, {{"A", f64({3}, {1, 2, 4})}}, "S"), std::vector<double>{-7});
}

TEST(Accumulation, ProductStartsAtOne) {
  leir::TensorMap in{{"A", f64({3}, {-1, 2, 4})}};
  EXPECT_EQ(run_output("input A: f64[3]\noutput P: f64[]\nL^{3}_{i=0}[P^{f64,g}=P^{f64,g}*A^{f64,g}_{i};];", in, "P"),
            std::vector<double>{-8});
  EXPECT_EQ(run_output("input A: f64[3]\noutput P: f64[]\nL^{3}_{i=0}[P^{f64,g}=A^{f64,g}_{i}*P^{f64,g};];", in, "P"),
            std::vector<double>{-8});
}

TEST(Accumulation, MaxStartsAtMinusInfinity) {
  // All values negative: an identity of 0 would give the wrong answer.
  leir::TensorMap in{{"A", f64({3}, {-3, -1, -2})}};
  EXPECT_EQ(
      run_output("input A: f64[3]\noutput M: f64[]\nL^{3}_{i=0}[M^{f64,g}=max(M^{f64,g},A^{f64,g}_{i});];", in, "M"),
      std::vector<double>{-1});
  EXPECT_EQ(
      run_output("input A: f64[3]\noutput M: f64[]\nL^{3}_{i=0}[M^{f64,g}=max(A^{f64,g}_{i},M^{f64,g});];", in, "M"),
      std::vector<double>{-1});
}

TEST(Accumulation, MinStartsAtPlusInfinity) {
  leir::TensorMap in{{"A", f64({3}, {3, 1, 2})}};
  EXPECT_EQ(
      run_output("input A: f64[3]\noutput M: f64[]\nL^{3}_{i=0}[M^{f64,g}=min(M^{f64,g},A^{f64,g}_{i});];", in, "M"),
      std::vector<double>{1});
  EXPECT_EQ(
      run_output("input A: f64[3]\noutput M: f64[]\nL^{3}_{i=0}[M^{f64,g}=min(A^{f64,g}_{i},M^{f64,g});];", in, "M"),
      std::vector<double>{1});
}

TEST(Accumulation, NegativeTermOrDivisionIsNotAnAccumulation) {
  leir::TensorMap in{{"A", f64({3}, {1, 2, 4})}};
  for (const char* p : {"input A: f64[3]\noutput S: f64[]\nL^{3}_{i=0}[S^{f64,g}=A^{f64,g}_{i}-S^{f64,g};];",
                        "input A: f64[3]\noutput S: f64[]\nL^{3}_{i=0}[S^{f64,g}=S^{f64,g}/A^{f64,g}_{i};];",
                        "input A: f64[3]\noutput S: f64[]\nL^{3}_{i=0}[S^{f64,g}=-S^{f64,g}+A^{f64,g}_{i};];"}) {
    std::string msg = error_of([&] { run_output(p, in, "S"); });
    EXPECT_NE(msg.find("read of unset element S[]"), std::string::npos) << p << "\n" << msg;
  }
}

TEST(Accumulation, DifferentSubscriptIsNotTheWrittenElement) {
  // S_{i+1} = S_{i} + A_{i} reads S_{i}, not the element being written: S_0 is unset.
  const char* p = "input A: f64[3]\noutput S: f64[4]\nL^{3}_{i=0}[S^{f64,g}_{i+1}=S^{f64,g}_{i}+A^{f64,g}_{i};];";
  std::string msg = error_of([&] { run_output(p, {{"A", f64({3}, {1, 2, 4})}}, "S"); });
  EXPECT_NE(msg.find("read of unset element S[0]"), std::string::npos) << msg;
}

TEST(Accumulation, SetElementIsUpdatedInPlace) {
  // C = A*2; then C = C + bias: X is set, so its value (not the identity) is used.
  const char* p =
      "input A: f64[2]\ninput H: f64[2]\noutput C: f64[2]\n"
      "L^{2}_{i=0}[C^{f64,g}_{i}=A^{f64,g}_{i}*2;];L^{2}_{i=0}[C^{f64,g}_{i}=C^{f64,g}_{i}+H^{f64,g}_{i};];";
  EXPECT_EQ(run_output(p, {{"A", f64({2}, {1, 5})}, {"H", f64({2}, {10, 20})}}, "C"), (std::vector<double>{12, 30}));
}

TEST(Accumulation, OffsetRangeReduction) {
  // F_a = Σ_{c<3} A_{a,c+3}: the public TVM lowering got the init of this wrong.
  const char* p =
      "input A: f64[2,6]\noutput F: f64[2]\n"
      "L^{2}_{a=0}L^{3}_{c=0}[F^{f64,g}_{a}=F^{f64,g}_{a}+A^{f64,g}_{a,c+3};];";
  leir::TensorMap in{{"A", f64({2, 6}, {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60})}};
  EXPECT_EQ(run_output(p, in, "F"), (std::vector<double>{15, 150}));
}

// --- order, loops, laziness ---

TEST(Loops, StartsAreHonoured) {
  const char* p = "output C: f64[3]\nL^{3}_{i=2}[C^{f64,g}_{i-2}=i;];";
  EXPECT_EQ(run_output(p, {}, "C"), (std::vector<double>{2, 3, 4}));
}

TEST(Loops, ProgramOrderAndNestedNests) {
  // C_i = 0, then Σ_j j for j < 3, inside the same i iteration; the continuation form means the same.
  const char* explicit_form = "output C: f64[2]\nL^{2}_{i=0}[C^{f64,g}_{i}=0;L^{3}_{j=0}[C^{f64,g}_{i}=C^{f64,g}_{i}+j;];];";
  const char* continuation = "output C: f64[2]\nL^{2}_{i=0}[C^{f64,g}_{i}=0;]L^{3}_{j=0}[C^{f64,g}_{i}=C^{f64,g}_{i}+j;];";
  EXPECT_EQ(run_output(explicit_form, {}, "C"), (std::vector<double>{3, 3}));
  EXPECT_EQ(run_output(continuation, {}, "C"), (std::vector<double>{3, 3}));
}

TEST(Loops, LexicographicOrderDecidesOverwrites) {
  // The last write in lexicographic (i, j) order wins: i=1, j=2 → 12.
  const char* p = "output C: f64[]\nL^{2}_{i=0}L^{3}_{j=0}[C^{f64,g}=i*10+j;];";
  EXPECT_EQ(run_output(p, {}, "C"), std::vector<double>{12});
}

TEST(IfThenElse, IsLazyPrefixScan) {
  // P_{a-1} would be out of range (and unset) at a = 0: only the taken branch may run.
  const char* p =
      "input A: f64[4]\noutput P: f64[4]\n"
      "L^{4}_{a=0}[P^{f64,g}_{a}=if_then_else(a-1<0,A^{f64,g}_{a},P^{f64,g}_{a-1}+A^{f64,g}_{a});];";
  EXPECT_EQ(run_output(p, {{"A", f64({4}, {1, 2, 3, 4})}}, "P"), (std::vector<double>{1, 3, 6, 10}));
}

TEST(IfThenElse, RunningMaxWithInfinityLiteral) {
  const char* p =
      "input A: f64[4]\noutput D: f64[4]\n"
      "L^{4}_{a=0}[D^{f64,g}_{a}=max(if_then_else(a-1<0,-inf,D^{f64,g}_{a-1}),A^{f64,g}_{a});];";
  EXPECT_EQ(run_output(p, {{"A", f64({4}, {-5, -7, -1, -3})}}, "D"), (std::vector<double>{-5, -5, -1, -1}));
}

// --- arithmetic ---

std::vector<double> scalars(const std::vector<std::string>& exprs, DType dtype = DType::F64) {
  std::string text = "output C: " + std::string(leir::to_string(dtype)) + "[" + std::to_string(exprs.size()) + "]\n";
  for (size_t i = 0; i < exprs.size(); ++i)
    text += "C^{" + std::string(leir::to_string(dtype)) + ",g}_{" + std::to_string(i) + "}=" + exprs[i] + ";";
  return run_output(text, {}, "C");
}

TEST(Arithmetic, FloorDivisionAndModuloFollowPython) {
  // Python: -7//2 == -4, 7//-2 == -4, -7%3 == 2, 7%-3 == -2, 7.5//2 == 3.0, -7.5%2 == 0.5,
  // 1//0.1 == 9.0 (not floor(1/0.1) == 10), -1%5 == 4.
  auto v = scalars({"-7//2", "7//(-2)", "-7%3", "7%(-3)", "7.5//2", "-7.5%2", "1//0.1", "-1%5"});
  EXPECT_EQ(v, (std::vector<double>{-4, -4, 2, -2, 3, 0.5, 9, 4}));
}

TEST(Arithmetic, RealDivisionAndDivisionByZero) {
  auto v = scalars({"7/2", "1/0", "-1/0", "1//0", "1%0"});
  EXPECT_EQ(v[0], 3.5);
  EXPECT_EQ(v[1], kInf);
  EXPECT_EQ(v[2], -kInf);
  EXPECT_EQ(v[3], kInf);  // as torch.floor_divide on floats
  EXPECT_TRUE(std::isnan(v[4]));
}

TEST(Arithmetic, PowerPrecedenceAndNegativeBase) {
  // -2**2 is -(2**2); (-2)**3 = -8; a negative base with a fractional exponent is NaN (C pow and
  // torch.pow; Python would give a complex number); 0**-1 = inf; ** is right associative.
  auto v = scalars({"-2**2", "(-2)**2", "(-2)**3", "(-8)**(1/3)", "0**(-1)", "2**-1", "2**3**2"});
  EXPECT_EQ(v[0], -4);
  EXPECT_EQ(v[1], 4);
  EXPECT_EQ(v[2], -8);
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(v[4], kInf);
  EXPECT_EQ(v[5], 0.5);
  EXPECT_EQ(v[6], 512);
}

TEST(Arithmetic, ComparisonsChainAndLogic) {
  // 1<=i<3 over i = 0..4, and the logical operators on 0/1 and non-zero values.
  const char* p = "output C: f64[5]\nL^{5}_{i=0}[C^{f64,g}_{i}=1<=i<3;];";
  EXPECT_EQ(run_output(p, {}, "C"), (std::vector<double>{0, 1, 1, 0, 0}));
  auto v = scalars({"1<2<2", "3>2>1", "2==2!=0", "(1<0)|(2>1)", "(1<0)&(2>1)", "2&3", "0|0"});
  EXPECT_EQ(v, (std::vector<double>{0, 1, 1, 1, 0, 1, 0}));
}

TEST(Arithmetic, MaxMinPropagateNaN) {
  auto v = scalars({"max(0/0,1)", "min(1,0/0)", "max(-inf,2)", "min(inf,-2)"});
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], 2);
  EXPECT_EQ(v[3], -2);
}

TEST(Arithmetic, Functions) {
  auto v = scalars({"exp(1)", "log(2)", "sqrt(2)", "abs(-3)", "erf(0.5)", "tanh(0.5)", "sigmoid(0)", "floor(-1.5)",
                    "ceil(-1.5)", "sin(1)", "cos(1)", "log1p(1e-10)", "rsqrt(4)", "pow(2,10)"});
  std::vector<double> want = {std::exp(1.0), std::log(2.0), std::sqrt(2.0), 3.0, std::erf(0.5), std::tanh(0.5), 0.5,
                              -2.0, -1.0, std::sin(1.0), std::cos(1.0), std::log1p(1e-10), 0.5, 1024.0};
  EXPECT_EQ(v, want);
}

TEST(Arithmetic, LoopVariableIsItsIntegerValue) {
  const char* p = "output C: f64[3]\nL^{3}_{i=0}[C^{f64,g}_{i}=i*i/2;];";
  EXPECT_EQ(run_output(p, {}, "C"), (std::vector<double>{0, 0.5, 2}));
}

// --- stores ---

TEST(Store, IntegerTensorsTruncateTowardZero) {
  EXPECT_EQ(scalars({"2.7", "-2.7", "7/2", "-7/2"}, DType::I64), (std::vector<double>{2, -2, 3, -3}));
  // Narrow integers wrap like a C cast from int64.
  EXPECT_EQ(scalars({"200", "-129"}, DType::I8), (std::vector<double>{-56, 127}));
  EXPECT_EQ(scalars({"300", "-1"}, DType::U8), (std::vector<double>{44, 255}));
}

TEST(Store, BoolStoresNonZero) {
  EXPECT_EQ(scalars({"0.5", "0", "-3", "0/0"}, DType::Bool), (std::vector<double>{1, 0, 1, 1}));
}

TEST(Store, FloatTensorsRoundToTheirFormat) {
  EXPECT_EQ(scalars({"0.1"}, DType::F32)[0], static_cast<double>(0.1f));
  // f16: 0.1 → 0.0999755859375 (nearest of 11 significant bits); 65520 is the tie above the
  // largest finite 65504 and rounds to inf; 1e-7 is subnormal: 2 × 2^-24.
  auto h = scalars({"0.1", "65504", "65520", "1e-7", "-0.1"}, DType::F16);
  EXPECT_EQ(h[0], 0.0999755859375);
  EXPECT_EQ(h[1], 65504);
  EXPECT_EQ(h[2], kInf);
  EXPECT_EQ(h[3], std::ldexp(1.0, -23));
  EXPECT_EQ(h[4], -0.0999755859375);
  // bf16: 8 significant bits: 0.1 → 0.10009765625, 1/3 → 0.333984375.
  auto b = scalars({"0.1", "1/3"}, DType::BF16);
  EXPECT_EQ(b[0], 0.10009765625);
  EXPECT_EQ(b[1], 0.333984375);
}

TEST(Store, ArithmeticBetweenStoresIsFloat64) {
  // (1 + 1e-10) - 1 is computed in float64 before the f32 store: 1e-10 survives (rounded to f32).
  EXPECT_EQ(scalars({"(1+1e-10)-1"}, DType::F32)[0], static_cast<double>(static_cast<float>((1 + 1e-10) - 1)));
}

// --- tensors ---

TEST(Tensors, GatherReadsThroughIntegerTensor) {
  const char* p =
      "input A: f64[3]\ninput G: i64[3]\noutput C: f64[3]\n"
      "L^{3}_{i=0}[C^{f64,g}_{i}=A^{f64,g}_{G^{i64,g}_{i}};];";
  leir::TensorMap in{{"A", f64({3}, {10, 20, 30})}, {"G", leir::TensorValue{DType::I64, {3}, {2, 0, 1}}}};
  EXPECT_EQ(run_output(p, in, "C"), (std::vector<double>{30, 10, 20}));
}

TEST(Tensors, BroadcastByConstantSubscript) {
  const char* p =
      "input Y: f64[1,3]\noutput C: f64[2,3]\n"
      "L^{2}_{i=0}L^{3}_{j=0}[C^{f64,g}_{i,j}=Y^{f64,g}_{0,j}+i;];";
  EXPECT_EQ(run_output(p, {{"Y", f64({1, 3}, {1, 2, 3})}}, "C"), (std::vector<double>{1, 2, 3, 2, 3, 4}));
}

TEST(Tensors, ConstantsComeFromTheSignatureUnlessGiven) {
  const char* p = "input A: f64[2]\nconstant F: f64[] = [3.0]\noutput C: f64[2]\nL^{2}_{i=0}[C^{f64,g}_{i}=A^{f64,g}_{i}*F^{f64,g};];";
  leir::TensorMap in{{"A", f64({2}, {1, 2})}};
  EXPECT_EQ(run_output(p, in, "C"), (std::vector<double>{3, 6}));
  in["F"] = f64({}, {-1});
  EXPECT_EQ(run_output(p, in, "C"), (std::vector<double>{-1, -2}));
}

TEST(Tensors, InputsAreRoundedToTheirDtype) {
  const char* p = "input A: f32[1]\noutput C: f64[1]\nC^{f64,g}_{0}=A^{f32,g}_{0};";
  leir::TensorMap in{{"A", leir::TensorValue{DType::F32, {1}, {0.1}}}};
  EXPECT_EQ(run_output(p, in, "C")[0], static_cast<double>(0.1f));
}

TEST(Tensors, IntermediatesOnRequestAndStatementCount) {
  const char* p = "input A: f64[2]\noutput C: f64[]\nL^{2}_{i=0}[T^{f64,l}_{i}=A^{f64,g}_{i}*2;C^{f64,g}=C^{f64,g}+T^{f64,l}_{i};];";
  interp::Interpreter interp(program(p));
  interp::RunOptions opts;
  opts.keep_intermediates = true;
  auto out = interp.run({{"A", f64({2}, {1, 2})}}, opts);
  EXPECT_EQ(out.at("T").data, (std::vector<double>{2, 4}));
  EXPECT_EQ(out.at("C").data, std::vector<double>{6});
  EXPECT_EQ(interp.last_statement_count(), 4u);
  // Without the option only known outputs come back.
  EXPECT_EQ(interp.run({{"A", f64({2}, {1, 2})}}).count("T"), 0u);
}

TEST(Tensors, PartialOutputsOnlyWhenAllowed) {
  const char* p = "output C: f64[3]\nL^{2}_{i=0}[C^{f64,g}_{i}=1;];";
  interp::RunOptions opts;
  opts.allow_unset_outputs = true;
  auto v = run_output(p, {}, "C", opts);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], 1);
  EXPECT_TRUE(std::isnan(v[2]));
}

TEST(Races, AccumulationAcrossIndependentIterationsIsAReduction) {
  // Allowed on B, P and V loops (a parallel reduction), including into a scalar.
  for (const char* k : {"B", "P", "V"}) {
    std::string p = std::string("input A: f64[4]\noutput S: f64[]\n") + k + "^{4}_{tx=0}[S^{f64,g}=S^{f64,g}+A^{f64,g}_{tx};];";
    EXPECT_EQ(run_output(p, {{"A", f64({4}, {1, 2, 3, 4})}}, "S"), std::vector<double>{10}) << k;
  }
}

TEST(Races, IterationConfinedAccessesAreFine) {
  // Each iteration writes and re-reads its own elements; later nests read everything.
  const char* p =
      "input A: f64[4,3]\noutput C: f64[4]\n"
      "B^{4}_{tx=0}L^{3}_{a=0}[M^{f64,g}_{tx}=max(M^{f64,g}_{tx},A^{f64,g}_{tx,a});T^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}-M^{f64,g}_{tx};];"
      "P^{4}_{tx=0}L^{3}_{a=0}[C^{f64,g}_{tx}=C^{f64,g}_{tx}+T^{f64,g}_{tx,a}+T^{f64,g}_{3-tx,a}*0;];";
  leir::TensorMap in{{"A", f64({4, 3}, {1, 2, 3, 4, 5, 6, 9, 8, 7, 0, 0, 0})}};
  // T_{tx,a} = A - running max: row 0: 0,0,0; row 1: 0,0,0; row 2: 0,-1,-2; row 3: 0,0,0.
  EXPECT_EQ(run_output(p, in, "C"), (std::vector<double>{0, 0, -3, 0}));
}

}  // namespace
}  // namespace steptp::interp_test
