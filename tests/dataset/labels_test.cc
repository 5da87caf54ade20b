// Measured labels (apps/dataset/measurement.h) on scripted timings: the speedup's confidence interval
// by hand-computed values, re-measurement of noisy sessions and the drop of comparisons that stay
// noisy, the label rule (improving by the interval's lower bound, enabling by the path's pay-off
// over the step's parent), one speedup over the root per program, paths ending at their best
// state, multi answers sorted by measured speed, and a rerun on the store that times nothing.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/dataset/cluster.h"
#include "apps/dataset/dataset.h"
#include "dataset/dataset_test_util.h"
#include "apps/dataset/measurement.h"
#include "apps/dataset/record_stats.h"
#include "base/progress.h"
#include "ir/leir/program_io.h"
#include "search/tune/database.h"
#include "search/tune/runner.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::dataset {
namespace {

using namespace testing;

// The hand computations below use Student t quantiles from a table: t(0.975, 8) = 2.306004,
// t(0.975, 9) = 2.262157, t(0.975, 18) = 2.100922 (equal sides give 2 (n - 1) Welch degrees).
TEST(RatioCi, StudentIntervalOnTheLogOfARatioOfMedians) {
  // Two sides, cv 0.04 over 5 runs each: se = sqrt(2 * pi/2 * 0.04^2 / 5), df = 8.
  Interval ci = ratio_ci(1.2, {{1, 1, 1, 0.04, 5}, {1, 1, 1, 0.04, 5}});
  EXPECT_NEAR(ci.lo, 1.1153921, 1e-6);
  EXPECT_NEAR(ci.hi, 1.2910259, 1e-6);
  // cv 0.01 over 10 runs each: df = 18.
  ci = ratio_ci(2.2, {{1, 1, 1, 0.01, 10}, {1, 1, 1, 0.01, 10}});
  EXPECT_NEAR(ci.lo, 2.1742455, 1e-6);
  EXPECT_NEAR(ci.hi, 2.2260596, 1e-6);
  // One side (the other exact), cv 0.03 over 10 runs: df = 9.
  ci = ratio_ci(0.9, {{1, 1, 1, 0.03, 10}, {1, 1, 1, 0, 10}});
  EXPECT_NEAR(ci.lo, 0.8761153, 1e-6);
  EXPECT_NEAR(ci.hi, 0.9245358, 1e-6);
  // No spread at all: the point.
  ci = ratio_ci(1.5, {{1, 1, 1, 0, 7}, {1, 1, 1, 0, 7}});
  EXPECT_EQ(ci.lo, 1.5);
  EXPECT_EQ(ci.hi, 1.5);
  EXPECT_THROW(ratio_ci(1.0, {{1, 1, 1, 0.01, 1}, {1, 1, 1, 0.01, 10}}), std::logic_error);
}

TEST(RatioCi, VerdictNamesWhereTheIntervalLies) {
  EXPECT_EQ(noise_verdict({1.01, 1.2}), "faster");
  EXPECT_EQ(noise_verdict({0.8, 0.99}), "slower");
  EXPECT_EQ(noise_verdict({0.9, 1.1}), "within_noise");
  // A wide slowdown whose interval reaches 1 is within the noise, a narrow one is not.
  EXPECT_EQ(noise_verdict(ratio_ci(0.8, {{1, 1, 1, 0.3, 5}, {1, 1, 1, 0.3, 5}})), "within_noise");
  EXPECT_EQ(noise_verdict(ratio_ci(0.8, {{1, 1, 1, 0.02, 5}, {1, 1, 1, 0.02, 5}})), "slower");
  // Informative: the interval does not reach both 1/1.05 and 1.05.
  EXPECT_TRUE(informative({0.96, 1.5}, 1.05));
  EXPECT_TRUE(informative({0.5, 1.04}, 1.05));
  EXPECT_FALSE(informative({0.95, 1.06}, 1.05));
}

// Programs that differ in one constant: measure_records only times them (by text).
std::string prog(int k) {
  return leir::program_to_text(
      leir::program_from_text("input A: f64[8,64]\noutput C: f64[8,64]\n"
                              "B^{8}_{tx=0}L^{64}_{a=0}[C^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}*3+" +
                                  std::to_string(k) + ";];",
                              "p.leir"),
      false);
}

// Timing as a function of the program (median ms), 10 runs per side, cv 0.01 unless a pair is
// scripted with a cv per session; counts every session it times.
class ScriptedRunner : public tune::Runner {
 public:
  std::map<std::string, double> ms;
  std::map<std::pair<std::string, std::string>, std::vector<double>> cv;  // (A, B) -> cv of session 1, 2, ...
  std::map<std::pair<std::string, std::string>, int> sessions;
  int calls = 0;

