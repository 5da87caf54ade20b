// `generate --cost measured` (apps/dataset/measurement.h): records carry CPU timings; the output is a
// deterministic function of the measurement store (identical bytes across --jobs and across an
// interrupted + resumed run given the same store); a kernel that crashes or runs out of memory
// costs its comparison, never the run.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/dataset/dataset.h"
#include "dataset/dataset_test_util.h"
#include "apps/dataset/measurement.h"
#include "ir/leir/program_io.h"
#include "search/analytic/search.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::dataset {
namespace {

using namespace testing;

fs::path tmpdir(const std::string& name) { return testing::tmpdir("measured_test", name); }

GenerateOptions small_opts(const fs::path& out, const fs::path& store) {
  GenerateOptions o = small_search(out.string(), 11, 3);
  o.measurements = store.string();
  o.non_improving_per_state = 4;
  o.measure_min_time = 0.001;
  return o;
}

const std::vector<std::string> kFiles = {"train.jsonl", "eval.jsonl", "steps.jsonl", "manifest.json", "stats.json"};

bool positive_finite(const json& v) { return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0; }

class Measured : public ::testing::Test {
 protected:
  // One interrupted + resumed run fills the store; the tests compare other runs against it.
  static void SetUpTestSuite() {
    root_ = new fs::path(tmpdir(""));
    auto o = small_opts(*root_ / "base", *root_ / "store.sqlite");
    o.stop_after = 1;
    auto s = generate(o);
    ASSERT_FALSE(s.complete);
    o.stop_after = -1;
    s = generate(o);
    ASSERT_TRUE(s.complete);
    measured_first_ = s.pairs_measured;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*root_);
    delete root_;
  }
  static fs::path* root_;
  static int measured_first_;
};
fs::path* Measured::root_ = nullptr;
int Measured::measured_first_ = 0;

TEST_F(Measured, RecordsCarryPositiveTimingsAndConsistentSpeedups) {
  auto steps = lines(*root_ / "base" / "steps.jsonl");
  ASSERT_GT(steps.size(), 5u);
  EXPECT_GT(measured_first_, 0);
  auto o = small_opts("", "");
  for (const auto& r : steps) {
    EXPECT_TRUE(r["parent_speedup_measured"].get<bool>());
    EXPECT_TRUE(positive_finite(r["parent_speedup_vs_root"]));
    if (r["depth"] == 1) EXPECT_EQ(r["parent_speedup_vs_root"].get<double>(), 1.0);
    for (const auto& a : r["answers"]) {
      const auto& c = a["cost"];
      ASSERT_TRUE(c["measured"].get<bool>()) << r["id"];
      EXPECT_EQ(c["unit"], "ms");
      EXPECT_EQ(c["threads"], 1);
      for (const char* side : {"parent", "result"}) {
        const auto& t = c["vs_parent"][side];
        for (const char* k : {"median_ms", "min_ms", "max_ms"}) EXPECT_TRUE(positive_finite(t[k])) << k;
        EXPECT_LE(t["min_ms"].get<double>(), t["median_ms"].get<double>());
        EXPECT_LE(t["median_ms"].get<double>(), t["max_ms"].get<double>());
        EXPECT_GE(t["repeats"].get<int>(), 5);
        EXPECT_GE(t["cv"].get<double>(), 0);
      }
      // The quoted medians are the interleaved sessions' medians; the speedups their ratios.
      EXPECT_EQ(c["parent"], c["vs_parent"]["parent"]["median_ms"]);
      EXPECT_EQ(c["result"], c["vs_parent"]["result"]["median_ms"]);
      EXPECT_EQ(c["root"], c["vs_root"]["root"]["median_ms"]);
      double sp = c["speedup_vs_parent"], sr = c["speedup_vs_root"];
      EXPECT_TRUE(positive_finite(c["speedup_vs_parent"]) && positive_finite(c["speedup_vs_root"]));
      // Stored medians are rounded to 4 significant digits, the ratio is of the raw medians.
      EXPECT_NEAR(sp, c["parent"].get<double>() / c["result"].get<double>(), 2e-3 * sp);
      EXPECT_NEAR(sr, c["root"].get<double>() / c["vs_root"]["result"]["median_ms"].get<double>(), 2e-3 * sr);
      // Improving: the lower bound of the speedup's 95 % interval reaches the threshold.
      const double lo = c["speedup_ci"][0], hi = c["speedup_ci"][1];
      // Every comparison rests on a quiet session (measurement.h: CV <= 0.05 a side) or on an
      // interval that tells a 5 % slowdown from a 5 % speedup.
      bool quiet = true;
      for (const char* side : {"parent", "result"}) quiet &= c["vs_parent"][side]["cv"].get<double>() <= kQuietCv;
      EXPECT_TRUE(quiet || informative({lo, hi}, o.improve_threshold)) << r["id"];
      EXPECT_TRUE(lo <= sp && sp <= hi) << r["id"];
      EXPECT_EQ(a["label"] == "improving", lo >= o.improve_threshold) << r["id"];
      // The model estimate stays, separately.
      EXPECT_TRUE(c["model"].contains("speedup_vs_parent"));
      EXPECT_TRUE(c["model"]["label"] == "improving" || c["model"]["label"] == "non_improving");
    }
  }
  // The prompt states the current program's measured speedup over the root; the think may quote
  // it (it is in the prompt) but never the step's own timings (issue 35). Whether any record past
  // its root survives here depends on the machine's noise (noisy comparisons drop their records):
  // GenerateTuned.PathRecordsChainAndARerunOnTheStoreIsIdentical asserts such records exist, on
  // deterministic timings.
  expect_later_prompts_state_measured_speedup(*root_ / "base");
  for (const auto& [r, chat] : records_with_chats(*root_ / "base")) {
    EXPECT_EQ(underived_think_numbers(r, chat), std::vector<std::string>{}) << r["id"] << "\n" << r["cot"];
    EXPECT_EQ(hindsight_phrases(r["cot"]), std::vector<std::string>{}) << r["id"] << "\n" << r["cot"];
  }
  auto m = json::parse(slurp(*root_ / "base" / "manifest.json"));
  EXPECT_TRUE(m["cost"]["measured"].get<bool>());
  EXPECT_EQ(m["cost"]["threads"], 1);
  EXPECT_EQ(m["options"]["cost"], "measured");
  auto st = json::parse(slurp(*root_ / "base" / "stats.json"));
  EXPECT_TRUE(st["speedup_measured"].get<bool>());
  EXPECT_GT(st["measurement"]["comparisons"].get<int>(), 0);
}

