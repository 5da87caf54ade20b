// Dataset v2's tune stage (apps/dataset/tuned_trajectory.h, `generate --trajectories tune`): records
// come from the tuner's measured search tree — the whole best-found path, step by step from the
// root, plus the measured alternatives one step off it — every result verified against the root;
// measured labels never contradict the record's own numbers, an "enabling" label only marks a
// step of the path whose path end pays off over the step's parent; a program's speedup over the
// root is one number; a rerun on the same store writes the same bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "apps/dataset/dataset.h"
#include "dataset/dataset_test_util.h"
#include "apps/dataset/tuned_trajectory.h"
#include "ir/leir/program_io.h"
#include "ir/verify/verifier.h"
#include "transform/sampler.h"
#include "search/tune/database.h"
#include "tune/fake_runner.h"
#include "search/tune/tuner.h"
#include "error_kind.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::dataset {
namespace {

using namespace testing;

leir::Program scale_root() {
  return leir::program_from_text(
      "input A: f64[8,64]\noutput C: f64[8,64]\n"
      "B^{8}_{tx=0}L^{64}_{a=0}[C^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}*3+1;];",
      "scale.leir");
}

std::string text(const leir::Program& p) { return leir::program_to_text(p, false); }

// The fake runner makes split → vectorize the only improvement, and the split alone not faster.
TEST(TunedTransitions, ThePathStepByStepThenItsMeasuredAlternatives) {
  const fs::path dir = tmpdir("tuned_trajectory_test", "unit");
  fs::create_directories(dir);
  const leir::Program root = scale_root();
  tune::testing::FakeRunner fake(root);
  tune::TuneOptions to;
  to.trials = 40;
  to.seed = 3;
  to.store_path = (dir / "m.sqlite").string();
  to.runner = &fake;
  const auto r = tune::tune(root, to);
  ASSERT_GE(r.best_trace.size(), 2u);

  search::SearchStats st;
  const auto ts = tuned_transitions(r, 9, 1.05, nullptr, &st);
  {
    // With the tuner's store and its verify seed, the verdicts it stored are read back, and they
    // are the verdicts a fresh verifier reaches.
    tune::ObservationStore store(to.store_path);
    const uint64_t tuner_seed = base::mix_seed(to.seed, 0x7e);
    const auto fresh = tuned_transitions(r, tuner_seed, 1.05, nullptr);
    const int64_t facts = store.size();
    const auto reused = tuned_transitions(r, tuner_seed, 1.05, &store);
    ASSERT_EQ(reused.size(), fresh.size());
    for (size_t i = 0; i < fresh.size(); ++i)
      EXPECT_EQ(verify::to_json(reused[i].report), verify::to_json(fresh[i].report)) << i;
    // Only the results the tuner never measured (none or a few) needed new verdicts.
    EXPECT_LE(store.size() - facts, int64_t(fresh.size()));
    const int64_t after = store.size();
    EXPECT_EQ(tuned_transitions(r, tuner_seed, 1.05, &store).size(), fresh.size());
    EXPECT_EQ(store.size(), after);  // every verdict is a fact now
  }
  const size_t L = r.best_trace.size();
  ASSERT_GT(ts.size(), L);
  EXPECT_EQ(st.verified, int(ts.size()));
  // The path first, in order: each step starts where the previous one ended and the last one
  // ends at the tuner's best program.
  std::vector<std::string> states{text(root)};
  for (size_t k = 0; k < L; ++k) {
    const auto& t = ts[k];
    EXPECT_EQ(t.path_step, int(k) + 1);
    EXPECT_EQ(t.path_length, int(L));
    EXPECT_EQ(t.path_speedup, r.speedup);
    EXPECT_TRUE(t.chosen);
    EXPECT_EQ(t.strategy, r.best_trace[k].strategy);
    EXPECT_EQ(t.state, int(k));
    EXPECT_EQ(t.depth, int(k) + 1);
    ASSERT_EQ(t.steps_so_far.size(), k);
    EXPECT_EQ(text(t.parent), states.back());
    EXPECT_TRUE(t.report.equivalent) << t.report.error;
    states.push_back(text(t.result));
  }
  EXPECT_EQ(states.back(), text(r.best));
  // Costs are the analytic model's (what the CoT calls "the cost model"); the tuner's learned
  // model speaks for the results it measured after its cold start.
  int learned = 0;
  for (const auto& t : ts) {
    EXPECT_EQ(t.cost_result.value, search::model_cost(t.result).value);
    EXPECT_FALSE(t.cost_result.measured);
    if (t.learned_speedup_vs_root) {
      EXPECT_GT(*t.learned_speedup_vs_root, 0);
      learned++;
    }
  }
  EXPECT_GT(learned, 0);
  // Alternatives: measured candidates one step off a path state, and measured steps from the
  // other states the tuner measured (numbered after the path's), each result once.
  std::set<std::string> measured;
  for (const auto& trial : r.history)
    if (trial.ok) measured.insert(text(strategies::replay(root, trial.trace)));
  std::set<uint64_t> results;
  for (const auto& t : ts) EXPECT_TRUE(results.insert(t.result_hash).second);
  int off_path = 0;
  for (size_t i = L; i < ts.size(); ++i) {
    const auto& t = ts[i];
    EXPECT_EQ(t.path_step, 0);
    EXPECT_FALSE(t.chosen);
    ASSERT_GE(t.state, 0);
    EXPECT_TRUE(measured.count(text(t.result))) << "every alternative is a measured trial";
    EXPECT_EQ(t.depth, int(t.steps_so_far.size()) + 1);
    if (size_t(t.state) < states.size()) {
      EXPECT_EQ(text(t.parent), states[size_t(t.state)]);
    } else {
      ++off_path;
      EXPECT_GE(t.depth, 2);
      EXPECT_TRUE(measured.count(text(t.parent))) << "an off-path state is a measured trial";
    }
    EXPECT_TRUE(t.report.equivalent);
  }
  EXPECT_GT(off_path, 0);
  EXPECT_GT(st.states, int(L) + 1);
  fs::remove_all(dir.parent_path());
}

// Every exported answer's label follows from measured fields (the rule of apps/dataset/measurement.h):
// improving = the lower bound of speedup_ci reaches the threshold; enabling = a path step before
// the path end, not improving, whose path end is >= threshold faster than the step's parent (the
// previous path state, or the root) by the lower bound of path.enabled_ci.
void expect_labels_match_measurements(const std::vector<json>& steps, double threshold) {
  std::map<std::string, std::map<int, double>> paths;  // root key -> step -> result's speedup over the root
  for (const auto& r : steps)
    for (const auto& a : r["answers"])
      if (a.contains("path")) paths[r["root"]["key"]][a["path"]["step"].get<int>()] = a["cost"]["speedup_vs_root"];
  for (const auto& r : steps)
    for (const auto& a : r["answers"]) {
      const auto& c = a["cost"];
      const double lo = c["speedup_ci"][0], hi = c["speedup_ci"][1];
      EXPECT_LE(lo, c["speedup_vs_parent"].get<double>()) << r["id"];
      EXPECT_GE(hi, c["speedup_vs_parent"].get<double>()) << r["id"];
      EXPECT_EQ(c["noise_verdict"], lo > 1 ? "faster" : hi < 1 ? "slower" : "within_noise") << r["id"];
      if (lo >= threshold) {
        EXPECT_EQ(a["label"], "improving") << r["id"];
      } else if (a["label"] == "enabling") {
        ASSERT_TRUE(a.contains("path")) << r["id"];
        const int k = a["path"]["step"], L = a["path"]["of"];
        EXPECT_LT(k, L);
        const auto& path = paths.at(r["root"]["key"]);
        // The state before the step: its producing path step's, where that record was kept.
        const double before = r["parent_speedup_vs_root"];
        if (k == 1) EXPECT_EQ(before, 1.0) << r["id"];
        else if (path.count(k - 1)) EXPECT_EQ(path.at(k - 1), before) << r["id"];
        const double enabled = a["path"]["enabled_speedup"];
        EXPECT_NEAR(enabled, path.at(L) / before, 1e-4 * enabled) << r["id"];
        EXPECT_GE(a["path"]["enabled_ci"][0].get<double>(), threshold) << r["id"];
      } else {
        EXPECT_EQ(a["label"], "non_improving") << r["id"];
      }
    }
}

// One speedup over the root per (root, program): every answer producing a program and every record
// starting from it state the same number; multi answers come fastest first.
void expect_one_speedup_per_program(const std::vector<json>& steps) {
  std::map<std::pair<std::string, std::string>, double> produced;  // (root key, program) -> speedup over the root
  for (const auto& r : steps)
    for (const auto& a : r["answers"]) {
      const auto key = std::make_pair(r["root"]["key"].get<std::string>(), a["result_program"].get<std::string>());
      auto [it, fresh] = produced.emplace(key, a["cost"]["speedup_vs_root"].get<double>());
      EXPECT_EQ(it->second, a["cost"]["speedup_vs_root"].get<double>()) << r["id"];
    }
  int checked = 0;
  for (const auto& r : steps) {
    auto it = produced.find({r["root"]["key"], r["parent_program"]});
    if (it != produced.end()) {
      EXPECT_EQ(r["parent_speedup_vs_root"].get<double>(), it->second) << r["id"];
      checked++;
    }
    for (size_t k = 1; k < r["answers"].size(); ++k)
      EXPECT_GE(r["answers"][k - 1]["cost"]["speedup_vs_parent"].get<double>(),
                r["answers"][k]["cost"]["speedup_vs_parent"].get<double>()) << r["id"];
  }
  EXPECT_GT(checked, 0);
}

GenerateOptions tuned_options(const fs::path& out, const fs::path& store) {
  GenerateOptions o = small_search(out.string(), 5, 2);
  o.trajectories = Trajectories::Tune;
  o.tune_trials = 4;
  o.measurements = store.string();
  o.measure_min_time = 0.001;
  return o;
}

// The whole pipeline with the tuner on two tiny roots, timed by QuietRunner (the real CPU's
// noise would drop what this test checks on a loaded machine; tests/dataset/measured_test.cc
// times for real): the path records chain, labels match measurements, one speedup over the root
// per program, and a two-worker rerun on the same store writes identical bytes.
TEST(GenerateTuned, PathRecordsChainAndARerunOnTheStoreIsIdentical) {
  const fs::path dir = tmpdir("tuned_trajectory_test", "generate");
  QuietRunner quiet;
  auto o = tuned_options(dir / "a", dir / "store.sqlite");
  o.tune_runner = &quiet;
  auto s = generate(o);
  ASSERT_TRUE(s.complete);
  // The records time with the tuner's runner: its comparisons of candidates against the root are
  // the records' facts (tune::comparison_key), not timed a second time.
  EXPECT_GT(s.pairs_reused, 0);
  auto steps = lines(dir / "a" / "steps.jsonl");
  ASSERT_FALSE(steps.empty());
  expect_labels_match_measurements(steps, o.improve_threshold);
  expect_one_speedup_per_program(steps);
  // Path records of one root: steps up to L, each parent the previous step's result (a step
  // whose comparison stayed noisy leaves a gap: measurement.h, trim_path_tail).
  std::map<std::string, std::map<int, json>> path;  // root key -> step -> record
  for (const auto& r : steps)
    if (r["kind"] == "single" && r["answers"][0].contains("path"))
      path[r["root"]["key"]][r["answers"][0]["path"]["step"].get<int>()] = r;
  EXPECT_FALSE(path.empty()) << "vectorizing pays off: some root keeps a path";
  for (const auto& [key, by_step] : path) {
    const int L = by_step.begin()->second["answers"][0]["path"]["of"];
    ASSERT_EQ(by_step.rbegin()->first, L) << key << ": the path ends at its best state";
    // ... up to its best state (measurement.h, trim_path_tail), which is the root's best found.
    const double end = by_step.at(L)["answers"][0]["cost"]["speedup_vs_root"];
    EXPECT_GE(end, o.improve_threshold) << key;
    for (const auto& [k, rec] : by_step) {
      EXPECT_LE(rec["answers"][0]["cost"]["speedup_vs_root"].get<double>(), end) << key;
      EXPECT_EQ(rec["answers"][0]["path"]["speedup_vs_root"], end) << key;
    }
    for (const auto& [k, rec] : by_step) {
      EXPECT_EQ(rec["depth"], k);
      EXPECT_EQ(rec["steps_so_far"].size(), size_t(k - 1));
      if (k == 1) EXPECT_EQ(rec["parent_program"], rec["root_program"]);
      if (k == 1 || !by_step.count(k - 1)) continue;
      EXPECT_EQ(rec["parent_program"], by_step.at(k - 1)["answers"][0]["result_program"]);
      // One speedup over the root per program: the state's, as its producing step measured it.
      EXPECT_EQ(rec["parent_speedup_vs_root"], by_step.at(k - 1)["answers"][0]["cost"]["speedup_vs_root"]);
    }
  }
  // A later state's prompt states its measured speedup over the root (the real-timing version of
  // this check, tests/dataset/measured_test.cc, may see no later state on a noisy machine).
  EXPECT_GT(expect_later_prompts_state_measured_speedup(dir / "a"), 0);
  auto m = json::parse(slurp(dir / "a" / "manifest.json"));
  EXPECT_EQ(m["options"]["trajectories"], "tune");
  auto stats = json::parse(slurp(dir / "a" / "stats.json"));
  EXPECT_TRUE(stats["improving_share"].contains("enabling"));
  EXPECT_TRUE(stats["measurement"].contains("trimmed_path_steps"));
  // The CV histogram counts each measured answer's comparison with its parent once.
  int measured = 0, in_buckets = 0;
  for (const auto& r : steps)
    for (const auto& a : r["answers"]) measured += a["cost"]["measured"].get<bool>();
  for (const auto& b : stats["label_statistics"]["cv_histogram"]) in_buckets += b["comparisons"].get<int>();
  EXPECT_GT(measured, 0);
  EXPECT_EQ(stats["label_statistics"]["measured"], measured);
  EXPECT_EQ(in_buckets, measured);

  auto o2 = tuned_options(dir / "b", dir / "store.sqlite");
  o2.tune_runner = &quiet;
  o2.jobs = 2;
  auto s2 = generate(o2);
  ASSERT_TRUE(s2.complete);
  EXPECT_EQ(s2.pairs_measured, 0);
  for (const char* f : {"steps.jsonl", "train.jsonl", "eval.jsonl", "stats.json", "manifest.json"})
    EXPECT_EQ(slurp(dir / "a" / f), slurp(dir / "b" / f)) << f;
  fs::remove_all(dir.parent_path());
}

TEST(GenerateTuned, TuningNeedsMeasuredCost) {
  auto o = tuned_options(tmpdir("tuned_trajectory_test", "bad") / "x", "");
  o.measured = false;
  try {
    generate(o);
    FAIL() << "expected a bad request";
  } catch (const base::Error& e) {
    EXPECT_EQ(e.kind(), base::ErrorKind::BadRequest);
    EXPECT_NE(std::string(e.what()).find("--trajectories tune"), std::string::npos) << e.what();
  }
  o.measured = true;
  o.tune_trials = 0;
  EXPECT_EQ(steptp::testing::thrown_kind([&] { generate(o); }), base::ErrorKind::BadRequest);
}

}  // namespace
}  // namespace steptp::dataset
