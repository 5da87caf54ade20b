// The reward's integrity through a real server process: a kernel whose compiled outputs differ
// from the root's earns the failure reward, a no-op edit earns 0, and a job that runs out of time
// while verifying (not while its kernel runs) is "no score", not a wrong answer.
#include <gtest/gtest.h>

#include "serve/server_process.h"
#include "serve/serve_test_util.h"

namespace steptp::serve::testing {
namespace {

std::string ir_answer(const std::string& ir) { return "<answer>" + json{{"transformed_IR", ir}}.dump() + "</answer>"; }

TEST(Judge, WrongCompiledOutputsEarnTheFailureReward) {
  ServerProcess server({"--workers", "1", "--fault-injection", "--peaks", "none", "--measure-min-time", "0.002"});
  auto r = server.post("/v1/score", {{"answer", parallel_answer()}, {"reward_context", matmul_context()},
                                     {"fault", "wrong_output"}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const json& a = r.body["answers"][0];
  EXPECT_EQ(a["failed_stage"], "equivalent") << a.dump();
  EXPECT_EQ(a["compiled_outputs"]["class"], "failed") << a.dump();
  EXPECT_DOUBLE_EQ(r.body["reward"].get<double>(), -0.5) << a.dump();
  // The same answer honestly timed: its kernel's outputs are the root's.
  r = server.post("/v1/score", {{"answer", parallel_answer()}, {"reward_context", matmul_context()}});
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.body["answers"][0]["compiled_outputs"]["equivalent"].get<bool>()) << r.body.dump();
  EXPECT_GE(r.body["reward"].get<double>(), 0.2 - 0.8);
}

TEST(Judge, NoOpEditsEarnNothing) {
  ServerProcess server({"--workers", "1", "--peaks", "none"});
  std::string renamed = matmul(), commuted = matmul(), plus_zero = matmul();
  renamed.replace(renamed.find("tx=0"), 4, "zz=0");
  for (size_t at; (at = renamed.find("_{tx,")) != std::string::npos;) renamed.replace(at, 5, "_{zz,");
  commuted.replace(commuted.find("A^{f64,g}_{tx,c}*C^{f64,g}_{c,a}"), 32, "C^{f64,g}_{c,a}*A^{f64,g}_{tx,c}");
  plus_zero.replace(plus_zero.find("C^{f64,g}_{c,a};"), 16, "C^{f64,g}_{c,a}*1+0;");
  for (const auto& ir : {renamed, commuted, plus_zero}) {
    ASSERT_NE(ir, matmul());
    auto r = server.post("/v1/score", {{"answer", ir_answer(ir)}, {"reward_context", matmul_context()}});
    ASSERT_EQ(r.status, 200) << r.body.dump();
    EXPECT_EQ(r.body["answers"][0]["failed_stage"], "differs") << ir << "\n" << r.body.dump();
    EXPECT_DOUBLE_EQ(r.body["reward"].get<double>(), 0.0);
  }
}

// The matmul with a dead nest in front that the interpreter needs far longer than the job
// timeout to run: verification cannot finish, which is not the answer being wrong.
std::string slow_to_verify() {
  std::string s = matmul();
  size_t body = s.find("B^{8}");
  return s.substr(0, body) + "L^{200000000}_{r=0}[T^{f64,g}_{0}=A^{f64,g}_{0,0};];" + s.substr(body);
}

TEST(Judge, ATimeOutWhileVerifyingIsNoScore) {
  ServerProcess server({"--workers", "1", "--job-timeout", "1", "--peaks", "none"});
  auto r = server.post("/v1/score", {{"answer", ir_answer(slow_to_verify())}, {"reward_context", matmul_context()}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_TRUE(r.body["reward"].is_null()) << r.body.dump();
  EXPECT_NE(r.body["infrastructure_failure"].get<std::string>().find("timed out"), std::string::npos) << r.body.dump();
  EXPECT_EQ(r.body["failed_stage"], "infrastructure");
  // Counted apart from the answers' failed stages.
  auto metrics = server.client()->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("steptp_score_answers_total{failed_stage=\"infrastructure\"} 1"), std::string::npos)
      << metrics->body;
}

}  // namespace
}  // namespace steptp::serve::testing
