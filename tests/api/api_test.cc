// The command layer (apps/api/api.h) called directly: each command's result checked on its own
// terms (an independent verifier run, a hand-computed product, the reward's known parts) and
// against what the `steptp` CLI prints for the same request, since the CLI is now a printer of
// these results.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/api/api.h"
#include "base/error.h"
#include "ir/leir/program_io.h"
#include "shell_command.h"
#include "transform/strategy.h"

namespace steptp {
namespace {

const std::string kMatmulPath = std::string(STEPTP_SHARED_DIR) + "/examples/matmul.json";

leir::Program matmul() { return leir::read_programs(kMatmulPath).at(0); }

// D = A @ C with every "+A" read turned into "-A": the same signature, other values.
leir::Program wrong_matmul() {
  std::string text = leir::program_to_text(matmul());
  for (size_t at = text.find("+A"); at != std::string::npos; at = text.find("+A", at)) text[at] = '-';
  return leir::program_from_text(text, "wrong.leir");
}

std::string cli(const std::string& args) {
  auto r = testing::run_shell(std::string(STEPTP_EXE) + " " + args + " 2>/dev/null");
  EXPECT_EQ(r.code, 0) << args;
  return r.out;
}

TEST(CommandLayer, CheckReportsValidityAndIdentity) {
  auto ok = api::check({.program = matmul(), .identity = true});
  EXPECT_TRUE(ok.report.ok());
  EXPECT_EQ(ok.report.summary.flops, 3072);
  EXPECT_EQ(ok.hash.size(), 16u);
  // The canonical text reads back as the same program (same hash).
  EXPECT_EQ(api::check({.program = leir::program_from_text(ok.canonical), .identity = true}).hash, ok.hash);
  EXPECT_TRUE(api::check({.program = matmul()}).hash.empty());  // identity only when asked for

  auto bad = api::check({.program = leir::program_from_text(
                             "input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a+1};];\n")});
  ASSERT_FALSE(bad.report.ok());
  EXPECT_EQ(bad.report.errors[0].loc.line, 3u);
  EXPECT_TRUE(bad.hash.empty());
}

TEST(CommandLayer, VerifyTellsEquivalentFromNot) {
  auto same = api::verify({.a = matmul(), .b = matmul(), .options = {.trials = 3, .seed = 11}});
  EXPECT_TRUE(same.equivalent);
  EXPECT_EQ(same.verdict, verify::Verdict::Exact);
  EXPECT_EQ(same.trials, 3);

  auto wrong = api::verify({.a = matmul(), .b = wrong_matmul(), .options = {.trials = 3, .seed = 11}});
  EXPECT_FALSE(wrong.equivalent);
  EXPECT_EQ(wrong.verdict, verify::Verdict::Failed);
  ASSERT_TRUE(wrong.worst);
  EXPECT_EQ(wrong.worst->tensor, "D");
  // The JSON serve and Python return: the report, plus the error only when there is one.
  auto j = api::verify_json(wrong);
  EXPECT_EQ(j["class"], "failed");
  EXPECT_FALSE(j.contains("error"));
  auto sig = api::verify({.a = matmul(), .b = leir::program_from_text("input A: f64[4]\noutput B: f64[4]\n"
                                                                       "L^{4}_{i=0}[B^{f64,g}_{i}=A^{f64,g}_{i};];")});
  EXPECT_FALSE(sig.equivalent);
  EXPECT_NE(api::verify_json(sig).value("error", "").find("different signatures"), std::string::npos);
}

TEST(CommandLayer, ApplyGivesTheCliProgramsVerified) {
  const auto* s = strategies::find_strategy("loop_parallelization");
  ASSERT_NE(s, nullptr);
  auto r = api::apply({.program = matmul(), .strategy = s, .all = true, .seed = 2});
  ASSERT_FALSE(r.results.empty());
  EXPECT_GT(r.site_count, 0u);
  std::vector<std::string> lines;
  std::string out = cli("apply " + kMatmulPath + " --strategy loop_parallelization --all --seed 2");
  for (size_t at = 0, nl; (nl = out.find('\n', at)) != std::string::npos; at = nl + 1) lines.push_back(out.substr(at, nl - at));
  ASSERT_EQ(lines.size(), r.results.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto& a = r.results[i];
    ASSERT_TRUE(a.verdict);
    EXPECT_TRUE(a.verdict->equivalent);
    // Independently of the command: the result differs from the input and verifies equivalent.
    EXPECT_NE(leir::program_to_text(a.candidate.program), leir::program_to_text(matmul()));
    EXPECT_TRUE(verify::verify(matmul(), a.candidate.program).equivalent);
    auto j = api::applied_json<nlohmann::ordered_json>(a);
    j["program"] = leir::program_to_json(a.candidate.program);
    EXPECT_EQ(j.dump(), lines[i]);
  }
  // The action form: the same parameters at the same site give the same program.
  const auto& first = r.results[0];
  auto again = api::apply({.program = matmul(), .strategy = s, .site = first.candidate.site, .params = first.params});
  ASSERT_EQ(again.results.size(), 1u);
  EXPECT_EQ(leir::program_to_text(again.results[0].candidate.program), leir::program_to_text(first.candidate.program));
  // A site the program lacks is a request error.
  try {
    api::apply({.program = matmul(), .strategy = s, .site = 999, .params = nlohmann::json::object()});
    ADD_FAILURE() << "site 999 applied";
  } catch (const base::Error& e) {
    EXPECT_EQ(e.kind(), base::ErrorKind::BadRequest);
  }
  // explain: the surveyed sites and refusals; unverified results carry no verdict.
  auto ex = api::apply({.program = matmul(), .strategy = s, .all = true, .verify = false, .explain = true});
  EXPECT_EQ(ex.sites.size(), ex.site_count);
  EXPECT_FALSE(ex.results.empty());
  EXPECT_FALSE(ex.results[0].verdict);
}

TEST(CommandLayer, LowerGivesTheCodeTheCliPrints) {
  for (const char* target : {"cpu", "cuda", "tir"}) {
    auto t = api::lower_target(target);
    ASSERT_TRUE(t) << target;
    EXPECT_EQ(api::lower({.program = matmul(), .target = *t}), cli(std::string("lower ") + kMatmulPath + " --target " + target))
        << target;
  }
  EXPECT_FALSE(api::lower_target("fpga"));
  api::LowerRequest block{.program = matmul(), .target = api::LowerTarget::Tir};
  block.tir.dialect = backend::tir::TirDialect::Legacy;
  EXPECT_EQ(api::lower(block), cli("lower " + kMatmulPath + " --target tir --tir-dialect block"));
  // A program the target rejects: LeirError at the statement.
  auto rejected = leir::program_from_text("input  A: f64[4]\noutput B: f64[4]\nB^{4}_{q=0}[B^{f64,g}_{q}=A^{f64,g}_{q};];\n");
  EXPECT_THROW(api::lower({.program = rejected, .target = api::LowerTarget::Cuda}), leir::LeirError);
}

TEST(CommandLayer, RunComputesTheProductOnBothTargets) {
  const leir::Program p = matmul();
  const leir::TensorMap inputs = interp::generate_inputs(p, 5);
  for (auto target : {api::RunTarget::Interp, api::RunTarget::Cpu}) {
    auto out = api::run({.program = p, .target = target, .inputs = inputs});
    const auto& a = inputs.at("A");
    const auto& c = inputs.at("C");
    const auto& d = out.at("D");
    const int64_t m = a.shape[0], k = a.shape[1], n = c.shape[1];
    ASSERT_EQ(d.shape, (std::vector<int64_t>{m, n}));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t q = 0; q < k; ++q) want += a.data[i * k + q] * c.data[q * n + j];
        EXPECT_NEAR(d.data[i * n + j], want, 1e-9 * (1 + std::abs(want)));
      }
  }
  // Seeded inputs: the outputs of `seed` are those of the inputs generated from it.
  EXPECT_EQ(api::run({.program = p, .seed = 5}).at("D").data, api::run({.program = p, .inputs = inputs}).at("D").data);
  try {
    api::run_target("gpu");
    ADD_FAILURE() << "gpu accepted";
  } catch (const base::Error& e) {
    EXPECT_EQ(e.kind(), base::ErrorKind::BadRequest);
    EXPECT_STREQ(e.what(), "unknown target 'gpu' (available: interp, cpu)");
  }
}

