// Level-2 workloads: every draw yields the registered reference text (no hyper-value baked into
// the Python), every size class emits, and tiny programs agree with PyTorch on 3 seeds.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "composite_oracle.h"
#include "ir/leir/program_io.h"
#include "front/workloads/level2_chain.h"
#include "front/workloads/workload.h"

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
  } catch (const base::Error& e) {
    EXPECT_EQ(e.kind(), base::ErrorKind::BadRequest);
    EXPECT_NE(std::string(e.what()).find("out_channels % groups == 0"), std::string::npos) << e.what();
  }
}

// The level-2 workloads that exist in the public translator's corpus reproduce its records byte
// for byte at the corpus shapes: the LEIR text and the signature (names, roles, shapes, constant
// values such as the causal mask).
TEST(Level2, ReproducesPublicTranslatorRecordsByteForByte) {
  std::map<std::string, nlohmann::json> corpus;
  std::ifstream in(std::string(STEPTP_SHARED_DIR) + "/corpus/public_translator_sample.jsonl");
  ASSERT_TRUE(in) << "corpus not found under " << STEPTP_SHARED_DIR;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) {
      auto j = nlohmann::json::parse(line);
      corpus[j["name"].get<std::string>()] = j;
    }
  const std::map<std::string, HyperValues> cases = {
      {"MatMul4D_MatMul4D", {{"batch", 2}, {"heads", 6}, {"rows", 8}, {"inner", 5}, {"cols", 4}}},
      {"conv2d_conv2d_padding", {{"batch", 2}, {"in_channels", 3}, {"out_channels", 4}, {"height", 16},
                                 {"width", 8}, {"kernel_h", 5}, {"kernel_w", 3}, {"padding", 2}}},
      {"conv1d_conv1d", {{"batch", 2}, {"in_channels", 3}, {"out_channels", 8}, {"length", 64}, {"kernel", 3}}},
      {"exp_exp", {{"batch", 2}, {"rows", 8}, {"inner", 16}, {"cols", 32}}},
      {"Gemm_Multiply_LeakyReLU", {{"batch", 2}, {"in_features", 64}, {"out_features", 32}}},
      {"Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish", {{"batch", 2}, {"in_features", 32}, {"out_features", 64}}},
      {"Conv3d_Mish_Tanh", {{"batch", 2}, {"in_channels", 3}, {"out_channels", 4}, {"depth", 4}, {"height", 8},
                            {"width", 8}, {"kernel", 3}}},
      {"Matmul_Mean_Softmax", {{"batch", 2}, {"in_features", 50}, {"out_features", 25}}},
      {"Conv2d_Divide_LeakyReLU", {{"batch", 2}, {"in_channels", 3}, {"out_channels", 4}, {"height", 8},
                                   {"width", 8}, {"kernel", 3}}},
      {"Gemm_Swish_Divide_Clamp_Tanh_Clamp", {{"batch", 2}, {"in_features", 64}, {"out_features", 32}}},
      {"Conv2d_Subtract_Subtract_Mish", {{"batch", 2}, {"in_channels", 3}, {"out_channels", 4}, {"height", 8},
                                         {"width", 8}, {"kernel", 3}}},
      {"Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp",
       {{"batch", 2}, {"in_channels", 3}, {"out_channels", 24}, {"height", 16}, {"width", 16}, {"kernel", 3},
        {"groups", 8}}},
      {"MHA_max", {{"batch", 2}, {"seq_len", 12}, {"embed", 32}, {"heads", 8}}},
      {"MQA_sum", {{"batch", 2}, {"seq_len", 16}, {"embed", 32}, {"heads", 8}}},
      {"MHA_Gemm_GeLU", {{"batch", 2}, {"seq_len", 12}, {"embed", 32}, {"heads", 8}, {"out_features", 4}}},
      {"MQA_Gemm_GeLU", {{"batch", 2}, {"seq_len", 16}, {"embed", 32}, {"heads", 8}, {"out_features", 4}}},
      {"GQA_Gemm_Tanh_sum",
       {{"batch", 2}, {"seq_len", 16}, {"embed", 32}, {"heads", 8}, {"kv_heads", 2}, {"out_features", 4}}},
  };
  for (const auto& [name, hv] : cases) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(corpus.count(name));
    const Workload* w = find_workload(name);
    ASSERT_NE(w, nullptr);
    nlohmann::json mine = leir::program_to_json(emit(*w, hv));
    const nlohmann::json& pub = corpus[name];
    EXPECT_EQ(mine["leir"], pub["leir"]);
    ASSERT_EQ(mine["known"].size(), pub["known"].size());
    for (size_t i = 0; i < pub["known"].size(); ++i) {
      for (const char* key : {"name", "role", "dtype", "shape"})
        EXPECT_EQ(mine["known"][i][key], pub["known"][i][key]) << key << " of known #" << i;
      if (pub["known"][i].contains("value")) {
        const auto& a = mine["known"][i]["value"];
        const auto& b = pub["known"][i]["value"];
        ASSERT_EQ(a.size(), b.size());
        auto number = [](const nlohmann::json& v) { return v.is_boolean() ? double(v.get<bool>()) : v.get<double>(); };
        for (size_t k = 0; k < b.size(); ++k) EXPECT_EQ(number(a[k]), number(b[k])) << "value " << k;
      }
    }
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
