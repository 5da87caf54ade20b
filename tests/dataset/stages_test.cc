// The filter and split stages of `steptp generate` on hand-made records and roots: each rule of
// apps/dataset/filter.h and apps/dataset/split.h, counted by reason, seeded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "lower/cuda/cuda_codegen.h"
#include "dataset/dataset_test_util.h"
#include "apps/dataset/filter.h"
#include "apps/dataset/profile.h"
#include "apps/dataset/split.h"
#include "ir/leir/program_io.h"

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

TEST(FilterStage, KeepsOneCoverageReservePerStrategyNoOtherRecordShows) {
  GenerateOptions o;
  o.trivial_keep = 0;  // a reserve is not down-weighted even so
  auto reserve = [](json a) {
    json r = single(std::move(a));
    r["coverage_reserve"] = true;
    return r;
  };
  json multi = {{"kind", "multi"},
                {"answers", json::array({answer("loop_tiling", "m1"), answer("operator_fusion", "m2")})},
                {"steps_so_far", json::array()}};
  std::vector<json> recs = {
      single(answer("loop_reorder", "a")),
      multi,
      reserve(answer("loop_reorder", "b")),                         // shown by a single: unused
      reserve(answer("operator_fusion", "c")),                      // shown by the multi: unused
      reserve(answer("loop_unrolling", "d", true, "non_improving")),  // the first of its strategy: kept
      reserve(answer("loop_unrolling", "e")),                       // the second: unused
      reserve(answer("cache_read_write", "f", /*equivalent=*/false)),  // failed: dropped as failed
  };
  std::map<std::string, int> drops;
  EXPECT_EQ(filter_records(recs, o, drops), (std::vector<char>{1, 1, 0, 0, 1, 0, 0}));
  EXPECT_EQ(drops["coverage_reserve_unused"], 3);
  EXPECT_EQ(drops["failed"], 1);
  EXPECT_EQ(drops.count("trivial_downweighted"), 0u);
  EXPECT_TRUE(recs[4].value("coverage", false));
  EXPECT_FALSE(recs[0].contains("coverage"));
  for (const auto& r : recs) EXPECT_FALSE(r.contains("coverage_reserve"));  // never exported
}

// Roots of the given family sizes, every root with `records` records of `tokens` tokens.
std::vector<SplitRoot> roots_of(const std::map<std::string, int>& sizes, int records = 4, double tokens = 100) {
  std::vector<SplitRoot> roots;
  for (const auto& [family, n] : sizes)
    for (int i = 0; i < n; ++i)
      roots.push_back({family + std::to_string(i), family, std::vector<double>(size_t(records), tokens)});
  return roots;
}

std::map<std::string, std::pair<int, int>> train_eval_roots(const std::vector<SplitRoot>& roots, const EvalSplit& s) {
  std::map<std::string, std::pair<int, int>> n;
  for (const auto& r : roots) (s.roots.count(r.key) ? n[r.family].second : n[r.family].first)++;
  return n;
}

TEST(SplitStage, HoldsOutRootsWithinEveryFamilyOfThreeOrMorePlusWholeSmallFamilies) {
  auto roots =
      roots_of({{"conv", 4}, {"matmul", 3}, {"attention", 6}, {"norm", 2}, {"act", 1}, {"loss", 2}, {"pool", 1}});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    EvalSplit s = split_roots(roots, 0.2, seed);
    auto n = train_eval_roots(roots, s);
    for (const char* f : {"conv", "matmul", "attention"}) {
      EXPECT_GE(n[f].second, 1) << f << " seed " << seed;  // eval sees the family ...
      EXPECT_GE(n[f].first, 2) << f << " seed " << seed;   // ... and training keeps most of it
    }
    EXPECT_EQ(n["attention"].second, 1);  // round(0.2 * 6)
    EXPECT_EQ(s.sampled_families, (std::set<std::string>{"attention", "conv", "matmul"}));
    ASSERT_FALSE(s.whole_families.empty()) << seed;
    for (const char* f : {"norm", "act", "loss", "pool"}) {
      // A small family is never split: all of it in eval (a whole family) or none.
      EXPECT_TRUE(n[f].first == 0 || n[f].second == 0) << f;
      EXPECT_EQ(n[f].second > 0, s.whole_families.count(f) > 0) << f;
    }
    EXPECT_EQ(split_roots(roots, 0.2, seed).roots, s.roots);  // seeded
  }
  EXPECT_TRUE(split_roots(roots, 0.0, 1).roots.empty());
  EXPECT_TRUE(split_roots(roots_of({{"only", 1}}), 0.5, 1).roots.empty());
  // One small family alone is never held out whole (training would be empty).
  auto two = split_roots(roots_of({{"a", 2}}), 0.5, 1);
  EXPECT_TRUE(two.roots.empty());
}

// Roots whose records are ten times longer than the others: whatever the seed first draws, swaps
// within a family bring eval's median token count to train's.
TEST(SplitStage, SwapsRootsUntilTheTokenMediansAgree) {
  std::vector<SplitRoot> roots;
  for (int i = 0; i < 6; ++i)
    roots.push_back({"a" + std::to_string(i), "a", std::vector<double>(5, i < 3 ? 100.0 : 3000.0)});
  for (int i = 0; i < 3; ++i) roots.push_back({"b" + std::to_string(i), "b", std::vector<double>(5, 100.0)});
  int swapped = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    EvalSplit s = split_roots(roots, 0.34, seed);
    ASSERT_GT(s.train_median_tokens, 0);
    ASSERT_GT(s.eval_median_tokens, 0);
    const double ratio = s.eval_median_tokens / s.train_median_tokens;
    EXPECT_LE(std::abs(ratio - 1), kTokenMedianTarget) << "seed " << seed << " ratio " << ratio;
    auto n = train_eval_roots(roots, s);
    EXPECT_EQ(n["a"].second, 2);  // swaps keep each family's eval share
    EXPECT_EQ(n["b"].second, 1);
    swapped += s.swaps > 0;
    EXPECT_EQ(s.to_json()["median_tokens"]["ratio"].get<double>(), std::round(1e4 * ratio) / 1e4);
  }
  EXPECT_GT(swapped, 0);  // some seeds draw the long roots into eval first
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
  } catch (const base::Error& e) {
    EXPECT_EQ(e.kind(), base::ErrorKind::BadRequest);
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