TEST(CommandLayer, MeasureAndBenchTimeAndCompare) {
  api::MeasureRequest m{.program = matmul(), .baseline = wrong_matmul()};
  m.settings.options.min_time_s = 0.002;
  auto r = api::measure(m);
  EXPECT_TRUE(r.signature_difference.empty());
  ASSERT_TRUE(r.pair.ok) << r.pair.error;
  EXPECT_GT(r.pair.cmp.speedup, 0);
  EXPECT_GE(r.pair.cmp.b.repeats, 5);
  // The hold wraps the timed part.
  int held = 0;
  api::measure(m, [&](const std::function<void()>& timed) {
    ++held;
    timed();
  });
  EXPECT_EQ(held, 1);
  auto other = api::measure({.program = matmul(), .baseline = leir::program_from_text(
                                                      "input A: f64[4]\noutput B: f64[4]\nL^{4}_{i=0}[B^{f64,g}_{i}=A^{f64,g}_{i};];")});
  EXPECT_FALSE(other.signature_difference.empty());
  EXPECT_EQ(other.pair.cmp.b.repeats, 0);  // nothing timed

  api::BenchRequest b{.programs = {matmul(), wrong_matmul()}};
  b.options.min_time_s = 0.01;
  b.options.threads = 1;
  auto bench = api::bench(b);
  ASSERT_TRUE(bench.comparison);
  EXPECT_EQ(bench.names, (std::vector<std::string>{"matmul", wrong_matmul().name}));
  EXPECT_GT(bench.comparison->speedup, 0);
  api::BenchRequest scalar{.programs = {matmul()}, .vs_scalar_math = true};
  scalar.options.min_time_s = 0.01;
  EXPECT_EQ(api::bench(scalar).names, (std::vector<std::string>{"matmul (scalar math)", "matmul"}));
}

