// The shortcut policy on multi-answer records (apps/dataset/shortcut.h): at most multi_trivial_max
// trivially applicable strategies per answer set, and no strategy in more than
// multi_per_strategy_cap multi-answer records; stats.json's multi_answer counts match a recount.
// The cap is shown to bind: without it the most frequent strategy exceeds it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/dataset/dataset.h"
#include "dataset/dataset_test_util.h"
#include "apps/dataset/shortcut.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::dataset {
namespace {

using namespace testing;

GenerateOptions opts(const std::string& out) {
  GenerateOptions o = small_search(out, 3, 6);
  o.beam = 2;
  o.eval_fraction = 0.2;
  o.token_sample = 0;
  return o;
}

std::map<std::string, int> multi_counts(const fs::path& d, int* records, int* max_trivial) {
  std::map<std::string, int> c;
  *records = 0;
  *max_trivial = 0;
  for (const auto& r : lines(d / "steps.jsonl")) {
    if (r["kind"] != "multi") continue;
    ++*records;
    int triv = 0;
    std::set<std::string> seen;
    for (const auto& a : r["answers"]) {
      std::string s = a["strategy"];
      EXPECT_TRUE(seen.insert(s).second) << "strategy twice in one answer set: " << s;
      c[s]++;
      triv += is_trivial_strategy(s);
    }
    *max_trivial = std::max(*max_trivial, triv);
  }
  return c;
}

TEST(MultiAnswer, TrivialStrategiesAndPerStrategyAppearancesAreCapped) {
  fs::path d = fs::temp_directory_path() / ("steptp_multi_test_" + std::to_string(::getpid()));
  fs::remove_all(d);
  auto o = opts(d.string());
  QuietRunner quiet;  // the counts must not depend on the machine's noise (measurement drops noisy records)
  o.tune_runner = &quiet;
  o.multi_per_strategy_cap = 1000000;  // first without the cap
  ASSERT_TRUE(generate(o).complete);
  int n_free = 0, triv_free = 0;
  auto free_counts = multi_counts(d, &n_free, &triv_free);
  ASSERT_GT(n_free, 5);
  EXPECT_LE(triv_free, o.multi_trivial_max);
  int top = 0;
  for (const auto& [s, n] : free_counts) top = std::max(top, n);

  const int cap = std::max(2, top / 2);  // binds: the most frequent strategy had twice as many
  o.multi_per_strategy_cap = cap;
  ASSERT_TRUE(generate(o).complete);  // re-exports from the checkpoint (the cap is export-only)
  int n_cap = 0, triv_cap = 0;
  auto capped = multi_counts(d, &n_cap, &triv_cap);
  EXPECT_GT(n_cap, 0);
  EXPECT_LE(triv_cap, o.multi_trivial_max);
  int answers = 0;
  for (const auto& [s, n] : capped) {
    EXPECT_LE(n, cap) << s;
    answers += n;
  }
  // stats.json reports the same counts and shares.
  std::ifstream f(d / "stats.json");
  std::stringstream ss;
  ss << f.rdbuf();
  auto st = json::parse(ss.str());
  EXPECT_EQ(st["multi_answer"]["answers"].get<int>(), answers);
  EXPECT_EQ(st["multi_answer"]["per_strategy_cap"].get<int>(), cap);
  for (const auto& [s, n] : capped) {
    EXPECT_EQ(st["multi_answer"]["per_strategy"][s]["records"].get<int>(), n) << s;
    EXPECT_LE(st["multi_answer"]["per_strategy"][s]["share_of_answers"].get<double>(),
              double(cap) / double(answers) + 1e-4);
  }
  // The cap binds by dropping whole records or answers over it; stats.json lists only the
  // counters that are non-zero.
  EXPECT_GT(st["filter_drops"].value("multi_per_strategy_cap", 0) + st["filter_drops"].value("multi_answer_over_cap", 0),
            0);
  fs::remove_all(d);
}

}  // namespace
}  // namespace steptp::dataset
