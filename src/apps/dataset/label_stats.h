// stats.json fields about the labels and the split of the exported records (docs/dataset.md,
// "Files"): how noisy the measurements behind the labels are, how sure their confidence bounds
// are, and which families eval covers. Like record_stats.h, every number is recomputable from
// steps.jsonl and depends only on the records.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace steptp::dataset {

// {"min", "p25", "median", "p75", "max", "count"} (each the element at floor(p * (n - 1)) of the
// sorted values, so the median is the lower median); {} for none.
nlohmann::json quantiles(std::vector<double> v);

// Lower edges of the CV histogram's buckets: [0, 0.01), [0.01, 0.02), [0.02, 0.05), [0.05, 0.1),
// [0.1, 0.2), [0.2, inf) — finer below the quiet limit 0.05 (measurement.h, kQuietCv), where most
// comparisons of a quiet machine fall, and one bucket for the preempted runs above 0.2.
inline constexpr double kCvBucketEdges[] = {0, 0.01, 0.02, 0.05, 0.1, 0.2};

class LabelStats {
 public:
  // One record as steps.jsonl holds it (answers[].label/cost).
  void add(const nlohmann::json& record);
  // Over every answer: {"answers", "labels": {label: n}, "measured", "comparison_cv": quantiles
  // of the larger CV of the two timings of each measured comparison against the parent,
  // "cv_above": {"0.05", "0.1"}, "cv_histogram": [{"from", "to", "comparisons"}] those CVs counted
  // in the half-open buckets of kCvBucketEdges (the last "to" is null: unbounded; the counts sum
  // to "measured"), "repeats": quantiles of the smaller repeat count of the two,
  // "with_ci" (answers with cost.speedup_ci), "ci_low", "ci_high": quantiles of its bounds,
  // "ci_contains_1", "noise_verdicts": {cost.noise_verdict: n}}.
  nlohmann::json to_json() const;

 private:
  int answers_ = 0, measured_ = 0, with_ci_ = 0, ci_contains_1_ = 0, cv_above_005_ = 0, cv_above_01_ = 0;
  std::map<std::string, int> labels_, verdicts_;
  std::vector<double> cv_, repeats_, ci_low_, ci_high_;
};

class EvalCoverage {
 public:
  // One record as steps.jsonl holds it (split, root.key, root.family).
  void add(const nlohmann::json& record);
  // {"families", "families_in_eval", "per_family": {family: {"train_roots", "eval_roots",
  //  "train_records", "eval_records", "held_out": "none" | "roots" | "family"}}}.
  nlohmann::json to_json() const;

 private:
  struct Family {
    std::set<std::string> roots[2];  // [0] train, [1] eval
    int records[2] = {0, 0};
  };
  std::map<std::string, Family> families_;
};

}  // namespace steptp::dataset
