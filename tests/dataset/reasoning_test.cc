// The reasoning rules of the `<think>` (apps/dataset/reasoning.h) on hand-made steps whose effect is
// known, the prompt's machine and speedup lines, and the agreement statistics.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "apps/dataset/dataset.h"
#include "dataset/dataset_test_util.h"
#include "apps/dataset/reasoning.h"
#include "ir/leir/program_io.h"
#include "search/tune/machine.h"

namespace steptp::dataset {
namespace {

using nlohmann::json;

const std::string kHead = "name mm\ninput A: f32[64,64]\ninput B: f32[64,64]\noutput C: f32[64,64]\n";
// C = A @ B with k innermost: B[k,j] strides a row per iteration, and k accumulates into C.
const std::string kIJK =
    kHead + "L^{64}_{i=0}L^{64}_{j=0}L^{64}_{k=0}[C^{f32,g}_{i,j}=C^{f32,g}_{i,j}+A^{f32,g}_{i,k}*B^{f32,g}_{k,j};];\n";
// The same with j innermost: every access moves by one element (or not at all) per iteration.
const std::string kIKJ =
    kHead + "L^{64}_{i=0}L^{64}_{k=0}L^{64}_{j=0}[C^{f32,g}_{i,j}=C^{f32,g}_{i,j}+A^{f32,g}_{i,k}*B^{f32,g}_{k,j};];\n";

json machine(int threads) {
  tune::Machine m;
  m.cpu_model = "Test CPU";
  m.cores = 4;
  m.threads = threads;
  m.vector_bytes = 32;
  return machine_json(m);
}

// A record of the step parent -> result in the shape records.cc writes (the fields the CoT reads).
json record(const std::string& parent, const std::string& result, const std::string& strategy, int threads) {
  const auto a = leir::program_from_text(parent), b = leir::program_from_text(result);
  json ans = {{"strategy", strategy},
              {"params", json::object()},
              {"exactness", "exact"},
              {"site", {{"index", 0}}},
              {"site_item", 0},
              {"result_program", result},
              {"effect", step_effect(a, b)},
              {"transition", step_transition(a, b)}};
  return {{"kind", "single"},       {"parent_program", parent}, {"steps_so_far", json::array()},
          {"target", "cpu"},        {"machine", machine(threads)}, {"answers", json::array({ans})},
          {"root", {{"name", "mm"}}}};
}

// Issue 35's loop_reorder: making the inner access contiguous and the inner loop independent
// (vectorizable) is argued as faster, from the effect facts alone.
TEST(Reasoning, ReorderToContiguousInnerLoopExpectsFaster) {
  const json rec = record(kIJK, kIKJ, "loop_reorder", 2);
  const json& e = rec["answers"][0]["effect"];
  EXPECT_EQ(e["flops"][0], e["flops"][1]);
  EXPECT_LT(e["changed_contiguous_share"][0].get<double>(), e["changed_contiguous_share"][1].get<double>());
  EXPECT_EQ(e["inner_loops"][0][0]["var"], "k");
  EXPECT_EQ(e["inner_loops"][0][0]["dependence"], "reduction_only");
  EXPECT_EQ(e["inner_loops"][1][0]["var"], "j");
  EXPECT_EQ(e["inner_loops"][1][0]["dependence"], "independent");
  const Expectation x = expect(rec, rec["answers"][0]);
  EXPECT_EQ(x.verdict, "faster");
  ASSERT_EQ(x.gains.size(), 2u);
  EXPECT_NE(x.gains[0].find("more of the changed accesses are contiguous"), std::string::npos) << x.gains[0];
  EXPECT_NE(x.gains[1].find("innermost k (reduction_only) -> j (independent)"), std::string::npos) << x.gains[1];
  EXPECT_TRUE(x.costs.empty());
  const std::string cot = make_cot(rec);
  EXPECT_NE(cot.find("Expectation: faster than the current program."), std::string::npos) << cot;
  EXPECT_EQ(testing::hindsight_phrases(cot), std::vector<std::string>{}) << cot;
  // The reverse step loses both and is expected slower.
  EXPECT_EQ(expect(record(kIKJ, kIJK, "loop_reorder", 2), record(kIKJ, kIJK, "loop_reorder", 2)["answers"][0]).verdict,
            "slower");
}

// A parallel loop pays only when the kernels run on more than one thread (the machine's fact).
TEST(Reasoning, ParallelLoopDependsOnTimedThreads) {
  const std::string par =
      kHead + "P^{64}_{i=0}L^{64}_{k=0}L^{64}_{j=0}[C^{f32,g}_{i,j}=C^{f32,g}_{i,j}+A^{f32,g}_{i,k}*B^{f32,g}_{k,j};];\n";
  const json two = record(kIKJ, par, "loop_parallelization", 2), one = record(kIKJ, par, "loop_parallelization", 1);
  const Expectation x2 = expect(two, two["answers"][0]), x1 = expect(one, one["answers"][0]);
  EXPECT_EQ(x2.verdict, "faster");
  EXPECT_NE(x2.gains.at(0).find("loop i (extent 64) becomes parallel in a nest that ran serially on 2 threads"), std::string::npos);
  EXPECT_EQ(x1.verdict, "same");
  EXPECT_NE(x1.notes.at(0).find("the kernels run on 1 thread"), std::string::npos);
  // No machine (a GPU record): the rule still votes, without a thread count.
  json gpu = two;
  gpu.erase("machine");
  EXPECT_EQ(expect(gpu, gpu["answers"][0]).verdict, "faster");
  // A second parallel loop in a nest that already runs one adds no threads.
  const std::string both =
      kHead + "P^{64}_{i=0}L^{64}_{k=0}P^{64}_{j=0}[C^{f32,g}_{i,j}=C^{f32,g}_{i,j}+A^{f32,g}_{i,k}*B^{f32,g}_{k,j};];\n";
  const json again = record(par, both, "loop_parallelization", 2);
  const Expectation xa = expect(again, again["answers"][0]);
  EXPECT_EQ(xa.verdict, "same");
  EXPECT_NE(xa.notes.at(0).find("already runs a parallel loop"), std::string::npos);
}

// The prompt states the machine and, after steps, the current speedup — or that it is not measured.
TEST(Reasoning, PromptStatesMachineAndCurrentSpeedup) {
  json rec = record(kIJK, kIKJ, "loop_reorder", 2);
  std::string user = prompt_messages(rec, AnswerFormat::IR)[1]["content"];
  EXPECT_NE(user.find("Machine: Test CPU, 4 cores; kernels timed on 2 threads; AVX2 vectors of 32 bytes (8 f32 lanes)"),
            std::string::npos)
      << user;
  EXPECT_NE(user.find("Steps so far: none (the current program is the root)."), std::string::npos);
  EXPECT_NE(user.find("k (extent 64, serial, reduction_only)"), std::string::npos) << user;
  rec["steps_so_far"] = json::array({{{"strategy", "loop_split"}, {"site", "@0/1"}, {"params", {{"factor", 8}}}}});
  rec["parent_speedup_vs_root"] = 1.5;
  user = prompt_messages(rec, AnswerFormat::IR)[1]["content"];
  EXPECT_NE(user.find("1. loop_split at @0/1 {\"factor\":8}"), std::string::npos) << user;
  EXPECT_NE(user.find("Speedup of the current program over the root: not measured."), std::string::npos);
  rec["parent_speedup_measured"] = true;
  user = prompt_messages(rec, AnswerFormat::IR)[1]["content"];
  EXPECT_NE(user.find("Speedup of the current program over the root: 1.5 (measured)."), std::string::npos);
  const std::string cot = make_cot(rec);
  EXPECT_NE(cot.find("it runs 1.5 times as fast as the root"), std::string::npos) << cot;
}

TEST(Reasoning, AgreementCountsExpectationAgainstLabel) {
  auto ans = [](const char* s, const char* ex, const char* label) {
    return json{{"strategy", s}, {"expectation", ex}, {"label", label}, {"cost", json::object()}};
  };
  json within = ans("loop_reorder", "same", "improving");
  within["cost"]["noise_verdict"] = "within_noise";
  std::vector<json> recs = {
      {{"answers", {ans("loop_reorder", "faster", "improving"), within}}},
      {{"answers", {ans("loop_split", "same", "enabling")}}},
      {{"answers", {ans("loop_split", "faster", "non_improving")}}},  // left out below
  };
  const json a = expectation_agreement(recs, {1, 1, 0});
  EXPECT_EQ(a["overall"], (json{{"answers", 3}, {"agree", 2}, {"share", 0.6667}}));
  EXPECT_EQ(a["per_strategy"]["loop_reorder"]["agree"], 1);
  EXPECT_EQ(a["per_strategy"]["loop_split"]["agree"], 1);
  EXPECT_EQ(a["confusion"]["same"]["improving"], 1);
  EXPECT_EQ(a["vs_noise_verdict"], (json{{"answers", 1}, {"agree", 1}, {"share", 1.0}}));
}

}  // namespace
}  // namespace steptp::dataset
