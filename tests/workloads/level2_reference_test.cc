// Level-2 workloads: every draw yields the registered reference text (no hyper-value baked into
// the Python), every size class emits, and tiny programs agree with PyTorch on 3 seeds.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "composite_oracle.h"
#include "leir/program_io.h"
#include "workloads/level2_chain.h"
#include "workloads/workload.h"

namespace steptp::workloads {
namespace {

std::vector<const Workload*> level2() {
  std::vector<const Workload*> out;
  for (const auto& w : all_workloads())
    if (w.level == 2) out.push_back(&w);
  return out;
}

TEST(Level2, AtLeastSixtyWorkloadsWithRangesAndSizes) {
  auto ws = level2();
  EXPECT_GE(ws.size(), 60u);
  for (const auto* w : ws) {
    SCOPED_TRACE(w->name);
    EXPECT_FALSE(w->params.empty());
    for (const auto& p : w->params)
      for (const auto& [lo, hi] : p.by_size) {
        EXPECT_LE(p.lo, lo);
        EXPECT_LE(lo, hi);
        EXPECT_LE(hi, p.hi);
      }
  }
}

TEST(Level2, ReferenceTextDoesNotDependOnTheDraw) {
  for (const auto* w : level2()) {
    SCOPED_TRACE(w->name);
    for (SizeClass s : {SizeClass::Tiny, SizeClass::Small, SizeClass::Default})
      for (uint64_t seed : {1u, 2u, 3u})
        EXPECT_EQ(chain::level2_reference(w->name, sample_hyper(*w, seed, s)), w->torch_reference);
  }
}

TEST(Level2, EverySizeClassEmitsDeterministically) {
  for (const auto* w : level2()) {
    SCOPED_TRACE(w->name);
    for (SizeClass s : {SizeClass::Tiny, SizeClass::Small, SizeClass::Default}) {
      leir::Program a = emit(*w, 5, s), b = emit(*w, 5, s);
      EXPECT_EQ(leir::program_to_json(a).dump(), leir::program_to_json(b).dump());
    }
  }
}

TEST(Level2, ImpossibleConstraintsAreClearErrors) {
  const Workload* w = find_workload("Conv2d_GroupNorm_Scale_MaxPool_Clamp");
  ASSERT_NE(w, nullptr);
  HyperValues hv = sample_hyper(*w, 1, SizeClass::Tiny);
  hv["out_channels"] = 5;
  hv["groups"] = 2;
  try {
    emit(*w, hv);
    FAIL() << "groups=2 does not divide out_channels=5";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("out_channels % groups == 0"), std::string::npos) << e.what();
  }
}

TEST(Level2, TinyAgreesWithPyTorchOnThreeSeeds) {
  std::vector<testing::OracleCase> cases;
  for (const auto* w : level2())
    for (uint64_t seed : {1u, 2u, 3u}) {
      HyperValues hv = sample_hyper(*w, seed, SizeClass::Tiny);
      nlohmann::json hp = nlohmann::json::object();
      for (const auto& [k, v] : hv) hp[k] = v;
      cases.push_back({w->name + "/seed" + std::to_string(seed), emit(*w, hv), w->torch_reference, hp, seed});
    }
  auto results = testing::run_oracle(cases);
  double worst = 0;
  int failed = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (!r.error.empty() || !(r.rel_err <= 1e-10)) {
      ++failed;
      ADD_FAILURE() << r.id << ": rel err " << r.rel_err << " " << r.error;
    }
    worst = std::max(worst, r.rel_err);
  }
  std::printf("level 2: %zu cases checked, %d failed, worst relative error %.3g\n", results.size(), failed, worst);
}

}  // namespace
}  // namespace steptp::workloads
