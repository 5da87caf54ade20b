// stats.json's record-level fields (apps/dataset/record_stats.h) recomputed here, independently, from
// the steps.jsonl the same run wrote: every number in them is traceable to the records.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "apps/dataset/dataset.h"
#include "dataset/dataset_test_util.h"

namespace steptp::dataset {
namespace {

using namespace testing;

class RecordStatsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const fs::path dir = testing::tmpdir("record_stats_test", "base");
    GenerateOptions o = small_search(dir.string(), 11, 4);
    o.measured = false;  // the analytic cost: these fields are computed the same way either way
    ASSERT_TRUE(generate(o).complete);
    steps_ = new std::vector<json>(lines(dir / "steps.jsonl"));
    stats_ = new json(json::parse(slurp(dir / "stats.json")));
    ASSERT_GT(steps_->size(), 5u);
  }
  static void TearDownTestSuite() {
    delete steps_;
    delete stats_;
  }
  static std::vector<json>* steps_;
  static json* stats_;
};
std::vector<json>* RecordStatsTest::steps_ = nullptr;
json* RecordStatsTest::stats_ = nullptr;

TEST_F(RecordStatsTest, ImprovingSharePerStrategyMatchesTheRecords) {
  std::map<std::string, std::pair<int, int>> per;  // strategy -> (single, improving)
  int single = 0, improving = 0;
  for (const auto& r : *steps_) {
    if (r["kind"] != "single") continue;
    const auto& a = r["answers"][0];
    const bool imp = a["label"] == "improving";
    auto& v = per[a["strategy"].get<std::string>()];
    v.first++;
    v.second += imp;
    single++;
    improving += imp;
  }
  const json& s = (*stats_)["improving_share"];
  EXPECT_EQ(s["single"], single);
  EXPECT_EQ(s["improving"], improving);
  EXPECT_EQ(s["single"], (*stats_)["single"]);
  EXPECT_NEAR(s["share"].get<double>(), double(improving) / single, 5e-5);
  ASSERT_EQ(s["per_strategy"].size(), per.size());
  for (const auto& [name, v] : per) {
    const json& p = s["per_strategy"][name];
    EXPECT_EQ(p["single"], v.first) << name;
    EXPECT_EQ(p["improving"], v.second) << name;
    EXPECT_NEAR(p["share"].get<double>(), double(v.second) / v.first, 5e-5) << name;
  }
}

TEST_F(RecordStatsTest, DepthDistributionCountsEveryRecord) {
  std::map<int, std::pair<int, int>> per;  // depth -> (single, multi)
  for (const auto& r : *steps_) {
    auto& v = per[r["depth"].get<int>()];
    (r["kind"] == "single" ? v.first : v.second)++;
  }
  const json& d = (*stats_)["depth_distribution"];
  ASSERT_EQ(d.size(), per.size());
  int total = 0, k = 0;
  for (const auto& [depth, v] : per) {
    EXPECT_EQ(d[k]["depth"], depth);
    EXPECT_EQ(d[k]["single"], v.first);
    EXPECT_EQ(d[k]["multi"], v.second);
    EXPECT_EQ(d[k]["records"], v.first + v.second);
    total += d[k]["records"].get<int>();
    ++k;
  }
  EXPECT_EQ(total, (*stats_)["records"]);
  EXPECT_GT(per.size(), 1u) << "a depth-2 search should give records at two depths";
}

TEST_F(RecordStatsTest, BestFoundSpeedupIsTheMaximumOverEachRootsRecordsAndTheRoot) {
  std::map<std::string, std::vector<double>> per;
  for (const auto& r : *steps_)
    if (r["kind"] == "single")
      per[r["root"]["key"].get<std::string>()].push_back(r["answers"][0]["cost"]["speedup_vs_root"].get<double>());
  const json& b = (*stats_)["best_found_speedup"];
  ASSERT_EQ(b["roots"], per.size());
  ASSERT_EQ(b["per_root"].size(), per.size());
  std::vector<double> best;
  size_t k = 0;
  for (const auto& [key, v] : per) {
    const json& p = b["per_root"][k++];
    EXPECT_EQ(p["key"], key);
    EXPECT_EQ(p["records"], v.size());
    // Exactly a value some record stores (no re-rounding), or the root's own 1 when every
    // recorded answer is slower.
    EXPECT_EQ(p["speedup_vs_root"].get<double>(), std::max(1.0, *std::max_element(v.begin(), v.end()))) << key;
    best.push_back(p["speedup_vs_root"].get<double>());
  }
  std::sort(best.begin(), best.end());
  EXPECT_EQ(b["median"].get<double>(), best[(best.size() - 1) / 2]);
}

}  // namespace
}  // namespace steptp::dataset
