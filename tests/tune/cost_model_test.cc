// Features (search/tune/feature_extractor.h) and the cost model (search/tune/cost_model.h).
#include <gtest/gtest.h>

#include <cmath>

#include "ir/analysis/cost.h"
#include "ir/leir/program_io.h"
#include "search/tune/cost_model.h"
#include "search/tune/feature_extractor.h"

namespace steptp::tune {
namespace {

size_t index_of(std::string_view name) {
  const auto& n = feature_names();
  for (size_t i = 0; i < n.size(); ++i)
    if (n[i] == name) return i;
  ADD_FAILURE() << "no feature " << name;
  return 0;
}

// D = A @ C, reduction outside (naive: C read with stride n) or inside the column loop.
leir::Program gemm(bool unit_stride) {
  std::string body = unit_stride
                         ? "B^{256}_{tx=0}L^{256}_{c=0}L^{256}_{a=0}[D^{f32,g}_{tx,a}=D^{f32,g}_{tx,a}+A^{f32,g}_{tx,c}*C^{f32,g}_{c,a};];"
                         : "B^{256}_{tx=0}L^{256}_{a=0}L^{256}_{c=0}[D^{f32,g}_{tx,a}=D^{f32,g}_{tx,a}+A^{f32,g}_{tx,c}*C^{f32,g}_{c,a};];";
  return leir::program_from_text("input A: f32[256,256]\ninput C: f32[256,256]\noutput D: f32[256,256]\n" + body,
                                 "gemm.leir");
}

Machine machine() {
  Machine m;
  m.cores = 2;
  m.threads = 2;
  return m;
}

TEST(Features, SeeStridesVectorizationAndTheParallelRegion) {
  auto naive = extract_features(gemm(false), machine());
  auto good = extract_features(gemm(true), machine());
  // Naive: innermost c reads C[c,a] with stride 256 and D[tx,a] invariant; A unit.
  EXPECT_NEAR(naive[index_of("strided_share")], 0.25, 1e-6);
  EXPECT_NEAR(good[index_of("strided_share")], 0.0, 1e-6);
  EXPECT_EQ(naive[index_of("vectorizable_share")], 0);
  EXPECT_EQ(good[index_of("vectorizable_share")], 1);
  EXPECT_NEAR(good[index_of("log2_parallel_extent")], 8, 1e-6);
  EXPECT_NEAR(good[index_of("cores_busy_share")], 1, 1e-6);
  EXPECT_NEAR(good[index_of("log2_instances")], 24, 1e-6);
  const analysis::CostMachine m = cost_machine(machine());
  EXPECT_LT(analysis::analytic_cost(gemm(true), m), analysis::analytic_cost(gemm(false), m) / 4);
  EXPECT_GT(CostModel::prior(good), CostModel::prior(naive));
}

TEST(CostModel, RankingMetrics) {
  std::vector<double> m = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(kendall_tau(m, m), 1);
  EXPECT_DOUBLE_EQ(kendall_tau({5, 4, 3, 2, 1}, m), -1);
  EXPECT_DOUBLE_EQ(top_k_recall({0, 0, 9, 8, 1}, m, 2), 0.5);  // predicted {2,3}, true {3,4}
  EXPECT_DOUBLE_EQ(top_k_recall(m, m, 3), 1);
}

TEST(CostModel, LearnsFromMeasurementsAndFallsBackToThePrior) {
  CostModel cm;
  Features a{}, b{};
  a[24] = 10;
  b[24] = 12;
  EXPECT_FALSE(cm.learned());
  EXPECT_GT(cm.predict({a, b})[0], cm.predict({a, b})[1]);  // prior: lower estimate is better
  // The truth depends on feature 5 only (unit-stride share), not on the prior's feature.
  std::vector<Features> x;
  std::vector<double> y;
  for (int i = 0; i < 40; ++i) {
    Features f{};
    f[5] = float(i % 10) / 10;
    f[24] = float((i * 7) % 13);
    x.push_back(f);
    y.push_back(3 * f[5]);
  }
  cm.train(x, y);
  ASSERT_TRUE(cm.learned());
  std::vector<Features> test;
  std::vector<double> truth;
  for (int i = 0; i < 10; ++i) {
    Features f{};
    f[5] = float(9 - i) / 10 + 0.05f;
    f[24] = float(i);
    test.push_back(f);
    truth.push_back(3 * f[5]);
  }
  EXPECT_GT(kendall_tau(cm.predict(test), truth), 0.9);
  // Same data, same model, same bytes.
  CostModel again;
  again.train(x, y);
  EXPECT_EQ(again.predict(test), cm.predict(test));
}

}  // namespace
}  // namespace steptp::tune
