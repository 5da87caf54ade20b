// The tuner's cost model: predicts a candidate's log2 speedup over the root from its features
// (search/tune/feature_extractor.h). Learned: XGBoost gradient-boosted trees (the model MetaSchedule
// uses), trained through its C API on the candidates measured so far (the store's facts), and
// retrained after every round. Cold start (fewer than kMinTrainingSamples measurements): the
// analytic prior, -log2 of the analytic cost (ir/analysis/cost.h) relative to the root's — which the trees also see
// as a feature. Training is single-threaded with a fixed seed, so the same measurements give the
// same model and the same ranking, byte for byte.
//
// A pre-trained model (PretrainedModel, docs/tune.md "A cost model that transfers") is trained
// once on many roots' measurements of one machine kind and given to the tuner with `--cost-model`;
// the per-root model then starts from its trees and boosts a few more on the root's measurements.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/tune/feature_extractor.h"

namespace steptp::tune {

inline constexpr size_t kMinTrainingSamples = 6;

// The measured programs of one root: the unit a ranking is learned and judged on.
struct RootGroup {
  std::string workload;  // the workload's name (leave-workloads-out splits by it)
  std::string family;    // its family (matmul, conv, ...; a stricter split)
  std::string root;      // content hash of the root program's text
  Features root_x;
  std::vector<Features> x;
  std::vector<double> log2_speedup;  // measured, over the root (the root itself: 0)
};

// What a pre-trained model learns from log2 speedup over the root. Rank: XGBoost's pairwise
// ranking objective with one query group per root, so only the order of programs within a root
// is learned (what the search needs); speedups of different workloads (100x for a naive GEMM, 1x
// for a relu) are never compared, so the trees do not spend themselves on each workload's scale.
// Regression: squared error on the log2 speedup itself, for comparison.
enum class Objective { Rank, Regression };
Objective objective_from(const std::string& name);  // "rank" | "regression"; BadRequest otherwise

class PretrainedModel {
 public:
  // Inputs are a program's features and their difference from its root's (what the steps changed;
  // absolute sizes alone say little across workloads). Deterministic for a seed (one thread).
  // Throws base::Error: Invalid when no group holds two programs, Failed on an XGBoost error.
  static std::shared_ptr<const PretrainedModel> train(const std::vector<RootGroup>& groups,
                                                      const std::string& machine_kind, uint64_t seed,
                                                      Objective objective = Objective::Rank);
  // A file written by save(). Throws base::Error (Invalid) naming the file when it is not one, or
  // was trained on other features.
  static std::shared_ptr<const PretrainedModel> load(const std::string& path);
  void save(const std::string& path) const;  // JSON: header + XGBoost's own JSON model

  // Scores (higher is faster; with the rank objective comparable only within one root).
  std::vector<double> predict(const Features& root, const std::vector<Features>& x) const;
  // The machine kind (machine.h `machine_kind`) its measurements were taken on.
  const std::string& machine_kind() const { return kind_; }
  Objective objective() const { return objective_; }
  // {"samples", "roots", "workloads": [names], "seed", "objective", "rounds"}.
  const nlohmann::json& training() const { return training_; }
  // XGBoost's JSON model, the start of a fine-tuned copy.
  const std::string& booster_json() const { return booster_json_; }

  PretrainedModel(const PretrainedModel&) = delete;
  PretrainedModel& operator=(const PretrainedModel&) = delete;
  ~PretrainedModel();

 private:
  PretrainedModel() = default;
  void* booster_ = nullptr;  // BoosterHandle
  std::string booster_json_, kind_;
  Objective objective_ = Objective::Rank;
  nlohmann::json training_;
};

// The model's input: features, then features minus the root's.
std::vector<float> model_inputs(const Features& root, const std::vector<Features>& x);

class CostModel {
 public:
  CostModel();
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  // Start from `pretrained` for candidates of the root whose features are `root`: until train()
  // gets kMinTrainingSamples measurements its scores rank the candidates (not the prior); then
  // its trees plus kFineTuneRounds boosted on the root's measurements (its objective, one group).
  void use_pretrained(std::shared_ptr<const PretrainedModel> pretrained, const Features& root);

  // Replaces the model by one trained on (features, measured log2 speedup over the root).
  // Fewer than kMinTrainingSamples: back to the prior (or the pre-trained model). Throws
  // base::Error (Failed) on an XGBoost error.
  void train(const std::vector<Features>& x, const std::vector<double>& log2_speedup);
  // Predicted log2 speedup over the root (higher is better); with a pre-trained rank model, a score.
  std::vector<double> predict(const std::vector<Features>& x) const;
  bool learned() const { return booster_ != nullptr || pretrained_ != nullptr; }
  bool pretrained() const { return pretrained_ != nullptr; }

  // The prior alone: -(log2 analytic estimate) (its feature), up to a constant per root.
  static double prior(const Features& x);

 private:
  void* booster_ = nullptr;  // BoosterHandle
  std::shared_ptr<const PretrainedModel> pretrained_;
  Features root_{};
};

inline constexpr int kFineTuneRounds = 20;

// Ranking quality on held-out data: Kendall's tau-b between predicted and measured, and top-k
// recall (how many of the k truly best are among the k predicted best, over k).
double kendall_tau(const std::vector<double>& predicted, const std::vector<double>& measured);
double top_k_recall(const std::vector<double>& predicted, const std::vector<double>& measured, size_t k);
// The k of the top-k recall over n held-out candidates: a quarter of them, from 1 to 5.
size_t held_out_k(size_t n);
// A ranking-quality figure as the reports give it: rounded to 4 decimals.
double round_quality(double v);

}  // namespace steptp::tune
