// The timing policy (search/tune/runner.h) and the measurement store (search/tune/database.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/leir/program_io.h"
#include "search/tune/database.h"
#include "search/tune/observations.h"
#include "search/tune/runner.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::tune {
namespace {

// Programs 0-3: three small kernels over A and, as program 2, one whose 8 GB intermediate cannot
// be allocated under the measuring child's 4 GiB address-space limit.
std::vector<leir::Program> timing_programs() {
  auto parse = [](const std::string& t) { return leir::program_from_text(t, "test.leir"); };
  return {
      parse("input A: f64[64]\noutput C: f64[64]\nL^{64}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a}*3;];"),
      parse("input A: f64[64]\noutput C: f64[64]\nL^{64}_{a=0}[C^{f64,g}_{a}=exp(A^{f64,g}_{a})*3;];"),
      parse("input A: f64[1]\noutput D: f64[1]\nL^{1000000000}_{a=0}[E^{f64,g}_{a}=A^{f64,g}_{0};];"
            "L^{1}_{a=0}[D^{f64,g}_{a}=E^{f64,g}_{a};];"),
      parse("input A: f64[64]\noutput C: f64[64]\nL^{64}_{a=0}[C^{f64,g}_{a}=sqrt(A^{f64,g}_{a}*A^{f64,g}_{a});];"),
  };
}

backend::MeasureOptions short_sessions() {
  backend::MeasureOptions mo;
  mo.min_time_s = 0.001;
  mo.max_time_s = 0.2;
  mo.threads = 1;
  return mo;
}

TEST(MeasurePairs, FailingKernelsAreDroppedNotFatal) {
  PairMeasureStats st;
  auto r = measure_pairs(timing_programs(), {{0, 1}, {0, 2}, {1, 0}}, short_sessions(), 7, 20.0, &st);
  ASSERT_EQ(r.size(), 3u);
  ASSERT_TRUE(r[0].ok) << r[0].error;
  EXPECT_FALSE(r[1].ok);
  EXPECT_FALSE(r[1].error.empty());
  EXPECT_EQ(r[1].failure, MeasureFailure::Run) << r[1].error;  // its intermediate cannot be allocated
  EXPECT_EQ(r[0].failure, MeasureFailure::None);
  ASSERT_TRUE(r[2].ok) << r[2].error;  // the comparison after the failing one still runs
  for (const auto* c : {&r[0].cmp, &r[2].cmp}) {
    EXPECT_GT(c->a.median_ms, 0);
    EXPECT_GT(c->b.median_ms, 0);
    EXPECT_GE(c->a.repeats, 5);
    EXPECT_NEAR(c->speedup, c->a.median_ms / c->b.median_ms, 1e-12);
  }
}

TEST(MeasurePairs, PairsWithOneReferenceShareASessionAndFailAlone) {
  const auto progs = timing_programs();
  // Two results against program 0, one pair against another reference in between: program 0's
  // pairs share one session (the same timings of it, the same round count for every side).
  auto r = measure_pairs(progs, {{0, 1}, {1, 3}, {0, 3}}, short_sessions(), 7, 20.0);
  for (const auto& p : r) ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(r[0].cmp.a.median_ms, r[2].cmp.a.median_ms);
  EXPECT_EQ(r[0].cmp.a.repeats, r[2].cmp.b.repeats);
  EXPECT_EQ(r[0].cmp.b.repeats, r[2].cmp.b.repeats);
  // A program whose run fails (out of memory for its intermediates) spoils its session: the
  // others of the session are timed again pair by pair, and only its own pair fails.
  auto f = measure_pairs(progs, {{0, 1}, {0, 2}, {0, 3}}, short_sessions(), 7, 20.0);
  ASSERT_TRUE(f[0].ok) << f[0].error;
  EXPECT_FALSE(f[1].ok);
  EXPECT_NE(f[1].error.find("out of memory"), std::string::npos) << f[1].error;
  EXPECT_EQ(f[1].failure, MeasureFailure::Run);
  ASSERT_TRUE(f[2].ok) << f[2].error;
}

TEST(ObservationStore, FirstWriterWinsAndValuesPersist) {
  auto d = fs::temp_directory_path() / fmt::format("steptp-database-test-{}", getpid());
  fs::create_directories(d);
  {
    ObservationStore s((d / "m.sqlite").string());
    EXPECT_FALSE(s.get("k"));
    s.put_all({{"k", json{{"v", 1}}}});
    s.put_all({{"k", json{{"v", 2}}}, {"j", json{{"v", 3}}}});
    EXPECT_EQ((*s.get("k"))["v"], 1);
  }
  ObservationStore again((d / "m.sqlite").string());
  EXPECT_EQ(again.size(), 2);
  EXPECT_EQ((*again.get("j"))["v"], 3);
  fs::remove_all(d);
}

// Fails every comparison with one kind, under a message that does not name it.
class FailingRunner : public Runner {
 public:
  explicit FailingRunner(MeasureFailure f) : failure_(f) {}
  std::string identity() const override { return "fake:failing"; }
  std::vector<PairResult> run(const std::vector<leir::Program>&,
                              const std::vector<std::pair<int, int>>& pairs) override {
    calls += int(pairs.size());
    std::vector<PairResult> out(pairs.size());
    for (auto& r : out) r.failure = failure_, r.error = "no luck";
    return out;
  }
  int calls = 0;

