// The stats.json fields that summarize the exported records themselves (docs/dataset.md,
// "stats.json"): how often each strategy's single-answer step improves, how deep the records'
// states lie, and the best speedup over the root found for each root. Every number is recomputable
// from steps.jsonl (tests/dataset/record_stats_test.cc does), and the result depends only on the
// records, so it is as deterministic as they are.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace steptp::dataset {

class RecordStats {
 public:
  // One record as steps.jsonl holds it (kind, depth, root.key, answers[].strategy/label/cost).
  void add(const nlohmann::json& record);

  // {"improving_share": {"single", "improving", "enabling", "share", "per_strategy": {strategy:
  //   {"single", "improving", "enabling", "share"}}},
  //  "depth_distribution": [{"depth", "records", "single", "multi"}] (ascending depth),
  //  "best_found_speedup": {"roots", "median", "per_root": [{"key", "speedup_vs_root",
  //   "records"}]} (roots by key; speedup_vs_root is where the root's tuned path ends (its
  //   answers' path.speedup_vs_root, apps/dataset/measurement.h: the path ends at its best state), else
  //   the largest over the root's records, or 1 -- the root itself -- when every one is slower;
  //   median is the lower median, as stats.json's other quantiles)}.
  // Over single-answer records only, except depth_distribution. Shares are rounded to 4 decimals.
  nlohmann::json to_json() const;

 private:
  struct Share {
    int single = 0, improving = 0;
    int enabling = 0;  // steps of a tuned path that only enable later ones (apps/dataset/measurement.h)
  };
  struct Depth {
    int single = 0, multi = 0;
  };
  struct Best {
    // The root itself (speedup 1) is where every trajectory starts: a root whose recorded answers
    // are all slower has found nothing better than itself, not a slower best.
    double speedup = 1;
    std::optional<double> path_end;  // the tuned path's end, where the root has one
    int records = 0;
  };
  Share all_;
  std::map<std::string, Share> per_strategy_;
  std::map<int, Depth> depth_;
  std::map<std::string, Best> best_;
};

}  // namespace steptp::dataset