  std::string identity() const override { return "fake:scripted"; }
  std::vector<tune::PairResult> run(const std::vector<leir::Program>& programs,
                                    const std::vector<std::pair<int, int>>& pairs) override {
    std::vector<tune::PairResult> out;
    for (auto [a, b] : pairs) {
      const std::string ta = leir::program_to_text(programs[size_t(a)], false);
      const std::string tb = leir::program_to_text(programs[size_t(b)], false);
      const int s = sessions[{ta, tb}]++;
      auto it = cv.find({ta, tb});
      const double c = it == cv.end() ? 0.01 : it->second.at(size_t(s));
      tune::PairResult r;
      r.ok = true;
      r.cmp.a = {ms.at(ta), ms.at(ta), ms.at(ta), c, 10};
      r.cmp.b = {ms.at(tb), ms.at(tb), ms.at(tb), c, 10};
      r.cmp.speedup = r.cmp.a.median_ms / r.cmp.b.median_ms;
      out.push_back(r);
      calls++;
    }
    return out;
  }
};

json answer(const std::string& result, int step = 0, int of = 0) {
  json a = {{"strategy", "loop_split"},
            {"result_program", result},
            {"cost", {{"measured", false}, {"speedup_vs_parent", 1.0}}},
            {"label", "non_improving"}};
  if (step) a["path"] = {{"step", step}, {"of", of}, {"speedup_vs_root", 9.99}};  // the tuner's number
  return a;
}

json record(const char* kind, int depth, const std::string& root, const std::string& parent, json answers) {
  return {{"kind", kind},     {"depth", depth},          {"root", {{"key", "w/scripted"}}},
          {"root_program", root}, {"parent_program", parent}, {"answers", std::move(answers)}};
}

class Labels : public ::testing::Test {
 protected:
  // Path R -> P1 (slower) -> P2 (2x the root) -> P3 (slower again); alternatives Q (noisy in its
  // first session, quiet in the second), N (noisy in every session, as fast as the root: its
  // interval cannot tell a 5 % slowdown from a 5 % speedup) and M (noisy, 2.5x the root: its
  // first interval already lies above 1.05, so it is settled and not timed again).
  void SetUp() override {
    dir_ = tmpdir("labels_test", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    const std::vector<double> times{1.0, 1.1, 0.5, 0.6, 0.8, 1.0, 0.4};
    for (int k = 0; k < 7; ++k) runner_.ms[prog(k)] = times[size_t(k)];
    runner_.cv[{R, Q}] = {0.2, 0.01};
    runner_.cv[{R, N}] = {0.2, 0.3, 0.2};
    runner_.cv[{R, M}] = {0.3, 0.2, 0.25};
    records_ = json::array({record("single", 1, R, R, {answer(P1, 1, 3)}),
                            record("single", 2, R, P1, {answer(P2, 2, 3)}),
                            record("single", 3, R, P2, {answer(P3, 3, 3)}),
                            record("multi", 1, R, R, {answer(P1, 1, 3), answer(N), answer(Q)}),
                            record("single", 1, R, R, {answer(Q)}), record("single", 1, R, R, {answer(N)}),
                            record("single", 1, R, R, {answer(M)})});
    o_.tune_runner = &runner_;
  }
  void TearDown() override { fs::remove_all(dir_.parent_path()); }

  const std::string R = prog(0), P1 = prog(1), P2 = prog(2), P3 = prog(3), Q = prog(4), N = prog(5), M = prog(6);
  fs::path dir_;
  ScriptedRunner runner_;
  json records_;
  GenerateOptions o_;
};

TEST_F(Labels, NoisySessionsAreRetimedAndWhatStaysUninformativeIsDropped) {
  tune::ObservationStore store((dir_ / "m.sqlite").string());
  MeasureStats st;
  std::vector<char> kept;
  const json out = measure_records(records_, o_, store, &st, &kept);
  // 8 distinct comparisons; (R, Q) took 2 sessions, (R, N) all 3, (R, M) one (settled).
  EXPECT_EQ(st.pairs, 8);
  EXPECT_EQ(st.sessions, 11);
  EXPECT_EQ(st.measured, 11);
  EXPECT_EQ(runner_.calls, 11);
  EXPECT_EQ(st.remeasured, 2);
  EXPECT_EQ(st.noisy, 2);
  EXPECT_EQ(st.uninformative, 1);
  EXPECT_EQ(st.failed, 0);
  // N's record goes (noisy), N leaves the multi set; P3's record is after the path's best state.
  EXPECT_EQ(st.dropped_records, 1);
  EXPECT_EQ(st.noisy_records, 1);
  EXPECT_EQ(st.dropped_answers, 2);  // N from the multi set and from its own record
  EXPECT_EQ(st.trimmed_path_steps, 1);
  EXPECT_EQ(kept, (std::vector<char>{1, 1, 0, 1, 1, 0, 1}));
  ASSERT_EQ(out.size(), 5u);
  // Q's record rests on its second, quiet session.
  const json& q = out[3]["answers"][0]["cost"];
  EXPECT_EQ(q["vs_parent"]["session"], 2);
  EXPECT_EQ(q["vs_parent"]["parent"]["cv"], 0.01);
  EXPECT_EQ(q["speedup_vs_parent"], 1.25);
  EXPECT_EQ(out[0]["answers"][0]["cost"]["vs_parent"]["session"], 1);
  // M never had a quiet session: its first (cv 0.3) is settled, since its interval (the RatioCi
  // formula: 2.5 * exp(-+2.100922 * sqrt(2 * pi/2 * 0.3^2 / 10))) lies above 1.05, and it rests
  // on that one.
  const json& m = out[4]["answers"][0];
  EXPECT_EQ(m["cost"]["vs_root"]["session"], 1);
  EXPECT_EQ(m["cost"]["speedup_ci"], json::array({1.756, 3.5593}));
  EXPECT_EQ(m["label"], "improving");

  // A rerun on the store times nothing and writes the same records.
  ScriptedRunner again = runner_;
  again.calls = 0;
  again.sessions.clear();
  GenerateOptions o2 = o_;
  o2.tune_runner = &again;
  MeasureStats st2;
  EXPECT_EQ(measure_records(records_, o2, store, &st2).dump(), out.dump());
  EXPECT_EQ(again.calls, 0);
  EXPECT_EQ(st2.measured, 0);
  EXPECT_EQ(st2.reused, 11);
}

// The measure stage (measure_kept) is a function of the records, the options and the store: alone
// it times what the store lacks itself; after the plumbing (fill_store, here one process) has
// filled the store it times nothing and writes the same records.
TEST_F(Labels, TheMeasureStageIsAFunctionOfTheRecordsAndTheStore) {
  const std::vector<json> given(records_.begin(), records_.end());
  std::vector<char> filtered(given.size(), 1);
  filtered[6] = 0;  // M's record, left out by the filter: neither timed nor rewritten
  o_.measurements = (dir_ / "alone.sqlite").string();
  std::vector<json> alone = given;
  std::vector<char> keep_alone = filtered;
  const MeasureSummary by_stage = measure_kept(alone, keep_alone, o_);
  EXPECT_EQ(by_stage.measured, runner_.calls);
  EXPECT_GT(by_stage.measured, 0);
  EXPECT_EQ(keep_alone, (std::vector<char>{1, 1, 0, 1, 1, 0, 0}));
  EXPECT_EQ(alone[6], given[6]);

  ScriptedRunner fresh = runner_;
  fresh.calls = 0;
  fresh.sessions.clear();
  o_.tune_runner = &fresh;
  o_.measurements = (dir_ / "filled.sqlite").string();
  o_.jobs = 1;
  SingleProcess one;
  Progress quiet("test", ProgressStyle::Off);
  std::vector<json> recs = given;
  std::vector<char> keep = filtered;
  const FillTiming filled = fill_store(recs, keep, o_, one, quiet);
  EXPECT_EQ(filled.measured, by_stage.measured);
  EXPECT_EQ(fresh.calls, by_stage.measured);
  MeasureSummary sum = measure_kept(recs, keep, o_);
  EXPECT_EQ(fresh.calls, by_stage.measured) << "the stage found every comparison in the store";
  EXPECT_EQ(sum.measured, 0);
  sum.add(filled);
  EXPECT_EQ(sum.measured, by_stage.measured);
  EXPECT_EQ(sum.to_json(), by_stage.to_json());
  EXPECT_EQ(keep, keep_alone);
  EXPECT_EQ(json(recs).dump(), json(alone).dump());
}

TEST_F(Labels, LabelsFollowTheIntervalAndThePathsPayOff) {
  tune::ObservationStore store((dir_ / "m.sqlite").string());
  const json out = measure_records(records_, o_, store);
  ASSERT_EQ(out.size(), 5u);
  const json& s1 = out[0]["answers"][0];
  const json& s2 = out[1]["answers"][0];
  // Step 2: 1.1 -> 0.5 ms, cv 0.01 over 10 runs a side: the interval of RatioCi's second case.
  EXPECT_EQ(s2["cost"]["speedup_vs_parent"], 2.2);
  EXPECT_EQ(s2["cost"]["speedup_ci"], json::array({2.1742, 2.2261}));
  EXPECT_EQ(s2["cost"]["noise_verdict"], "faster");
  EXPECT_EQ(s2["label"], "improving");
  // Step 1 is slower on its own, beyond the noise; the path end (step 2, 2x the root) pays off
  // 2x over its parent, the root, with an interval from the (root, P2) session's two sides.
  EXPECT_EQ(s1["cost"]["speedup_vs_parent"], 0.9091);
  EXPECT_EQ(s1["cost"]["noise_verdict"], "slower");
  EXPECT_EQ(s1["label"], "enabling");
  EXPECT_EQ(s1["path"]["enabled_speedup"], 2.0);
  const Interval pay = ratio_ci(2.0, {{1, 1, 1, 0.01, 10}, {1, 1, 1, 0.01, 10}});
  EXPECT_EQ(s1["path"]["enabled_ci"], json::array({search::round_ratio(pay.lo, 1), search::round_ratio(pay.hi, 1)}));
  // The multi set's copy of step 1 carries the same label.
  EXPECT_EQ(out[2]["answers"][1]["label"], "enabling");
  // Q (1.25x, quiet second session) is improving; every label follows its own fields.
  for (const auto& r : out)
    for (const auto& a : r["answers"]) {
      const json& c = a["cost"];
      const double lo = c["speedup_ci"][0], hi = c["speedup_ci"][1];
      EXPECT_LE(lo, c["speedup_vs_parent"].get<double>());
      EXPECT_GE(hi, c["speedup_vs_parent"].get<double>());
      if (a["label"] == "improving") EXPECT_GE(lo, o_.improve_threshold);
      else EXPECT_LT(lo, o_.improve_threshold);
      if (c["noise_verdict"] == "within_noise") EXPECT_TRUE(lo <= 1 && hi >= 1);
    }
}

TEST_F(Labels, OneSpeedupOverTheRootPerProgramAndPathsEndAtTheirBest) {
  tune::ObservationStore store((dir_ / "m.sqlite").string());
  const json out = measure_records(records_, o_, store);
  ASSERT_EQ(out.size(), 5u);
  // Every record's parent_speedup_vs_root is the producing answer's speedup_vs_root.
  std::map<std::string, double> produced{{R, 1.0}};
  for (const auto& r : out)
    for (const auto& a : r["answers"]) {
      const double sr = a["cost"]["speedup_vs_root"];
      auto [it, fresh] = produced.emplace(a["result_program"].get<std::string>(), sr);
      EXPECT_EQ(it->second, sr) << "one program, one speedup over the root";
    }
  for (const auto& r : out) EXPECT_EQ(r["parent_speedup_vs_root"].get<double>(), produced.at(r["parent_program"]));
  EXPECT_EQ(out[1]["parent_speedup_vs_root"], 0.9091);
  // The path ends at step 2 (2x the root; step 3 fell back to 1.6667x): of = 2 and its speedup is
  // the end's measured one, not the tuner's.
  for (const auto& r : out)
    for (const auto& a : r["answers"])
      if (a.contains("path")) {
        EXPECT_EQ(a["path"]["of"], 2);
        EXPECT_EQ(a["path"]["speedup_vs_root"], 2.0);
      }
  EXPECT_EQ(out[1]["answers"][0]["cost"]["speedup_vs_root"], 2.0);
  // Multi answers: fastest first (Q 1.25x before P1 0.9091x, whatever the search's order).
  ASSERT_EQ(out[2]["kind"], "multi");
  ASSERT_EQ(out[2]["answers"].size(), 2u);
  EXPECT_EQ(out[2]["answers"][0]["result_program"], Q);
  EXPECT_EQ(out[2]["answers"][1]["result_program"], P1);
  // stats.json's best found for the root is the path end, even with a faster answer off the path.
  RecordStats rs;
  json off = out[3];
  off["answers"][0]["cost"]["speedup_vs_root"] = 3.0;
  rs.add(out[0]);
  rs.add(out[1]);
  rs.add(off);
  EXPECT_EQ(rs.to_json()["best_found_speedup"]["per_root"][0]["speedup_vs_root"], 2.0);
}

// batched_matmul in the main job at 4f24bbc: the path's first step (a loop_split, as fast as the
// root) stayed noisy in every session, so its record and the next one (whose parent it produced)
// went; the path had ended there and the root's best found was an alternative's 3.2x, although
// the path's later states were measured at 13.4x the root.
TEST_F(Labels, ANoisyPathStepLeavesAGapAndTheBestFoundIsStillThePathsBestState) {
  const std::string P4 = prog(7);
  // R 1 ms -> P1 1 ms (noisy) -> P2 0.5 ms -> P3 0.48 ms (no confirmed gain) -> P4 0.25 ms; Q 0.8 ms.
  runner_.ms = {{R, 1.0}, {P1, 1.0}, {P2, 0.5}, {P3, 0.48}, {P4, 0.25}, {Q, 0.8}};
  runner_.cv = {{{R, P1}, {0.2, 0.3, 0.2}}};
  records_ = json::array({record("single", 1, R, R, {answer(P1, 1, 4)}), record("single", 2, R, P1, {answer(P2, 2, 4)}),
                          record("single", 3, R, P2, {answer(P3, 3, 4)}), record("single", 4, R, P3, {answer(P4, 4, 4)}),
                          record("single", 1, R, R, {answer(Q)})});
  tune::ObservationStore store((dir_ / "m.sqlite").string());
  MeasureStats st;
  const json out = measure_records(records_, o_, store, &st);
  EXPECT_EQ(st.uninformative, 1);
  EXPECT_EQ(st.dropped_records, 2);  // step 1 (its comparison) and step 2 (its parent's)
  EXPECT_EQ(st.trimmed_path_steps, 0);
  ASSERT_EQ(out.size(), 3u);
  for (int i : {0, 1}) {
    EXPECT_EQ(out[i]["depth"], i + 3);
    EXPECT_EQ(out[i]["answers"][0]["path"]["of"], 4);
    EXPECT_EQ(out[i]["answers"][0]["path"]["speedup_vs_root"], 4.0);
  }
  EXPECT_EQ(out[0]["parent_speedup_vs_root"], 2.0);  // its own comparison of its parent with the root
  // Step 3 (1.0417x, not confirmed on its own) pays off 2x over its parent, judged on its own
  // record's comparison of the parent with the root (the record of step 2 that produced it went).
  EXPECT_EQ(out[0]["answers"][0]["label"], "enabling");
  EXPECT_EQ(out[0]["answers"][0]["path"]["enabled_speedup"], 2.0);
  EXPECT_EQ(out[1]["answers"][0]["label"], "improving");
  RecordStats rs;
  for (const auto& r : out) rs.add(r);
  EXPECT_EQ(rs.to_json()["best_found_speedup"]["per_root"][0]["speedup_vs_root"], 4.0);
}

TEST(TrimPathTail, APathEndsAtItsBestStateOrGoesWhenItNeverPaysOff) {
  // Sides of the comparison with the root: cv 0.02 over 10 runs, so a 1.06x state is not
  // confirmed 1.05x faster (its interval reaches below) while 1.5x is.
  auto step = [](int k, int of, double sr) {
    const json side = {{"median_ms", 1.0}, {"min_ms", 1.0}, {"max_ms", 1.0}, {"cv", 0.02}, {"repeats", 10}};
    json a = {{"cost", {{"speedup_vs_root", sr}, {"vs_root", {{"root", side}, {"result", side}}}}},
              {"path", {{"step", k}, {"of", of}, {"speedup_vs_root", 7.0}}}};
    return json{{"kind", "single"}, {"answers", json::array({a})}};
  };
  auto alt = [](double sr) {
    return json{{"kind", "single"}, {"answers", json::array({{{"cost", {{"speedup_vs_root", sr}}}}})}};
  };
  // Speedups over the root 1.5, 3, 2, 3 (a tie after a drop: the first best state ends it).
  json recs = json::array({step(1, 4, 1.5), step(2, 4, 3.0), step(3, 4, 2.0), step(4, 4, 3.0), alt(4.0)});
  json both = json::array({step(4, 4, 3.0)["answers"][0], alt(4.0)["answers"][0]});
  recs.push_back({{"kind", "multi"}, {"answers", both}});
  std::vector<size_t> src{10, 11, 12, 13, 14, 15};
  EXPECT_EQ(trim_path_tail(recs, src, 1.05), 2);
  EXPECT_EQ(src, (std::vector<size_t>{10, 11, 14, 15}));
  EXPECT_EQ(recs[0]["answers"][0]["path"], (json{{"step", 1}, {"of", 2}, {"speedup_vs_root", 3.0}}));
  EXPECT_EQ(recs[1]["answers"][0]["path"], (json{{"step", 2}, {"of", 2}, {"speedup_vs_root", 3.0}}));
  EXPECT_FALSE(recs[3]["answers"][0].contains("path"));  // kept as a plain alternative

  // A gap (step 2's record was dropped as noisy) is no end: the best state after it ends the path.
  json gap = json::array({step(1, 4, 1.2), step(3, 4, 5.0), step(4, 4, 4.0)});
  std::vector<size_t> gs{0, 1, 2};
  EXPECT_EQ(trim_path_tail(gap, gs, 1.05), 1);
  ASSERT_EQ(gap.size(), 2u);
  EXPECT_EQ(gap[0]["answers"][0]["path"], (json{{"step", 1}, {"of", 3}, {"speedup_vs_root", 5.0}}));
  EXPECT_EQ(gap[1]["answers"][0]["path"], (json{{"step", 3}, {"of", 3}, {"speedup_vs_root", 5.0}}));

  // Never 1.05x the root: the path goes, its alternatives stay.
  json none = json::array({step(1, 2, 1.04), step(2, 2, 0.5), alt(1.3)});
  std::vector<size_t> ns{0, 1, 2};
  EXPECT_EQ(trim_path_tail(none, ns, 1.05), 2);
  EXPECT_EQ(ns, (std::vector<size_t>{2}));
  // 1.06x the root, but not confirmed: the interval (1.06 * exp(-+2.100922 * sqrt(pi/2 * 2 *
  // 0.02^2 / 10)) = [1.0353, 1.0853]) reaches below 1.05.
  json unconfirmed = json::array({step(1, 1, 1.06)});
  std::vector<size_t> us{0};
  EXPECT_EQ(trim_path_tail(unconfirmed, us, 1.05), 1);
}

TEST(MeasureOptions, TheLastSessionIsLongerByItsScale) {
  GenerateOptions o;
  o.measure_min_time = 0.02;
  const auto first = measure_options(o), last = measure_options(o, kLastSessionScale);
  EXPECT_EQ(first.min_repeats, kMinRepeats);
  EXPECT_EQ(last.min_repeats, kLastSessionScale * kMinRepeats);
  EXPECT_DOUBLE_EQ(first.max_time_s, 0.4);
  EXPECT_DOUBLE_EQ(last.max_time_s, kLastSessionScale * 0.4);
  EXPECT_DOUBLE_EQ(last.min_time_s, kLastSessionScale * 0.02);
  EXPECT_EQ(last.warmup, first.warmup);
}

}  // namespace
}  // namespace steptp::dataset
