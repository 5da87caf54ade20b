// The stats.json fields that summarize the exported records themselves (docs/dataset.md,
// "stats.json"): how often each strategy's single-answer step improves, how deep the records'
// states lie, and the best speedup over the root found for each root. Every number is recomputable
// from steps.jsonl (tests/dataset/record_stats_test.cc does), and the result depends only on the
// records, so it is as deterministic as they are.
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

class RecordStats {
 public:
  // One record as steps.jsonl holds it (kind, depth, split, root.key/family,
  // answers[].strategy/label/cost).
  void add(const nlohmann::json& record);

  // {"improving_share": {"single", "improving", "enabling", "share", "per_strategy": {strategy:
  //   {"single", "improving", "enabling", "share"}}},
  //  "depth_distribution": [{"depth", "records", "single", "multi"}] (ascending depth),
  //  "best_found_speedup": {"roots", "median", "per_root": [{"key", "speedup_vs_root",
  //   "records"}]} (roots by key; speedup_vs_root is the largest over the root's records, or 1
  //   -- the root itself -- when every one is slower; median is the lower median, as stats.json's
  //   other quantiles)}.
  //  "label_statistics": over every answer: {"answers", "labels": {label: n}, "measured",
  //   "comparison_cv": quantiles of the larger CV of the two timings of each measured comparison
  //   against the parent, "cv_above": {"0.05", "0.1"}, "repeats": quantiles of the smaller repeat
  //   count of the two, "with_ci" (answers with cost.speedup_ci), "ci_low", "ci_high": quantiles
  //   of its bounds, "ci_contains_1", "noise_verdicts": {verdict: n}},
  //  "eval_coverage": {"families", "families_in_eval", "per_family": {family: {"train_roots",
  //   "eval_roots", "train_records", "eval_records", "held_out": "none" | "roots" | "family"}}}.
  // improving_share and best_found_speedup are over single-answer records only. Shares are
  // rounded to 4 decimals.
  nlohmann::json to_json() const;

 private:
  struct Share {
    int single = 0, improving = 0;
    int enabling = 0;  // steps of a tuned path that only enable later ones (dataset/measurement.h)
  };
  struct Depth {
    int single = 0, multi = 0;
  };
  struct Best {
    // The root itself (speedup 1) is where every trajectory starts: a root whose recorded answers
    // are all slower has found nothing better than itself, not a slower best.
    double speedup = 1;
    int records = 0;
  };
  Share all_;
  std::map<std::string, Share> per_strategy_;
  std::map<int, Depth> depth_;
  std::map<std::string, Best> best_;
  struct Labels {
    int answers = 0, measured = 0, with_ci = 0, ci_contains_1 = 0, cv_above_005 = 0, cv_above_01 = 0;
    std::map<std::string, int> labels, verdicts;
    std::vector<double> cv, repeats, ci_low, ci_high;
  };
  Labels labels_;
  struct Coverage {
    std::set<std::string> roots[2];  // [0] train, [1] eval
    int records[2] = {0, 0};
  };
  std::map<std::string, Coverage> coverage_;
};

}  // namespace steptp::dataset
