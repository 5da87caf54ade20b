// The tuner's verifier at bench shapes (search/tune/verification.h): above kInterpreterInstances the root
// and each candidate are compiled as f64 builds, run sandboxed on the same seeded inputs and
// compared with the verifier's element rule.
#include <gtest/gtest.h>

#include <string>

#include "ir/leir/program_io.h"
#include "search/tune/verification.h"
#include "front/workloads/bench_size.h"

namespace steptp::tune {
namespace {

// 2048 x 1100 elements: 2,252,800 statement instances, above the interpreter's limit.
leir::Program program(const std::string& name, const std::string& expr) {
  return leir::program_from_text("name " + name + "\ninput A: f32[2048,1100]\noutput C: f32[2048,1100]\n" +
                                     "B^{2048}_{tx=0}L^{1100}_{a=0}[C^{f32,g}_{tx,a}=" + expr + ";];",
                                 name + ".leir");
}

// The verdict on one candidate, which must be equivalent to the root (the report says why not).
Verification verified_candidate(RootVerifier& v, const leir::Program& candidate) {
  auto r = v.check({&candidate});
  if (r.size() != 1) {
    ADD_FAILURE() << "one verdict expected, got " << r.size();
    return {};
  }
  EXPECT_TRUE(r[0].verified) << r[0].report.error << " (" << verify::to_string(r[0].report.verdict) << ")";
  return r[0];
}

TEST(RootVerifier, CompiledBuildsAcceptAnEquivalentCandidateAndRejectAWrongOne) {
  const auto root = program("root", "A^{f32,g}_{tx,a}*3+1");
  ASSERT_GT(workloads::statement_instances(root), kInterpreterInstances);
  RootVerifier v(root, 11);
  EXPECT_EQ(v.method(), "compiled-f64");
  const auto same = program("same", "1+3*A^{f32,g}_{tx,a}");
  const auto off = program("off", "A^{f32,g}_{tx,a}*3+1.01");
  auto r = v.check({&same, &off});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].verified) << r[0].report.error;
  EXPECT_EQ(r[0].method, "compiled-f64");
  EXPECT_FALSE(r[1].verified);
}

TEST(RootVerifier, RestrictedOperationsGetInDomainInputs) {
  // log of an input: drawn from U(-1, 1), half the outputs would be NaN (the verdict then rests on
  // the other half and on NaN positions agreeing); the first input set draws in-domain values, as
  // verify() does, so every output of it is a finite value compared.
  const auto root = program("logs", "log(A^{f32,g}_{tx,a})*2");
  const auto same = program("logs2", "2*log(A^{f32,g}_{tx,a})");
  RootVerifier v(root, 5);
  EXPECT_EQ(verified_candidate(v, same).report.finite_share, 1.0);
  // Stored verdicts name the input sets: verdicts reached on other inputs are not reused.
  EXPECT_NE(v.identity().find("inputs=domain"), std::string::npos);
}

TEST(RootVerifier, ARootThatOverflowsOnInDomainInputsGetsOrdinaryOnesToo) {
  // log(1 + exp(1000 x)): in-domain x (0.25..2) overflows exp for most elements, ordinary x
  // (-1..1) for about a seventh: the ordinary set is the evidence.
  const auto root = program("softplus", "log(1+exp(A^{f32,g}_{tx,a}*1000))");
  const auto same = program("softplus2", "log(exp(1000*A^{f32,g}_{tx,a})+1)");
  RootVerifier v(root, 9);
  EXPECT_GT(verified_candidate(v, same).report.finite_share, 0.8);
  // A root without restricted operations keeps the ordinary and x1e3 sets (its stored verdicts too).
  EXPECT_EQ(RootVerifier(program("plain", "A^{f32,g}_{tx,a}*3"), 1).identity(), "compiled-f64");
}

}  // namespace
}  // namespace steptp::tune
