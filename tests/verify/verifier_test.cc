// Equivalence verifier: equivalent rewrites accepted with the right class, a battery of generated
// mutants all rejected, NaN/inf and unset rules, signature checks, JSON form.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "ir/leir/program_io.h"
#include "verify/corpus_util.h"
#include "verify/mutants.h"
#include "ir/verify/verifier.h"

using namespace steptp;
using steptp::testing::example_programs;
using verify::Verdict;

namespace {

leir::Program text(const std::string& t, const std::string& name = "t") {
  leir::Program p = leir::program_from_text(t, name + ".leir");
  p.name = name;
  return p;
}

leir::Program example(const std::string& name) {
  for (auto& [tag, p] : example_programs())
    if (tag == name) return p;
  throw std::runtime_error("no example " + name);
}

const char* kMatmulSig = "input A: f64[8,16]\ninput C: f64[16,12]\noutput D: f64[8,12]\n";

}  // namespace

TEST(Verifier, IdenticalProgramIsExact) {
  auto p = example("layernorm");
  auto r = verify::verify(p, p);
  EXPECT_TRUE(r.equivalent);
  EXPECT_EQ(r.verdict, Verdict::Exact);
  EXPECT_EQ(r.trials, 4);
  EXPECT_FALSE(r.worst.has_value());
  EXPECT_EQ(verify::to_json(r),
            R"({"equivalent":true,"class":"exact","trials":4,"evidential":4,"finite_share":1.0,"worst":null})");
}

TEST(Verifier, LoopReorderOfIndependentLoopsIsExact) {
  auto a = text(std::string(kMatmulSig) + "B^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+"
                                          "A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];");
  // c outermost: every D element still sums its terms in the order c = 0..15.
  auto b = text(std::string(kMatmulSig) + "L^{16}_{c=0}P^{8}_{tx=0}L^{12}_{a=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+"
                                          "A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];");
  auto r = verify::verify(a, b);
  EXPECT_TRUE(r.equivalent) << r.error;
  EXPECT_EQ(r.verdict, Verdict::Exact);
}

TEST(Verifier, ReductionSplitIsReassociated) {
  auto a = text(std::string(kMatmulSig) + "B^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+"
                                          "A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];");
  auto b = text(std::string(kMatmulSig) +
                "B^{8}_{tx=0}L^{12}_{a=0}L^{2}_{k=0}L^{8}_{c=0}[E^{f64,g}_{tx,a,k}=E^{f64,g}_{tx,a,k}+"
                "A^{f64,g}_{tx,k*8+c}*C^{f64,g}_{k*8+c,a};];"
                "B^{8}_{tx=0}L^{12}_{a=0}[D^{f64,g}_{tx,a}=E^{f64,g}_{tx,a,0}+E^{f64,g}_{tx,a,1};];");
  auto r = verify::verify(a, b);
  EXPECT_TRUE(r.equivalent) << r.error;
  EXPECT_EQ(r.verdict, Verdict::Reassoc);
  ASSERT_TRUE(r.worst.has_value());
  EXPECT_EQ(r.worst->tensor, "D");
  EXPECT_GT(r.worst->abs_err, 0.0);
}

TEST(Verifier, OnlineSoftmaxMatchesSoftmax) {
  auto r = verify::verify(example("softmax"), example("online_softmax"));
  EXPECT_TRUE(r.equivalent) << r.error;
  EXPECT_NE(r.verdict, Verdict::Failed);
}

TEST(Verifier, WrongResultReportsWorstElement) {
  auto a = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a}*2;];");
  auto b = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=if_then_else(a==2,A^{f64,g}_{a}*3,"
                "A^{f64,g}_{a}*2);];");
  verify::VerifyOptions o;
  o.seed = 7;
  auto r = verify::verify(a, b, o);
  EXPECT_FALSE(r.equivalent);
  EXPECT_EQ(r.verdict, Verdict::Failed);
  ASSERT_TRUE(r.worst.has_value());
  EXPECT_EQ(r.worst->tensor, "C");
  EXPECT_EQ(r.worst->index, std::vector<int64_t>{2});
  EXPECT_DOUBLE_EQ(r.worst->b, r.worst->a * 1.5);
  EXPECT_EQ(r.worst->trial, 0);
  EXPECT_EQ(r.worst->seed, verify::trial_seed(7, 0));
  auto j = nlohmann::json::parse(verify::to_json(r));
  EXPECT_EQ(j["class"], "failed");
  EXPECT_EQ(j["worst"]["index"], nlohmann::json::array({2}));
  EXPECT_EQ(j["worst"]["trial"], 0);
}

TEST(Verifier, SignatureMustMatch) {
  auto a = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a};];");
  auto b = text("input A: f32[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=A^{f32,g}_{a};];");
  auto r = verify::verify(a, b);
  EXPECT_FALSE(r.equivalent);
  EXPECT_NE(r.error.find("different signatures: A is input f64[4] in A but input f32[4] in B"), std::string::npos)
      << r.error;
}

TEST(Verifier, ElementSetOnlyByOneProgramFails) {
  auto a = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a};];");
  auto b = text("input A: f64[4]\noutput C: f64[4]\nL^{3}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a};];");
  auto r = verify::verify(a, b);
  EXPECT_FALSE(r.equivalent);
  EXPECT_FALSE(r.invalid_reference);
  EXPECT_NE(r.error.find("program B failed"), std::string::npos) << r.error;
}

