// The reward funnel on what `steptp generate` teaches: every chat record's own assistant answer
// (both layouts, and the same steps as actions) scores as verified equivalent with the record's
// result program; broken answers stop at the documented stage with the documented reward.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "base/error.h"
#include "apps/dataset/dataset.h"
#include "apps/dataset/public_format.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/program_io.h"
#include "apps/reward/reward.h"
#include "apps/reward/timing.h"

namespace steptp::reward {
namespace {

using nlohmann::json;

// Raw records of the matmul example with a small search (seconds).
const std::vector<json>& records() {
  static std::vector<json> recs = [] {
    dataset::GenerateOptions o;
    o.depth = 2;
    o.beam = 1;
    o.sites_per_strategy = 1;
    o.params_per_site = 1;
    o.verify_trials = 2;
    dataset::Root r{"e/matmul", "example",
                    leir::read_programs(std::string(STEPTP_SHARED_DIR) + "/examples/matmul.json").at(0)};
    json all = dataset::root_records(r, o);
    std::vector<json> v;  // the first 8 single-answer records and up to 3 multi-answer ones
    int singles = 0, multis = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      int& n = all[i]["kind"] == "multi" ? multis : singles;
      if (n++ >= (&n == &multis ? 3 : 8)) continue;
      all[i]["id"] = "rec" + std::to_string(i);
      v.push_back(all[i]);
    }
    return v;
  }();
  return recs;
}

ScoreOptions no_timing() {
  ScoreOptions o;
  o.measure = false;
  o.verify_seed = 12345;
  return o;
}

void expect_verified(const json& res, const json& rec) {
  ASSERT_TRUE(res["parsed"].get<bool>()) << res.dump();
  ASSERT_EQ(res["answers"].size(), rec["answers"].size());
  for (size_t k = 0; k < rec["answers"].size(); ++k) {
    const auto& a = res["answers"][k];
    EXPECT_TRUE(a["failed_stage"].is_null()) << a.dump();
    EXPECT_EQ(a["candidate_hash"], rec["answers"][k]["result_hash"]);
    EXPECT_DOUBLE_EQ(a["reward"].get<double>(), RewardParts::kEquivalent);
  }
}

TEST(Reward, DatasetAnswersVerifyInBothLayouts) {
  ASSERT_GE(records().size(), 3u);
  bool saw_multi = false;
  for (const auto& rec : records()) {
    json chat = dataset::make_chat(rec);
    Context ctx = parse_context(chat["reward_context"]);
    EXPECT_EQ(chat["reward_context"]["record_id"], rec["id"]);
    expect_verified(score(ctx, chat["messages"][2]["content"].get<std::string>(), no_timing()), rec);
    json pub = dataset::make_public_chat(rec);
    expect_verified(score(parse_context(pub["reward_context"]), pub["messages"][2]["content"].get<std::string>(),
                          no_timing()),
                    rec);
    saw_multi |= rec["kind"] == "multi";
  }
  EXPECT_TRUE(saw_multi);
}

TEST(Reward, ActionsReachTheRecordsResults) {
  for (const auto& rec : records()) {
    Context ctx = parse_context(dataset::reward_context(rec));
    for (const auto& a : rec["answers"]) {
      json act = {{"strategy", a["strategy"]}, {"site", a["site"]["index"]}, {"params", a["params"]}};
      json res = score(ctx, "<answer>" + act.dump() + "</answer>", no_timing());
      ASSERT_EQ(res["answers"].size(), 1u);
      EXPECT_EQ(res["answers"][0]["candidate_hash"], a["result_hash"]) << act.dump();
      EXPECT_EQ(res["answers"][0]["form"], "action");
    }
  }
}

TEST(Reward, FunnelStopsAtTheDocumentedStage) {
  const json& rec = records().front();
  Context ctx = parse_context(dataset::reward_context(rec));
  std::string parent = rec["parent_program"];
  auto first = [&](const std::string& answer) { return score(ctx, answer, no_timing()); };

  json r = first("I think loop_split.");
  EXPECT_EQ(r["failed_stage"], "parsed");
  EXPECT_DOUBLE_EQ(r["reward"].get<double>(), RewardParts::kParseFail);

  r = first("<answer>{\"transformed_IR\":\"input A: f64[4]\\noutput B: f64[4]\\nL^{4}_{i=0}[B^{f64,g}_{i}=A^{f64,g}_{q};];\"}</answer>");
  EXPECT_EQ(r["answers"][0]["failed_stage"], "valid");
  EXPECT_NE(r["answers"][0]["reason"].get<std::string>().find("transformed_IR:3:"), std::string::npos)
      << r.dump();
  EXPECT_DOUBLE_EQ(r["reward"].get<double>(), RewardParts::kInvalid);

  r = first("<answer>{\"strategy\":\"loop_split\",\"site\":999}</answer>");
  EXPECT_EQ(r["answers"][0]["failed_stage"], "valid");
  EXPECT_NE(r["answers"][0]["reason"].get<std::string>().find("does not exist"), std::string::npos);

  r = first("<answer>" + json{{"transformed_IR", parent}}.dump() + "</answer>");
  EXPECT_EQ(r["answers"][0]["failed_stage"], "differs");
  EXPECT_DOUBLE_EQ(r["reward"].get<double>(), 0.0);

  // A wrong operator: valid, different, not equivalent.
  std::string wrong = rec["root_program"];
  auto at = wrong.find("+A");
  ASSERT_NE(at, std::string::npos);
  wrong.replace(at, 2, "-A");
  r = first("<answer>" + json{{"transformed_IR", wrong}}.dump() + "</answer>");
  EXPECT_EQ(r["answers"][0]["failed_stage"], "equivalent");
  EXPECT_EQ(r["answers"][0]["verification"]["class"], "failed");
  EXPECT_DOUBLE_EQ(r["reward"].get<double>(), RewardParts::kNotEquivalent);

  // A list repeating a step: the repeat is unchanged (0), the mean is taken.
  json step = {{"transformed_IR", rec["answers"][0]["result_program"]}};
  r = first("<answer>" + json::array({step, step}).dump() + "</answer>");
  ASSERT_EQ(r["answers"].size(), 2u);
  EXPECT_TRUE(r["answers"][0]["failed_stage"].is_null());
  EXPECT_EQ(r["answers"][1]["failed_stage"], "differs");
  EXPECT_DOUBLE_EQ(r["reward"].get<double>(), RewardParts::kEquivalent / 2);
}

TEST(Reward, MeasuredRewardFollowsTheSpeedup) {
  const json& rec = records().front();
  Context ctx = parse_context(dataset::reward_context(rec));
  json step = {{"transformed_IR", rec["answers"][0]["result_program"]}};
  ScoreOptions o = no_timing();
  o.measure = true;
  json r = score(ctx, "<answer>" + step.dump() + "</answer>", o);
  const json& a = r["answers"][0];
  ASSERT_GE(a["stages_passed"].size(), 5u) << a.dump();
  EXPECT_EQ(a["stages_passed"][4], "compiles") << a.dump();
  // The compiled kernel's outputs were checked against the root's kernel.
  EXPECT_TRUE(a["compiled_outputs"]["equivalent"].get<bool>()) << a.dump();
  double sp = a["speedup_vs_parent"];
  // Paid only when the noise rule clears the difference (either way).
  double speedup = a["parts"]["speedup"];
  EXPECT_TRUE(speedup == 0 || std::abs(speedup - RewardParts::kSpeedupScale * std::clamp(std::log2(sp), -1.0, 1.0)) < 1e-9);
  EXPECT_NEAR(a["reward"].get<double>(), RewardParts::kEquivalent + RewardParts::kCompiles + speedup, 1e-6);
  EXPECT_EQ(a["stages_passed"].size() == 6, a["clears_noise"].get<bool>() && sp >= o.improve_threshold) << a.dump();
  EXPECT_EQ(a["measurement"]["threads"], 1);
}

// The matmul example as IR answers: the root itself and edits of its text.
struct Matmul {
  std::string sig = "input A: f64[8,16]\ninput C: f64[16,12]\noutput D: f64[8,12]\n";
  std::string body = "B^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];";
  Context ctx() const {
    return parse_context(json{{"root_program", sig + body}, {"parent_program", sig + body}});
  }
  static std::string answer(const std::string& ir) { return "<answer>" + json{{"transformed_IR", ir}}.dump() + "</answer>"; }
};

TEST(Reward, NoOpEditsEarnNothing) {
  Matmul m;
  const Context ctx = m.ctx();
  ScoreOptions o = no_timing();
  o.measure = true;  // nothing may be measured: every edit stops at "differs"
  o.measurer = [](const Context&, const leir::Program&) -> MeasuredStep {
    ADD_FAILURE() << "a no-op edit was measured";
    return {};
  };
  for (const std::string edit :
       {"B^{8}_{i=0}L^{12}_{j=0}L^{16}_{k=0}[D^{f64,g}_{i,j}=D^{f64,g}_{i,j}+A^{f64,g}_{i,k}*C^{f64,g}_{k,j};];",  // renamed
        "B^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+C^{f64,g}_{c,a}*A^{f64,g}_{tx,c};];",  // C*A
        "B^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a}+0;];",  // +0
        "B^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a}*1;];",  // *1
        "B^{8}_{q=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{q,a}=1*(C^{f64,g}_{c,a}*A^{f64,g}_{q,c})+D^{f64,g}_{q,a}-0;];"}) {
    json r = score(ctx, Matmul::answer(m.sig + edit), o);
    EXPECT_EQ(r["answers"][0]["failed_stage"], "differs") << edit << "\n" << r.dump();
    EXPECT_DOUBLE_EQ(r["reward"].get<double>(), 0.0) << edit;
  }
  // A list whose second step is the first renamed: a repeat.
  const std::string par = "P^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];";
  const std::string par2 = "P^{8}_{i=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{i,a}=D^{f64,g}_{i,a}+C^{f64,g}_{c,a}*A^{f64,g}_{i,c};];";
  json r = score(ctx, "<answer>" + json::array({{{"transformed_IR", m.sig + par}}, {{"transformed_IR", m.sig + par2}}}).dump() +
                          "</answer>", no_timing());
  EXPECT_TRUE(r["answers"][0]["failed_stage"].is_null()) << r.dump();
  EXPECT_EQ(r["answers"][1]["failed_stage"], "differs") << r.dump();
}

// A measured step with chosen timings (no kernel runs): `sp` the speedup over the parent with
// coefficient of variation `cv` over `n` repeats for both.
MeasuredStep fake_timing(double sp, double cv, int n) {
  MeasuredStep m;
  m.ok = m.compiled = true;
  backend::TimingStats parent{.median_ms = 1.0, .min_ms = 1.0, .max_ms = 1.0, .cv = cv, .repeats = n};
  backend::TimingStats cand = parent;
  cand.median_ms = cand.min_ms = cand.max_ms = 1.0 / sp;
  m.vs_parent = m.vs_root = {parent, cand, sp};
  return m;
}

TEST(Reward, SpeedupIsPaidOnlyWhenItClearsTheNoise) {
  Matmul m;
  const std::string par = "P^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];";
  const double base = RewardParts::kEquivalent + RewardParts::kCompiles;
  struct Case {
    double sp, cv;
    int n;
    double speedup_part;
    bool faster;
  } cases[] = {
      {1.04, 0.05, 5, 0, false},     // 4 % faster, standard error 3.2 %: within the noise
      {1.5, 0.01, 20, RewardParts::kSpeedupScale * std::log2(1.5), true},
      {1.03, 0.001, 50, RewardParts::kSpeedupScale * std::log2(1.03), false},  // real, below the 1.05 threshold
      {0.97, 0.05, 5, 0, false},     // 3 % slower within the noise: no penalty either
      {0.5, 0.01, 20, -RewardParts::kSpeedupScale, false},  // really twice as slow
  };
  for (const auto& c : cases) {
    ScoreOptions o = no_timing();
    o.measure = true;
    o.measurer = [&](const Context&, const leir::Program&) { return fake_timing(c.sp, c.cv, c.n); };
    json r = score(m.ctx(), Matmul::answer(m.sig + par), o);
    const json& a = r["answers"][0];
    EXPECT_NEAR(a["parts"]["speedup"].get<double>(), c.speedup_part, 1e-9) << c.sp << " " << a.dump();
    EXPECT_NEAR(a["reward"].get<double>(), base + c.speedup_part, 1e-6) << c.sp;
    EXPECT_EQ(a["failed_stage"].is_null(), c.faster) << c.sp << " " << a.dump();
  }
}

// The first statement of `p` stores one more than it says: a kernel that does not compute the
// program that was verified (as a code generation bug would give).
leir::Program off_by_one(leir::Program p) {
  std::vector<leir::Item>* items = &p.body;
  while (items->front().is_nest()) items = &items->front().nest.body;
  leir::Stmt& s = items->front().stmt;
  s.rhs = leir::make_binary(leir::BinaryOp::Add, s.rhs, leir::make_number(1));
  return p;
}

TEST(Reward, CompiledOutputsThatDifferFromTheRootsEarnTheFailureReward) {
  Matmul m;
  const std::string par = "P^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];";
  ScoreOptions o = no_timing();
  o.measure = true;
  // Real compilation, runs and output comparison; only the timed kernel is not the verified one.
  o.measurer = [](const Context& c, const leir::Program& cand) {
    return measure_step(c.root, c.parent, off_by_one(cand), {});
  };
  json r = score(m.ctx(), Matmul::answer(m.sig + par), o);
  const json& a = r["answers"][0];
  EXPECT_EQ(a["failed_stage"], "equivalent") << a.dump();
  EXPECT_EQ(a["compiled_outputs"]["class"], "failed") << a.dump();
  EXPECT_NE(a["reason"].get<std::string>().find("compiled kernel's outputs differ"), std::string::npos);
  EXPECT_DOUBLE_EQ(r["reward"].get<double>(), RewardParts::kNotEquivalent);
  EXPECT_DOUBLE_EQ(a["parts"]["speedup"].get<double>(), 0.0);
  // The same with the verified kernel: checked and passed.
  o.measurer = [](const Context& c, const leir::Program& cand) { return measure_step(c.root, c.parent, cand, {}); };
  r = score(m.ctx(), Matmul::answer(m.sig + par), o);
  EXPECT_EQ(r["answers"][0]["compiled_outputs"]["class"], "exact") << r.dump();
  EXPECT_GE(r["reward"].get<double>(), RewardParts::kEquivalent + RewardParts::kCompiles - RewardParts::kSpeedupScale);
}

TEST(Reward, InfrastructureFailuresAreNoScore) {
  Matmul m;
  const std::string par = "P^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];";
  ScoreOptions o = no_timing();
  o.measure = true;
  o.measurer = [](const Context&, const leir::Program&) -> MeasuredStep {
    throw std::runtime_error("the machine's timing lock was not obtained");
  };
  json r = score(m.ctx(), Matmul::answer(m.sig + par), o);
  EXPECT_TRUE(r["reward"].is_null()) << r.dump();
  EXPECT_EQ(r["infrastructure_failure"], "the machine's timing lock was not obtained");
  EXPECT_EQ(r["failed_stage"], kNoScore);
  EXPECT_TRUE(r["answers"][0]["reward"].is_null());
  EXPECT_EQ(r["answers"][0]["failed_stage"], kNoScore);
  o.measurer = [](const Context&, const leir::Program&) {
    MeasuredStep s;
    s.infrastructure = true;
    s.error = "fork failed";
    return s;
  };
  // In a list: the steps before are judged and reported, the reply is still no score.
  json first = {{"transformed_IR", m.sig + par}};
  r = score(m.ctx(), "<answer>" + json::array({first, first}).dump() + "</answer>", o);
  EXPECT_TRUE(r["reward"].is_null()) << r.dump();
  EXPECT_EQ(r["infrastructure_failure"], "fork failed");
  EXPECT_EQ(r["answers"].size(), 1u);
  EXPECT_EQ(r["unscored"], 1);
  // A kernel that fails to run is the answer's: a scored failure.
  o.measurer = [](const Context&, const leir::Program&) {
    MeasuredStep s;
    s.compiled = true;
    s.error = "crashed (Segmentation fault)";
    return s;
  };
  r = score(m.ctx(), Matmul::answer(m.sig + par), o);
  EXPECT_EQ(r["answers"][0]["failed_stage"], "compiles");
  EXPECT_DOUBLE_EQ(r["reward"].get<double>(), RewardParts::kEquivalent);
}

// A comparison that did not run is judged by its kind (tune::MeasureFailure), not its message: a
// compile failure fails "compiles", an infrastructure failure is no score, a crash is the answer's.
TEST(Reward, FailedComparisonsAreJudgedByTheirKind) {
  tune::PairResult r;
  r.failure = tune::MeasureFailure::Compile;
  r.error = "a message that names no stage";
  MeasuredStep m = MeasuredStep::failed(r);
  EXPECT_FALSE(m.ok);
  EXPECT_FALSE(m.compiled);
  EXPECT_FALSE(m.infrastructure);
  EXPECT_EQ(m.error, r.error);
  r.failure = tune::MeasureFailure::Infrastructure;
  r.error = "compile: a message that looks like a compile error";
  m = MeasuredStep::failed(r);
  EXPECT_TRUE(m.compiled);
  EXPECT_TRUE(m.infrastructure);
  for (auto f : {tune::MeasureFailure::Run, tune::MeasureFailure::Crash, tune::MeasureFailure::Timeout}) {
    r.failure = f;
    m = MeasuredStep::failed(r);
    EXPECT_TRUE(m.compiled) << tune::to_string(f);
    EXPECT_FALSE(m.infrastructure) << tune::to_string(f);
  }
}

TEST(Reward, ContextErrorsNameTheField) {
  try {
    parse_context(json{{"root_program", "x"}});
    ADD_FAILURE() << "a context without parent_program was accepted";
  } catch (const base::Error& e) {
    EXPECT_EQ(e.kind(), base::ErrorKind::BadRequest);  // serve's 400 (base/error.h)
    EXPECT_EQ(base::http_status(e.kind()), 400);
  }
  try {
    parse_context(json{{"root_program", "input A: f64[4]\noutput B: f64[4]\nL^{4}_{i=0}[B^{f64,g}_{i}=A^{f64,g}_{q};];"},
                       {"parent_program", "x"}});
    FAIL();
  } catch (const leir::LeirError& e) {
    EXPECT_EQ(e.file(), "reward_context.root_program");
    EXPECT_EQ(e.loc().line, 3u);
  }
}

TEST(Reward, ImplausibleTimesAreFlagged) {
  leir::Program p = leir::read_programs(std::string(STEPTP_SHARED_DIR) + "/examples/matmul.json").at(0);
  MachinePeaks slow{1e3, 1e3, 1};  // a machine this slow needs seconds: any real time is implausible
  EXPECT_GT(lower_bound_seconds(p, slow), 1.0);
  const json& rec = records().front();
  Context ctx = parse_context(dataset::reward_context(rec));
  ScoreOptions o = no_timing();
  o.measure = true;
  o.measurer = [&](const Context& c, const leir::Program& cand) {
    auto m = measure_step(c.root, c.parent, cand, {});
    m.peaks = slow;
    return m;
  };
  json r = score(ctx, "<answer>" + json{{"transformed_IR", rec["answers"][0]["result_program"]}}.dump() + "</answer>", o);
  const json& a = r["answers"][0];
  EXPECT_TRUE(a["implausible"].get<bool>()) << a.dump();
  EXPECT_EQ(a["failed_stage"], "faster");
  EXPECT_DOUBLE_EQ(a["parts"]["speedup"].get<double>(), 0.0);
}

}  // namespace
}  // namespace steptp::reward