TEST_F(Measured, SameStoreGivesIdenticalBytesWithTwoJobs) {
  // A clean run with two workers, given the store of the interrupted + resumed single-worker run.
  auto o = small_opts(*root_ / "jobs2", *root_ / "store.sqlite");
  o.jobs = 2;
  auto s = generate(o);
  ASSERT_TRUE(s.complete);
  EXPECT_EQ(s.pairs_measured, 0);  // every comparison came from the store
  EXPECT_GT(s.pairs_reused, 0);
  for (const auto& f : kFiles) EXPECT_EQ(slurp(*root_ / "base" / f), slurp(*root_ / "jobs2" / f)) << f;
}

TEST_F(Measured, ModelCostNeedsNoStore) {
  auto o = small_opts(*root_ / "model", *root_ / "model-store.sqlite");
  o.measured = false;
  ASSERT_TRUE(generate(o).complete);
  EXPECT_FALSE(fs::exists(*root_ / "model-store.sqlite"));
  for (const auto& r : lines(*root_ / "model" / "steps.jsonl"))
    for (const auto& a : r["answers"]) EXPECT_FALSE(a["cost"]["measured"].get<bool>());
  // Same search, same filtering: the same steps as the measured run (only costs, labels and the
  // order of multi answers, fastest first once measured, differ) unless a measurement failed.
  auto meas = lines(*root_ / "base" / "steps.jsonl");
  auto model = lines(*root_ / "model" / "steps.jsonl");
  auto st = json::parse(slurp(*root_ / "base" / "stats.json"));
  auto results = [](const json& r) {
    std::multiset<std::string> hashes;
    for (const auto& a : r["answers"]) hashes.insert(a["result_hash"].get<std::string>());
    return hashes;
  };
  if (st["measurement"]["dropped_records"] == 0 && st["measurement"]["dropped_answers"] == 0) {
    ASSERT_EQ(meas.size(), model.size());
    for (size_t i = 0; i < meas.size(); ++i) EXPECT_EQ(results(meas[i]), results(model[i])) << i;
  }
}

}  // namespace
}  // namespace steptp::dataset