 private:
  MeasureFailure failure_;
};

struct StoredPair {
  std::vector<leir::Program> programs = timing_programs();
  std::string a = leir::program_to_text(programs[0], false), b = leir::program_to_text(programs[1], false);
  std::pair<Subject, Subject> pair() const { return {{&programs[0], &a}, {&programs[1], &b}}; }
};

TEST(ObservationStore, AStoredFailureReloadsWithItsKind) {
  auto d = fs::temp_directory_path() / fmt::format("steptp-failure-kind-test-{}", getpid());
  fs::create_directories(d);
  const std::string path = (d / "m.sqlite").string();
  StoredPair p;
  {
    ObservationStore s(path);
    FailingRunner compile(MeasureFailure::Compile);
    Comparer c(s, compile);
    EXPECT_EQ(c.compare({p.pair()})[0].failure, MeasureFailure::Compile);
    EXPECT_EQ(compile.calls, 1);
  }
  // Reopened: the fact is read back (same runner identity, nothing measured) with its kind.
  ObservationStore s(path);
  FailingRunner crash(MeasureFailure::Crash);
  Comparer c(s, crash);
  const PairResult back = c.compare({p.pair()})[0];
  EXPECT_EQ(crash.calls, 0);
  EXPECT_FALSE(back.ok);
  EXPECT_EQ(back.failure, MeasureFailure::Compile);
  EXPECT_EQ(back.error, "no luck");
  EXPECT_EQ((*s.get(comparison_key(crash, p.a, p.b)))["failure"], "compile");
  fs::remove_all(d);
}

// Stores written before failures had kinds hold {"ok": false, "error": MESSAGE}: such an entry
// reads with the kind the runner's message implies (failure_of_legacy_entry).
TEST(ObservationStore, AnEntryWrittenBeforeFailureKindsReadsWithTheMigratedKind) {
  auto d = fs::temp_directory_path() / fmt::format("steptp-legacy-failure-test-{}", getpid());
  fs::create_directories(d);
  ObservationStore s((d / "m.sqlite").string());
  StoredPair p;
  FailingRunner runner(MeasureFailure::Crash);
  const std::vector<std::pair<std::string, MeasureFailure>> legacy = {
      {"compile: error: expected ';'", MeasureFailure::Compile},
      {"fork failed", MeasureFailure::Infrastructure},
      {"timed out after 20 s", MeasureFailure::Timeout},
      {"crashed (Segmentation fault)", MeasureFailure::Crash},
      {"measuring child exited with status 3", MeasureFailure::Crash},
      {"run: t: out of memory allocating intermediates", MeasureFailure::Run},
  };
  for (size_t i = 0; i < legacy.size(); ++i) {
    const std::string session = fmt::format("legacy{}", i);
    s.put_all({{comparison_key(runner, p.a, p.b, session), json{{"ok", false}, {"error", legacy[i].first}}}});
    Comparer c(s, runner);
    const PairResult r = c.compare({p.pair()}, session)[0];
    EXPECT_EQ(r.failure, legacy[i].second) << legacy[i].first;
    EXPECT_EQ(r.error, legacy[i].first);
  }
  EXPECT_EQ(runner.calls, 0);
  // The entry is read as it was written (no rewrite): a replay of an old store sees its bytes.
  EXPECT_FALSE(s.get(comparison_key(runner, p.a, p.b, "legacy0"))->contains("failure"));
  fs::remove_all(d);
}

TEST(NoiseRule, NeedsTheRatioToClearBothTimingsNoise) {
  backend::Comparison c;
  c.a = {.median_ms = 10, .cv = 0.01, .repeats = 10};
  c.b = {.median_ms = 9.5, .cv = 0.01, .repeats = 10};
  c.speedup = 10 / 9.5;
  EXPECT_TRUE(clears_noise(c));  // 5 % faster, standard error 0.45 %
  c.b.cv = c.a.cv = 0.2;         // standard error 8.9 %: 5 % is noise
  EXPECT_FALSE(clears_noise(c));
  c.a.cv = c.b.cv = 0;
  c.speedup = 1.015;             // under the 2 % floor
  EXPECT_FALSE(clears_noise(c));
}

TEST(MeasurementKey, DependsOnEveryPartAndItsBoundaries) {
  EXPECT_EQ(observation_key({"a", "b"}), observation_key({"a", "b"}));
  EXPECT_NE(observation_key({"a", "b"}), observation_key({"ab", ""}));
  EXPECT_NE(observation_key({"m1", "a"}), observation_key({"m2", "a"}));
}

}  // namespace
}  // namespace steptp::tune
