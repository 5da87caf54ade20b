// The label and eval-coverage fields of stats.json (apps/dataset/label_stats.h) on hand-made records:
// the CV of a comparison is the larger of its two sides, the repeats the smaller, confidence
// bounds and verdicts are counted only where the records carry them, the CV histogram counts each
// measured comparison in one bucket, and a family is held out by roots or whole.
#include <gtest/gtest.h>

#include <iterator>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/dataset/label_stats.h"

using nlohmann::json;

namespace steptp::dataset {
namespace {

json timed(double cv_parent, double cv_result, int repeats_parent, int repeats_result) {
  return {{"measured", true},
          {"speedup_vs_parent", 1.0},
          {"vs_parent", {{"parent", {{"cv", cv_parent}, {"repeats", repeats_parent}}},
                         {"result", {{"cv", cv_result}, {"repeats", repeats_result}}}}}};
}

json record(const std::string& split, const std::string& family, const std::string& key, json answers) {
  return {{"split", split}, {"root", {{"family", family}, {"key", key}}}, {"answers", std::move(answers)}};
}

TEST(LabelStats, CvRepeatsAndConfidenceBounds) {
  LabelStats s;
  json a = {{"label", "improving"}, {"cost", timed(0.02, 0.2, 5, 9)}};
  a["cost"]["speedup_ci"] = {1.1, 1.4};
  a["cost"]["noise_verdict"] = "faster";
  json b = {{"label", "non_improving"}, {"cost", timed(0.01, 0.03, 7, 6)}};
  b["cost"]["speedup_ci"] = {0.9, 1.2};
  b["cost"]["noise_verdict"] = "within_noise";
  json c = {{"label", "non_improving"}, {"cost", {{"measured", false}, {"speedup_vs_parent", 0.5}}}};
  s.add(record("train", "conv", "w/a", {a, b}));
  s.add(record("eval", "conv", "w/b", {c}));
  json j = s.to_json();
  EXPECT_EQ(j["answers"], 3);
  EXPECT_EQ(j["measured"], 2);  // the modelled answer has no timings
  EXPECT_EQ(j["labels"], (json{{"improving", 1}, {"non_improving", 2}}));
  EXPECT_EQ(j["comparison_cv"]["max"], 0.2);
  EXPECT_EQ(j["comparison_cv"]["min"], 0.03);
  EXPECT_EQ(j["cv_above"]["0.05"], 1);
  EXPECT_EQ(j["cv_above"]["0.1"], 1);
  EXPECT_EQ(j["repeats"]["min"], 5.0);
  EXPECT_EQ(j["repeats"]["max"], 6.0);
  EXPECT_EQ(j["with_ci"], 2);
  EXPECT_EQ(j["ci_contains_1"], 1);
  EXPECT_EQ(j["ci_low"]["min"], 0.9);
  EXPECT_EQ(j["noise_verdicts"], (json{{"faster", 1}, {"within_noise", 1}}));
}

TEST(LabelStats, CvHistogramCountsEveryMeasuredComparisonOnce) {
  LabelStats s;
  // The larger CV of each comparison: on the buckets' edges (a lower edge belongs to its bucket)
  // and inside them; the modelled answer has no CV and no bucket.
  const std::vector<double> cvs = {0.0, 0.0099, 0.01, 0.015, 0.05, 0.07, 0.0999, 0.1999, 0.2, 3.0};
  json answers = json::array();
  for (double cv : cvs) answers.push_back({{"label", "non_improving"}, {"cost", timed(cv / 2, cv, 5, 5)}});
  answers.push_back({{"label", "non_improving"}, {"cost", {{"measured", false}, {"speedup_vs_parent", 0.5}}}});
  s.add(record("train", "conv", "w/a", answers));
  const json j = s.to_json();
  const json& h = j["cv_histogram"];
  ASSERT_EQ(h.size(), std::size(kCvBucketEdges));
  std::vector<double> from;
  std::vector<int> counts;
  int sum = 0;
  for (const auto& b : h) {
    from.push_back(b["from"]);
    counts.push_back(b["comparisons"]);
    sum += b["comparisons"].get<int>();
  }
  EXPECT_EQ(from, (std::vector<double>{0, 0.01, 0.02, 0.05, 0.1, 0.2}));
  for (size_t b = 0; b + 1 < h.size(); ++b) EXPECT_EQ(h[b]["to"], h[b + 1]["from"]);
  EXPECT_TRUE(h.back()["to"].is_null());
  EXPECT_EQ(counts, (std::vector<int>{2, 2, 0, 3, 1, 2}));
  // Every measured comparison once: the buckets sum to the count the quantiles are over.
  EXPECT_EQ(sum, j["measured"].get<int>());
  EXPECT_EQ(sum, j["comparison_cv"]["count"].get<int>());
  EXPECT_EQ(sum, int(cvs.size()));
}

TEST(EvalCoverage, FamiliesHeldOutByRootsOrWhole) {
  EvalCoverage c;
  json none = json::array();
  c.add(record("train", "conv", "w/a", none));
  c.add(record("train", "conv", "w/a", none));
  c.add(record("eval", "conv", "w/b", none));
  c.add(record("eval", "loss", "w/c", none));
  c.add(record("train", "norm", "w/d", none));
  json j = c.to_json();
  EXPECT_EQ(j["families"], 3);
  EXPECT_EQ(j["families_in_eval"], 2);
  EXPECT_EQ(j["per_family"]["conv"], (json{{"train_roots", 1}, {"eval_roots", 1}, {"train_records", 2},
                                          {"eval_records", 1}, {"held_out", "roots"}}));
  EXPECT_EQ(j["per_family"]["loss"]["held_out"], "family");
  EXPECT_EQ(j["per_family"]["norm"]["held_out"], "none");
}

}  // namespace
}  // namespace steptp::dataset