TEST(Verifier, NanEqualsNanAndInfOnlyItself) {
  // log of a negative number is NaN in both programs for element 0: equal (the others give the
  // trials their evidence).
  auto a = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=if_then_else(a==0,"
                "log(-1-A^{f64,g}_{a}*A^{f64,g}_{a}),A^{f64,g}_{a});];");
  auto r = verify::verify(a, a);
  EXPECT_TRUE(r.equivalent);
  EXPECT_EQ(r.verdict, Verdict::Exact);
  EXPECT_DOUBLE_EQ(r.finite_share, 0.75);
  // +inf vs -inf
  auto p = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=inf+A^{f64,g}_{a};];");
  auto m = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=-inf+A^{f64,g}_{a};];");
  auto r2 = verify::verify(p, m);
  EXPECT_FALSE(r2.equivalent);
  ASSERT_TRUE(r2.worst.has_value());
  EXPECT_TRUE(std::isinf(r2.worst->abs_err));
  auto j = nlohmann::json::parse(verify::to_json(r2));
  EXPECT_EQ(j["worst"]["a"], "inf");
  EXPECT_EQ(j["worst"]["b"], "-inf");
  // NaN vs a number
  auto n = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=0*inf+A^{f64,g}_{a};];");
  auto f = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a};];");
  EXPECT_FALSE(verify::verify(n, f).equivalent);
}

TEST(Verifier, ToleranceIsRelativeToTheTensorScale) {
  // 1e-12 relative changes pass as reassociation in f64; 1e-6 do not.
  auto a = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a};];");
  auto tiny = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a}*(1+1e-12);];");
  auto small = text("input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a}*(1+1e-6);];");
  auto r1 = verify::verify(a, tiny);
  EXPECT_TRUE(r1.equivalent);
  EXPECT_EQ(r1.verdict, Verdict::Reassoc);
  EXPECT_FALSE(verify::verify(a, small).equivalent);
}

TEST(Verifier, CallerGivenInputs) {
  const auto& w = steptp::testing::corpus_workloads().begin()->second;
  auto r = verify::verify(w.program, w.program, std::vector<leir::TensorMap>{w.inputs, w.inputs});
  EXPECT_TRUE(r.equivalent) << r.error;
  EXPECT_EQ(r.trials, 2);
}

TEST(Verifier, SameSeedSameReport) {
  auto a = example("matmul");
  auto ms = steptp::testing::make_mutants(a, 1);
  ASSERT_FALSE(ms.empty());
  verify::VerifyOptions o;
  o.seed = 123;
  EXPECT_EQ(verify::to_json(verify::verify(a, ms[0].program, o)), verify::to_json(verify::verify(a, ms[0].program, o)));
}

// ---- the mutant battery ----------------------------------------------------------------------

// Mutants the generator makes that are truly equivalent to their base (inspected): the verifier
// must accept these, and reject every other one.
const std::map<std::string, std::string> kEquivalentMutants = {
    {"argmax: changed constant #0", "the init C=0 is always overwritten (some a reaches the max); 0.25 -> i64 is 0"},
    {"layernorm: swap operands #1", "(G-A)**2 == (A-G)**2"},
    {"nll_loss_mean: changed constant #0", "1.75 stored into i64 M truncates to 1"},
    {"nll_loss_mean: changed constant #1", "else branch of tx!=-100 never runs (and 0.25 -> i64 is 0)"},
    {"nll_loss_mean: off-by-one subscript #1", "permutes the terms of the sum over tx"},
    {"online_softmax: changed constant #0", "the initial F is multiplied by exp(-inf - D) = 0"},
    {"softmax: off-by-one subscript #1", "softmax is shift-invariant: any per-row shift D cancels"},
    {"softmax: shortened reduction loop #0", "softmax is shift-invariant: a max over 31 columns is a valid shift"},
};

TEST(Verifier, GeneratedMutantsAreAllRejected) {
  std::vector<leir::Program> bases;
  for (auto& [tag, p] : example_programs()) bases.push_back(p);
  for (const char* name : {"Matmul3D", "Conv2d_Subtract_Subtract_Mish"}) {
    auto it = steptp::testing::corpus_workloads().find(name);
    if (it != steptp::testing::corpus_workloads().end()) bases.push_back(it->second.program);
  }
  int rejected = 0, numeric = 0, equivalent = 0;
  std::map<std::string, int> per_kind;
  for (const auto& base : bases) {
    for (const auto& m : steptp::testing::make_mutants(base)) {
      auto r = verify::verify(base, m.program);
      EXPECT_FALSE(r.invalid_reference) << r.error;
      if (kEquivalentMutants.count(m.what)) {
        EXPECT_TRUE(r.equivalent) << m.what << ": " << r.error;
        ++equivalent;
        continue;
      }
      EXPECT_FALSE(r.equivalent) << "accepted mutant " << m.what << ":\n" << leir::print_body(m.program.body);
      ++rejected;
      if (r.error.empty()) ++numeric;
      per_kind[m.what.substr(m.what.find(": ") + 2, m.what.find(" #") - m.what.find(": ") - 2)]++;
    }
  }
  EXPECT_EQ(equivalent, static_cast<int>(kEquivalentMutants.size()));
  EXPECT_GE(rejected, 50);
  EXPECT_GE(per_kind.size(), 7u);
  std::cout << rejected << " mutants rejected (" << numeric << " by value comparison, the rest by run-time errors), "
            << equivalent << " truly equivalent ones accepted\n";
  for (const auto& [k, n] : per_kind) std::cout << "  " << k << ": " << n << "\n";
}
