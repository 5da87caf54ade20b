// Negative tests: every run-time and compile-time error names the file, line and column of the
// offending construct, the tensor, the index and what would be valid.
#include <gtest/gtest.h>

#include "ir/interp/interpreter.h"
#include "interp_test_util.h"
#include "ir/leir/tensors.h"

namespace steptp::interp_test {
namespace {

using leir::DType;

void expect_contains(const std::string& msg, const std::vector<std::string>& parts) {
  for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in:\n" << msg;
}

std::string run_error(const std::string& text, const leir::TensorMap& inputs, const interp::RunOptions& opts = {}) {
  return error_of([&] { interp::run_program(program(text), inputs, opts); });
}

TEST(RuntimeErrors, OutOfBoundsRead) {
  const std::string p = "input A: f64[3]\noutput C: f64[4]\nL^{4}_{i=0}[C^{f64,g}_{i}=A^{f64,g}_{i};];";
  std::string msg = run_error(p, {{"A", f64({3}, {1, 2, 3})}});
  expect_contains(msg, {position_of(p, "A^{f64,g}_{i}") + ": error: ",
                        "index 3 is out of bounds for dimension 0 of A (size 3) in access A^{f64,g}_{i}", "(at i=3)"});
}

TEST(RuntimeErrors, OutOfBoundsThroughGather) {
  const std::string p =
      "input A: f64[3]\ninput G: i64[2]\noutput C: f64[2]\nL^{2}_{i=0}[C^{f64,g}_{i}=A^{f64,g}_{G^{i64,g}_{i}};];";
  std::string msg = run_error(p, {{"A", f64({3}, {1, 2, 3})}, {"G", leir::TensorValue{DType::I64, {2}, {0, -1}}}});
  expect_contains(msg, {position_of(p, "A^{f64,g}_{G"), "index -1 is out of bounds for dimension 0 of A (size 3)",
                        "A^{f64,g}_{G^{i64,g}_{i}}", "(at i=1)"});
}

TEST(RuntimeErrors, UnsetRead) {
  const std::string p =
      "input A: f64[2]\noutput C: f64[2]\n"
      "L^{2}_{i=0}[C^{f64,g}_{i}=A^{f64,g}_{1-i};];\n"
      "C^{f64,g}_{0}=U^{f64,g}_{1};U^{f64,g}_{0}=1;U^{f64,g}_{1}=2;";
  std::string msg = run_error(p, {{"A", f64({2}, {1, 2})}});
  expect_contains(msg, {position_of(p, "U^{f64,g}_{1}") + ": error: ", "read of unset element U[1]",
                        "by access U^{f64,g}_{1}"});
}

TEST(RuntimeErrors, UnsetOutputElement) {
  const std::string p = "output C: f64[3]\nL^{2}_{i=0}[C^{f64,g}_{i}=1;];";
  std::string msg = run_error(p, {});
  expect_contains(msg, {"t.leir:1:1: error: ", "output C element [2] was never set"});
}

TEST(CompileErrors, WriteToAnInput) {
  const std::string p = "input A: f64[2]\noutput C: f64[2]\nL^{2}_{i=0}[C^{f64,g}_{i}=1;A^{f64,g}_{i}=2;];";
  std::string msg = error_of([&] { interp::Interpreter{program(p)}; });
  expect_contains(msg, {position_of(p, "A^{f64,g}_{i}=2") + ": error: ", "statement writes A, which is a read-only input"});
}

TEST(CompileErrors, WriteToAConstantOrParam) {
  const std::string p = "param W: f64[2]\noutput C: f64[2]\nL^{2}_{i=0}[W^{f64,g}_{i}=2;C^{f64,g}_{i}=W^{f64,g}_{i};];";
  std::string msg = error_of([&] { interp::Interpreter{program(p)}; });
  expect_contains(msg, {position_of(p, "W^{f64,g}_{i}=2"), "read-only param"});
}

TEST(RuntimeErrors, RaceOnParallelLoop) {
  // Every iteration writes C_0: a write/write conflict across iterations of P.
  const std::string p = "input A: f64[4]\noutput C: f64[1]\nP^{4}_{i=0}[C^{f64,g}_{0}=A^{f64,g}_{i};];";
  std::string msg = run_error(p, {{"A", f64({4}, {1, 2, 3, 4})}});
  expect_contains(msg, {position_of(p, "C^{f64,g}_{0}") + ": error: ", "race on loop P^{4}_{i=0} at 3:1",
                        "element C[0] of tensor C is written in iteration i=0 and written in iteration i=1"});
  // Serial, the same program is fine (the last write wins).
  std::string serial = p;
  serial.replace(serial.find("P^{4}"), 1, "L");
  EXPECT_EQ(run_output(serial, {{"A", f64({4}, {1, 2, 3, 4})}}, "C"), std::vector<double>{4});
}

TEST(RuntimeErrors, RaceOnBoundLoopReadAfterWrite) {
  // Iteration tx reads C_{tx-1}, written by iteration tx-1.
  const std::string p =
      "input A: f64[4]\noutput C: f64[4]\noutput D: f64[4]\n"
      "B^{4}_{tx=0}[C^{f64,g}_{tx}=A^{f64,g}_{tx};D^{f64,g}_{tx}=if_then_else(tx<1,0,C^{f64,g}_{tx-1});];";
  std::string msg = run_error(p, {{"A", f64({4}, {1, 2, 3, 4})}});
  expect_contains(msg, {position_of(p, "C^{f64,g}_{tx-1}") + ": error: ", "race on loop B^{4}_{tx=0} at 4:1",
                        "element C[0] of tensor C is written in iteration tx=0 and read in iteration tx=1"});
  // With detection off the program runs (the verifier may want that).
  interp::RunOptions off;
  off.detect_races = false;
  EXPECT_EQ(run_output(p, {{"A", f64({4}, {1, 2, 3, 4})}}, "D", off), (std::vector<double>{0, 1, 2, 3}));
}

TEST(RuntimeErrors, RaceOnBoundLoopWriteAfterRead) {
  // Iteration 0 reads C_1 (set by an earlier nest); iteration 1 then overwrites it.
  const std::string p =
      "input A: f64[4]\noutput C: f64[4]\noutput D: f64[4]\n"
      "L^{4}_{i=0}[C^{f64,g}_{i}=A^{f64,g}_{i};];"
      "B^{4}_{tx=0}[D^{f64,g}_{tx}=C^{f64,g}_{(tx+1)%4};C^{f64,g}_{tx}=0;];";
  std::string msg = run_error(p, {{"A", f64({4}, {1, 2, 3, 4})}});
  expect_contains(msg, {position_of(p, "C^{f64,g}_{tx}=0"), "race on loop B^{4}_{tx=0}",
                        "element C[1] of tensor C is read in iteration tx=0 and written in iteration tx=1"});
}

TEST(RuntimeErrors, AccumulationReadFromAnotherIterationIsARace) {
  // S accumulates over tx, but every iteration also reads the partial sum: not a reduction.
  const std::string p =
      "input A: f64[4]\noutput S: f64[]\noutput C: f64[4]\n"
      "B^{4}_{tx=0}[S^{f64,g}=S^{f64,g}+A^{f64,g}_{tx};C^{f64,g}_{tx}=S^{f64,g};];";
  std::string msg = run_error(p, {{"A", f64({4}, {1, 2, 3, 4})}});
  expect_contains(msg, {position_of(p, "S^{f64,g}="), "race on loop B^{4}_{tx=0}",
                        "element S[] of tensor S is read in iteration tx=0 and accumulated in iteration tx=1"});
}

TEST(RuntimeErrors, AccumulationOnBoundLoopIsNotARace) {
  // nll_loss-style: O accumulates across B iterations; a later nest reads it.
  const std::string p =
      "input A: f64[4]\noutput D: f64[]\n"
      "B^{4}_{tx=0}[O^{f64,g}=O^{f64,g}+1;];B^{4}_{tx=0}[D^{f64,g}=D^{f64,g}+A^{f64,g}_{tx}/O^{f64,g};];";
  EXPECT_EQ(run_output(p, {{"A", f64({4}, {1, 2, 3, 6})}}, "D"), std::vector<double>{3});
}

TEST(RuntimeErrors, MissingInput) {
  const std::string p = "input A: f64[2]\ninput G: f64[2]\noutput C: f64[2]\nL^{2}_{i=0}[C^{f64,g}_{i}=A^{f64,g}_{i}+G^{f64,g}_{i};];";
  std::string msg = run_error(p, {{"A", f64({2}, {1, 2})}});
  expect_contains(msg, {"t.leir:2:1: error: ", "missing input G (f64[2])"});
}

TEST(RuntimeErrors, ConstantWithoutValue) {
  const std::string p = "constant F: f64[]\noutput C: f64[]\nC^{f64,g}=F^{f64,g};";
  expect_contains(run_error(p, {}), {"t.leir:1:1: error: ", "missing constant F", "no value in the signature"});
}

TEST(RuntimeErrors, WrongInputShapeAndDtype) {
  const std::string p = "input A: f64[2,3]\noutput C: f64[2]\nL^{2}_{i=0}[C^{f64,g}_{i}=A^{f64,g}_{i,0};];";
  expect_contains(run_error(p, {{"A", f64({3, 2}, {1, 2, 3, 4, 5, 6})}}),
                  {"t.leir:1:1: error: ", "input A is given with shape [3,2] but is declared f64[2,3]"});
  expect_contains(run_error(p, {{"A", leir::TensorValue{DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}}}}),
                  {"t.leir:1:1: error: ", "input A is given with dtype f32 but is declared f64[2,3]"});
}

TEST(RuntimeErrors, UnstorableValueInIntegerTensor) {
  const std::string p = "output C: i64[1]\nC^{i64,g}_{0}=0/0;";
  expect_contains(run_error(p, {}), {position_of(p, "C^{i64,g}_{0}"), "cannot store nan into element C[0] of i64 tensor C"});
}

TEST(RuntimeErrors, NonIntegerSubscript) {
  const std::string p = "input A: f64[3]\ninput G: f64[1]\noutput C: f64[1]\nC^{f64,g}_{0}=A^{f64,g}_{G^{f64,g}_{0}/2};";
  expect_contains(run_error(p, {{"A", f64({3}, {1, 2, 3})}, {"G", f64({1}, {1})}}),
                  {position_of(p, "A^{f64,g}_{G"), "subscript 0 of access A^{f64,g}_{G^{f64,g}_{0}/2} evaluates to 0.5, "
                                                   "which is not an integer"});
}

TEST(CompileErrors, UnboundIndexVariable) {
  const std::string p = "output C: f64[2]\nL^{2}_{i=0}[C^{f64,g}_{i}=j;];";
  expect_contains(error_of([&] { interp::Interpreter{program(p)}; }),
                  {position_of(p, "j;"), "index variable 'j' is not bound by an enclosing loop"});
}

// --- the tensor table (LEIR.md §3-4) ---

TEST(TensorTable, InfersIntermediateShapesFromWrites) {
  auto p = program(
      "input A: f64[2,6]\noutput C: f64[2]\n"
      "L^{2}_{a=0}L^{3}_{c=0}[T^{f64,s}_{a,c*2+1}=A^{f64,g}_{a,c};];L^{2}_{a=0}[S^{f64,l}=A^{f64,g}_{a,5};"
      "C^{f64,g}_{a}=T^{f64,s}_{a,5}+S^{f64,l};];L^{2}_{a=3}[Q^{i32,g}_{a//2,a%2}=a;];");
  auto t = leir::build_tensor_table(p);
  EXPECT_EQ(t.at("T").shape, (std::vector<int64_t>{2, 6}));  // max c*2+1 = 5
  EXPECT_EQ(t.at("T").scope, leir::Scope::Shared);
  EXPECT_EQ(t.at("S").shape, std::vector<int64_t>{});
  EXPECT_EQ(t.at("Q").shape, (std::vector<int64_t>{3, 2}));  // a in [3,4]: a//2 <= 2, a%2 <= 1
  EXPECT_EQ(t.at("Q").dtype, DType::I32);
  EXPECT_FALSE(t.at("T").known);
  EXPECT_TRUE(t.at("A").read_only());
  EXPECT_EQ(t.order, (std::vector<std::string>{"A", "C", "T", "S", "Q"}));
  EXPECT_EQ(t.at("T").numel(), 12);
}

std::string table_error(const std::string& text) {
  return error_of([&] { leir::build_tensor_table(program(text)); });
}

TEST(TensorTable, InconsistentAnnotation) {
  const std::string p = "output C: f64[2]\nL^{2}_{i=0}[T^{f64,g}_{i}=1;C^{f64,g}_{i}=T^{f32,g}_{i};];";
  expect_contains(table_error(p), {position_of(p, "T^{f32,g}"), "tensor T is annotated f32,g here but f64,g at 2:13"});
}

TEST(TensorTable, KnownTensorMustMatchDeclaration) {
  const std::string p = "input A: f64[2]\noutput C: f64[2]\nL^{2}_{i=0}[C^{f64,g}_{i}=A^{f64,s}_{i};];";
  expect_contains(table_error(p), {position_of(p, "A^{f64,s}"), "tensor A is annotated f64,s but is declared input f64"});
}

TEST(TensorTable, KnownTensorRank) {
  const std::string p = "input A: f64[2,2]\noutput C: f64[2]\nL^{2}_{i=0}[C^{f64,g}_{i}=A^{f64,g}_{i};];";
  expect_contains(table_error(p), {position_of(p, "A^{f64,g}_{i}"),
                                   "access A^{f64,g}_{i} gives 1 subscript(s) but A has rank 2 (declared shape [2,2])"});
}

TEST(TensorTable, WriteRanksMustAgree) {
  const std::string p = "output C: f64[2]\nL^{2}_{i=0}[T^{f64,g}_{i}=1;T^{f64,g}_{i,0}=2;C^{f64,g}_{i}=1;];";
  expect_contains(table_error(p), {position_of(p, "T^{f64,g}_{i,0}"), "tensor T is written with 2 subscript(s) here but with 1 at 2:13"});
}

TEST(TensorTable, ReadRankMustMatchWrites) {
  const std::string p = "output C: f64[2]\nL^{2}_{i=0}[T^{f64,g}_{i}=1;C^{f64,g}_{i}=T^{f64,g}_{i,i};];";
  expect_contains(table_error(p), {position_of(p, "T^{f64,g}_{i,i}"), "tensor T is read with 2 subscript(s) but has rank 1"});
}

TEST(TensorTable, ReadButNeverWritten) {
  const std::string p = "output C: f64[2]\nL^{2}_{i=0}[C^{f64,g}_{i}=X^{f64,g}_{i};];";
  expect_contains(table_error(p), {position_of(p, "X^{f64,g}"), "tensor X is read but never written and not declared"});
}

TEST(TensorTable, DataDependentWriteSubscript) {
  const std::string p =
      "input G: i64[2]\noutput C: f64[2]\nL^{2}_{i=0}[T^{f64,g}_{G^{i64,g}_{i}}=1;C^{f64,g}_{i}=1;];";
  expect_contains(table_error(p), {position_of(p, "G^{i64,g}_{i}}="),
                                   "cannot infer dimension 0 of intermediate T from the write subscript "
                                   "'G^{i64,g}_{i}': it reads tensor G (a data-dependent gather)"});
}

}  // namespace
}  // namespace steptp::interp_test