TEST(CommandLayer, ScoreGivesTheRewardOfKnownAnswers) {
  const reward::Context ctx{matmul(), matmul()};
  const std::string parallel = R"(<answer>{"strategy": "loop_parallelization", "site": 0}</answer>)";
  auto ok = api::score({.answer = parallel, .context = ctx, .measure = false, .verify_seed = 1});
  EXPECT_NEAR(ok["reward"].get<double>(), 0.1, 1e-12);  // format + validity + equivalence, not measured
  EXPECT_TRUE(ok["answers"][0]["failed_stage"].is_null());
  EXPECT_EQ(ok["answers"][0]["stages_passed"].back(), "equivalent");
  EXPECT_EQ(ok["verify_seed"], 1);
  EXPECT_EQ(api::score({.answer = "no answer", .context = ctx, .measure = false})["reward"], -1.0);

  // Measured, through the hooks: the hold wraps the kernel run, which sees the candidate.
  api::ScoreRequest measured{.answer = parallel, .context = ctx};
  measured.settings.options.min_time_s = 0.002;
  measured.settings.input_seed = 7;
  int held = 0, runs = 0;
  std::vector<std::string> entered;
  api::ScoreHooks hooks;
  hooks.hold = [&](const std::function<void()>& timed) {
    ++held;
    timed();
  };
  hooks.before_kernel_run = [&](leir::Program& timed) {
    ++runs;
    EXPECT_NE(leir::program_to_text(timed), leir::program_to_text(matmul()));
  };
  hooks.on_progress = [&](const nlohmann::json& p) { entered.push_back(p["partial"].value("entering", "")); };
  auto scored = api::score(measured, hooks);
  EXPECT_EQ(held, 1);
  EXPECT_EQ(runs, 1);
  EXPECT_NE(std::find(entered.begin(), entered.end(), "compiles"), entered.end());
  EXPECT_EQ(scored["input_seed"], 7);
  EXPECT_NEAR(scored["answers"][0]["parts"]["compiles"].get<double>(), 0.1, 1e-12);
}

}  // namespace
}  // namespace steptp
