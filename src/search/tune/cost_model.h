// The tuner's cost model: predicts a candidate's log2 speedup over the root from its features
// (search/tune/feature_extractor.h). Learned: XGBoost gradient-boosted trees (the model MetaSchedule
// uses), trained through its C API on the candidates measured so far (the store's facts), and
// retrained after every round. Cold start (fewer than kMinTrainingSamples measurements): the
// analytic prior, -log2 of the analytic cost (ir/analysis/cost.h) relative to the root's — which the trees also see
// as a feature. Training is single-threaded with a fixed seed, so the same measurements give the
// same model and the same ranking, byte for byte.
#pragma once

#include <memory>
#include <vector>

#include "search/tune/feature_extractor.h"

namespace steptp::tune {

inline constexpr size_t kMinTrainingSamples = 6;

class CostModel {
 public:
  CostModel();
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  // Replaces the model by one trained on (features, measured log2 speedup over the root).
  // Fewer than kMinTrainingSamples: back to the prior. Throws base::Error (Failed) on an XGBoost error.
  void train(const std::vector<Features>& x, const std::vector<double>& log2_speedup);
  // Predicted log2 speedup over the root (higher is better).
  std::vector<double> predict(const std::vector<Features>& x) const;
  bool learned() const { return booster_ != nullptr; }

  // The prior alone: -(log2 analytic estimate) (its feature), up to a constant per root.
  static double prior(const Features& x);

 private:
  void* booster_ = nullptr;  // BoosterHandle
};

// Ranking quality on held-out data: Kendall's tau-b between predicted and measured, and top-k
// recall (how many of the k truly best are among the k predicted best, over k).
double kendall_tau(const std::vector<double>& predicted, const std::vector<double>& measured);
double top_k_recall(const std::vector<double>& predicted, const std::vector<double>& measured, size_t k);

}  // namespace steptp::tune
