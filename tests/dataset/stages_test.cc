// The filter and split stages of `steptp generate` on hand-made records and roots: each rule of
// dataset/filter.h and dataset/split.h, counted by reason, seeded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "backend/cuda/cuda_codegen.h"
#include "dataset/dataset_test_util.h"
#include "dataset/filter.h"
#include "dataset/profile.h"
#include "dataset/split.h"
#include "leir/program_io.h"

using nlohmann::json;

namespace steptp::dataset {
namespace {

json answer(const std::string& strategy, const std::string& hash, bool equivalent = true,
            const std::string& label = "improving") {
  return {{"strategy", strategy},
          {"result_hash", hash},
          {"label", label},
          {"verification", {{"equivalent", equivalent}, {"class", equivalent ? "exact" : "failed"}}}};
}

json single(json a, json steps_so_far = json::array()) {
  return {{"kind", "single"}, {"answers", json::array({std::move(a)})}, {"steps_so_far", std::move(steps_so_far)}};
}

TEST(FilterStage, DropsFailedDuplicateAndInverseStepsWithReasons) {
  GenerateOptions o;
  std::vector<json> recs = {
      single(answer("loop_reorder", "h1")),
      single(answer("loop_reorder", "h1")),                   // same result: duplicate
      single(answer("loop_tiling", "h2", /*equivalent=*/false)),  // failed verification
      single(answer("operator_fusion", "h3"), json::array({{{"strategy", "operator_fission"}}})),  // undoes the previous
  };
  std::map<std::string, int> drops;
  auto keep = filter_records(recs, o, drops);
  EXPECT_EQ(keep, (std::vector<char>{1, 0, 0, 0}));
  EXPECT_EQ(drops["duplicate"], 1);
  EXPECT_EQ(drops["failed"], 1);
  EXPECT_EQ(drops["inverse_of_previous"], 1);
}

TEST(FilterStage, PerStrategyCapSparesTheStepsOfATunedPath) {
  GenerateOptions o;
  o.per_strategy_cap = 2;
  std::vector<json> recs;
  for (int i = 0; i < 5; ++i) recs.push_back(single(answer("loop_reorder", "r" + std::to_string(i))));
  for (int i = 0; i < 4; ++i) {
    json a = answer("loop_reorder", "p" + std::to_string(i), true, "non_improving");
    a["path"] = {{"step", i + 1}, {"of", 4}};
    recs.push_back(single(a));
  }
  std::map<std::string, int> drops;
  auto keep = filter_records(recs, o, drops);
  int plain = 0, path = 0;
  for (size_t i = 0; i < recs.size(); ++i) (i < 5 ? plain : path) += keep[i];
  EXPECT_EQ(plain, 2);
  EXPECT_EQ(path, 4);  // kept whole
  EXPECT_EQ(drops["per_strategy_cap"], 3);
  // Seeded: the same records and seed keep the same ones.
  std::map<std::string, int> again;
  EXPECT_EQ(filter_records(recs, o, again), keep);
}

TEST(FilterStage, TrivialStrategiesAreDownWeightedUnlessImprovingOrOnAPath) {
  GenerateOptions o;
  o.trivial_keep = 0;  // every eligible one goes
  json on_path = answer("loop_unrolling", "c", true, "non_improving");
  on_path["path"] = {{"step", 1}, {"of", 2}};
  std::vector<json> recs = {single(answer("loop_unrolling", "a", true, "non_improving")),
                            single(answer("loop_unrolling", "b", true, "improving")), single(on_path)};
  std::map<std::string, int> drops;
  EXPECT_EQ(filter_records(recs, o, drops), (std::vector<char>{0, 1, 1}));
  EXPECT_EQ(drops["trivial_downweighted"], 1);
}

std::vector<Root> roots_of(const std::map<std::string, int>& sizes) {
  std::vector<Root> roots;
  for (const auto& [family, n] : sizes)
    for (int i = 0; i < n; ++i) roots.push_back({family + std::to_string(i), family, {}});
  return roots;
}

TEST(SplitStage, WholeFamiliesWithinTheEvalShareNeverAll) {
  auto roots = roots_of({{"conv", 4}, {"matmul", 3}, {"norm", 2}, {"act", 6}, {"loss", 5}});
  EXPECT_EQ(root_families(roots), (std::vector<std::string>{"act", "conv", "loss", "matmul", "norm"}));
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto eval = eval_families(roots, 0.3, seed);
    ASSERT_FALSE(eval.empty());
    EXPECT_LT(eval.size(), 5u);
    int n = 0;
    for (const auto& r : roots) n += eval.count(r.family);
    EXPECT_LE(n, 6) << "seed " << seed;  // 0.3 * 20 roots
    EXPECT_EQ(eval_families(roots, 0.3, seed), eval);
  }
  EXPECT_TRUE(eval_families(roots, 0.0, 1).empty());
  EXPECT_TRUE(eval_families(roots_of({{"only", 3}}), 0.5, 1).empty());
  // A family larger than the budget is still taken when nothing else fits: at least one.
  EXPECT_EQ(eval_families(roots_of({{"a", 10}, {"b", 10}}), 0.1, 3).size(), 1u);
}

// Stage "roots" at bench shapes: f32 programs; workloads that cannot reach the bench window are
// left out and listed with the reason, not fatal.
TEST(RootsStage, BenchRootsAreF32AndWorkloadsWithoutBenchShapesAreListed) {
  GenerateOptions o;
  o.size = workloads::SizeClass::Bench;
  o.composites = 0;
  o.examples = false;
  json skipped = json::array();
  auto roots = collect_roots(o, &skipped);
  std::set<std::string> left_out, kept;
  for (const auto& s : skipped) {
    left_out.insert(s["key"].get<std::string>());
    EXPECT_NE(s["reason"].get<std::string>().find("bench"), std::string::npos) << s.dump();
  }
  for (const auto& r : roots) kept.insert(r.key);
  EXPECT_TRUE(left_out.count("w/cross_entropy_loss")) << skipped.dump();
  EXPECT_TRUE(left_out.count("w/nll_loss")) << skipped.dump();
  EXPECT_EQ(roots.size() + skipped.size(), workloads::all_workloads().size());
  for (const auto& k : left_out) EXPECT_FALSE(kept.count(k)) << k;
  for (const auto& r : roots)
    for (const auto& d : r.program.known) EXPECT_NE(d.dtype, leir::DType::F64) << r.key << " " << d.name;
}

// --target cuda: prompts name the GPU, every program lowers to CUDA, no CPU meaning is added, and
// without a GPU the records are the model's (measured cost is refused with a clear message).
TEST(TargetCuda, RecordsSpeakOfTheGpuAndLowerToCuda) {
  const auto dir = std::filesystem::temp_directory_path() / ("steptp_stages_cuda_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  GenerateOptions o = testing::small_search(dir.string(), 3, 3);
  o.target = "cuda";
  try {
    generate(o);
    FAIL() << "measured cuda records need a GPU";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--cost model"), std::string::npos) << e.what();
  }
  o.measured = false;
  ASSERT_TRUE(generate(o).complete);
  auto steps = testing::lines(dir / "steps.jsonl");
  ASSERT_FALSE(steps.empty());
  for (const auto& r : steps) {
    EXPECT_EQ(r["target"], "cuda");
    EXPECT_EQ(r["cot"].get<std::string>().find("On the CPU"), std::string::npos);
    for (const auto& a : r["answers"]) {
      EXPECT_FALSE(a["cost"]["measured"].get<bool>());
      EXPECT_NO_THROW(backend::cuda::generate_cuda(leir::program_from_text(a["result_program"].get<std::string>())));
    }
  }
  for (const auto& chat : testing::lines(dir / "train.jsonl")) {
    const std::string user = chat["messages"][1]["content"];
    EXPECT_NE(user.find("Target: GPU (CUDA)."), std::string::npos);
    EXPECT_EQ(user.find("Target: CPU"), std::string::npos);
  }
  auto m = json::parse(testing::slurp(dir / "manifest.json"));
  EXPECT_EQ(m["options"]["target"], "cuda");
  EXPECT_FALSE(m["cost"]["measured"].get<bool>());
  EXPECT_NE(m["cost"]["note"].get<std::string>().find("unmeasured"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Profiles, PresetsFillWhatTheCommandLineDidNotSay) {
  ASSERT_FALSE(find_profile("nope"));
  GenerateOptions o;
  o.tune_trials = 64;  // as if --tune-trials 64 was given
  apply_profile(*find_profile("tuned"), o, {"tune-trials"});
  EXPECT_EQ(o.size, workloads::SizeClass::Bench);
  EXPECT_EQ(o.trajectories, Trajectories::Tune);
  EXPECT_EQ(o.tune_trials, 64);
  EXPECT_FALSE(o.examples);
  EXPECT_GE(o.measure_threads, 1);
  GenerateOptions q;
  apply_profile(*find_profile("quick"), q, {});
  GenerateOptions defaults;
  EXPECT_EQ(q.size, defaults.size);  // quick is the default run
  EXPECT_EQ(q.trajectories, defaults.trajectories);
  EXPECT_EQ(q.composites, defaults.composites);
  EXPECT_EQ(q.measure_threads, defaults.measure_threads);
  EXPECT_EQ(q.measure_min_time, defaults.measure_min_time);
  EXPECT_EQ(q.non_improving_per_state, defaults.non_improving_per_state);
  GenerateOptions paper;
  apply_profile(*find_profile("paper"), paper, {});
  EXPECT_EQ(paper.composites + int(workloads::all_workloads().size()), 6300);
}

}  // namespace
}  // namespace steptp::dataset
