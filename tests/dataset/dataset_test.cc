// End-to-end tests of `generate` on a tiny configuration: schema of every output file, JSON
// validity of every answer, CoT number traceability, no train/eval leakage, determinism across
// --jobs and across an interrupted + resumed run, clean errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/dataset/dataset.h"
#include "dataset/dataset_test_util.h"
#include "apps/dataset/reasoning.h"
#include "ir/leir/program_io.h"
#include "error_kind.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::dataset {
namespace {

using namespace testing;

GenerateOptions tiny_opts(const std::string& out) {
  GenerateOptions o = small_search(out, 5, 4);
  // Analytic cost: these tests cover the pipeline; CPU measurement is covered by measured_test.cc.
  o.measured = false;
  return o;
}

fs::path tmpdir(const std::string& name) { return testing::tmpdir("dataset_test", name); }

const std::vector<std::string> kFiles = {"train.jsonl", "eval.jsonl", "steps.jsonl", "manifest.json", "stats.json",
                                         "sft_messages_train.jsonl", "sft_prompt_completion_eval.jsonl",
                                         "dpo_train.jsonl", "rl_prompts_eval.jsonl", "dataset_info.json"};

class Generated : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(tmpdir("base"));
    auto s = generate(tiny_opts(dir_->string()));
    ASSERT_TRUE(s.complete);
    summary_ = new GenerateSummary(s);
  }
  static void TearDownTestSuite() {
    delete summary_;
    delete dir_;
  }
  static fs::path* dir_;
  static GenerateSummary* summary_;
};
fs::path* Generated::dir_ = nullptr;
GenerateSummary* Generated::summary_ = nullptr;

TEST_F(Generated, SchemaOfEveryFile) {
  for (const auto& f : kFiles) ASSERT_TRUE(fs::exists(*dir_ / f)) << f;
  auto steps = lines(*dir_ / "steps.jsonl");
  ASSERT_GT(steps.size(), 5u);
  EXPECT_EQ(int(steps.size()), summary_->steps);
  for (const auto& r : steps) {
    for (const char* k : {"id", "kind", "split", "root", "root_program", "parent_program", "steps_so_far", "answers",
                          "facts", "cot", "tokens", "depth", "state"})
      ASSERT_TRUE(r.contains(k)) << k;
    ASSERT_TRUE(r["kind"] == "single" || r["kind"] == "multi");
    ASSERT_TRUE(r["split"] == "train" || r["split"] == "eval");
    if (r["kind"] == "single") EXPECT_EQ(r["answers"].size(), 1u);
    else EXPECT_GE(r["answers"].size(), 2u);
    for (const auto& a : r["answers"]) {
      for (const char* k : {"strategy", "site", "params", "exactness", "result_program", "result_hash", "verification",
                            "cost", "label", "transition", "effect"})
        ASSERT_TRUE(a.contains(k)) << k;
      for (const char* k : {"flops", "bytes", "local_accesses", "items", "contiguous_share"})
        ASSERT_TRUE(a["effect"][k].is_array() && a["effect"][k].size() == 2u) << k;
      EXPECT_TRUE(a["effect"]["loops"].is_array());
      EXPECT_TRUE(a["verification"]["equivalent"].get<bool>());
      EXPECT_NE(a["verification"]["class"], "failed");
      EXPECT_FALSE(a["cost"]["measured"].get<bool>());
      EXPECT_TRUE(a["label"] == "improving" || a["label"] == "non_improving");
    }
  }
  for (const char* f : {"train.jsonl", "eval.jsonl"}) {
    for (const auto& c : lines(*dir_ / f)) {
      ASSERT_EQ(c["messages"].size(), 3u);
      EXPECT_EQ(c["messages"][0]["role"], "system");
      EXPECT_EQ(c["messages"][1]["role"], "user");
      EXPECT_EQ(c["messages"][2]["role"], "assistant");
    }
  }
  auto m = json::parse(slurp(*dir_ / "manifest.json"));
  for (const char* k : {"tool", "options", "seed", "inputs", "split", "counts", "files", "cost"}) EXPECT_TRUE(m.contains(k)) << k;
  EXPECT_EQ(m["counts"]["records"].get<int>(), int(steps.size()));
  auto st = json::parse(slurp(*dir_ / "stats.json"));
  for (const char* k : {"per_strategy", "verification_classes", "speedup_vs_parent", "tokens", "strategies_covered"})
    EXPECT_TRUE(st.contains(k)) << k;
  EXPECT_GT(st["tokens"]["cot_total"].get<int64_t>(), 0);
}

TEST_F(Generated, EveryAssistantAnswerIsValidJson) {
  for (const char* f : {"train.jsonl", "eval.jsonl"}) {
    for (const auto& c : lines(*dir_ / f)) {
      std::string a = c["messages"][2]["content"];
      ASSERT_EQ(a.rfind("<think>", 0), 0u);
      auto t = a.find("</think>");
      ASSERT_NE(t, std::string::npos);
      auto s = a.find("<answer>", t);
      auto e = a.rfind("</answer>");
      ASSERT_NE(s, std::string::npos);
      ASSERT_EQ(e + 9, a.size());
      json ans = json::parse(a.substr(s + 8, e - s - 8));
      auto check = [](const json& x) {
        EXPECT_TRUE(x.contains("strategy") && x.contains("params") && x.contains("transformed_IR"));
        EXPECT_TRUE(x["params"].is_object());
      };
      if (ans.is_array()) {
        EXPECT_GE(ans.size(), 2u);
        for (const auto& x : ans) check(x);
      } else {
        check(ans);
      }
    }
  }
}

// Issue 35: the <think> argues only from the prompt and the answer. Every number in it is in the
// user message, in the answer, or an effect fact of the answer's result (recomputed from the two
// programs); no outcome or hindsight phrase appears; the record's facts stay in steps.jsonl.
TEST_F(Generated, EveryThinkNumberIsInThePromptOrDerivedFromTheAnswer) {
  int checked = 0;
  for (const auto& [r, chat] : records_with_chats(*dir_)) {
    EXPECT_EQ(think_of(chat), "\n" + r["cot"].get<std::string>()) << r["id"];
    EXPECT_EQ(underived_think_numbers(r, chat), std::vector<std::string>{}) << r["id"] << "\n" << r["cot"];
    EXPECT_EQ(hindsight_phrases(r["cot"]), std::vector<std::string>{}) << r["id"] << "\n" << r["cot"];
    checked += int(numbers_in(r["cot"]).size());
  }
  EXPECT_GT(checked, 50);
}

// The two messages agree on one vs several steps, and the user message states what the think may
// use: the target and machine, the steps so far with their sites, and the analysis facts of every
// nest (each loop with its extent, kind and dependence).
TEST_F(Generated, PromptStatesMachineStepsAndFactsAndAgreesOnTheTask) {
  int with_steps = 0;
  for (const auto& [r, chat] : records_with_chats(*dir_)) {
    const std::string sys = chat["messages"][0]["content"], user = chat["messages"][1]["content"];
    const bool multi = r["kind"] == "multi";
    EXPECT_EQ(sys.find("several distinct") != std::string::npos, multi) << sys;
    EXPECT_EQ(sys.find("a single") != std::string::npos, !multi) << sys;
    EXPECT_EQ(user.find("Task: give several") != std::string::npos, multi);
    EXPECT_EQ(user.find("Task: give one") != std::string::npos, !multi);
    ASSERT_TRUE(r["machine"].is_object());
    const int threads = r["machine"]["threads"];
    EXPECT_NE(user.find("kernels timed on " + std::to_string(threads) + (threads == 1 ? " thread;" : " threads;")),
              std::string::npos)
        << user;
    EXPECT_NE(user.find(r["machine"]["flags"].get<std::string>()), std::string::npos);
    const json facts = analysis_json(leir::program_from_text(r["parent_program"].get<std::string>()));
    for (const auto& n : facts["nests"])
      for (const auto& l : n["loops"])
        EXPECT_NE(user.find(l["var"].get<std::string>() + " (extent " + l["extent"].dump() + ", " +
                            loop_kind_name(l["kind"]) + ", " + l["dependence"].get<std::string>() + ")"),
                  std::string::npos)
            << user;
    if (r["steps_so_far"].empty()) {
      EXPECT_NE(user.find("Steps so far: none"), std::string::npos);
      continue;
    }
    ++with_steps;
    for (const auto& st : r["steps_so_far"]) {
      ASSERT_TRUE(st.contains("site")) << st.dump();  // every step of a search state has its producer
      EXPECT_NE(user.find(st["strategy"].get<std::string>() + " at " + st["site"].get<std::string>() + " " +
                          st["params"].dump()),
                std::string::npos)
          << user;
    }
    // Model costs: the current program's speedup is not measured, and the prompt says so.
    EXPECT_NE(user.find("Speedup of the current program over the root: not measured."), std::string::npos);
  }
  EXPECT_GT(with_steps, 0);
}

// The think argues from the step's effect facts with the documented rules (apps/dataset/reasoning.h),
// and the stored expectation is the rules' verdict; facts recomputed here for steps whose effect
// is known (a parallelized loop on one timed thread, an unchanged-work reorder).
TEST_F(Generated, ExpectationFollowsTheRulesFromEffectFacts) {
  int parallel = 0, argued = 0;
  std::map<std::string, int> verdicts;
  for (const auto& r : lines(*dir_ / "steps.jsonl")) {
    std::string cot = r["cot"];
    for (const auto& a : r["answers"]) {
      const auto& e = a["effect"];
      ++argued;
      const Expectation x = expect(r, a);
      EXPECT_EQ(a["expectation"], x.verdict) << r["id"];
      verdicts[x.verdict]++;
      const char* says = x.verdict == "faster"   ? "Expectation: faster than the current program."
                         : x.verdict == "slower" ? "Expectation: slower than the current program."
                                                 : "Expectation: about the same speed";
      EXPECT_NE(cot.find(says), std::string::npos) << r["id"];
      const double f0 = e["flops"][0], f1 = e["flops"][1];
      if (f1 <= 0.95 * f0 || f1 >= 1.05 * f0)
        EXPECT_NE(cot.find("flops " + e["flops"][0].dump() + " -> " + e["flops"][1].dump()), std::string::npos) << r["id"];
      if (a["strategy"] == "loop_parallelization") {
        // Exactly one loop becomes P, and it is independent (the strategy's legality); timed on
        // one thread that changes nothing, and the think says so.
        ASSERT_EQ(e["loops"].size(), 1u) << e.dump();
        EXPECT_EQ(e["loops"][0]["after"], "P");
        EXPECT_EQ(e["loops"][0]["dependence"], "independent");
        ASSERT_EQ(r["machine"]["threads"], 1);
        EXPECT_NE(cot.find("loop " + e["loops"][0]["var"].get<std::string>() + " (extent " +
                           e["loops"][0]["extent"].dump() + ") becomes parallel, but the kernels run on 1 thread"),
                  std::string::npos)
            << cot;
        EXPECT_EQ(e["flops"][0], e["flops"][1]);  // same work, spread over threads
        ++parallel;
      }
      if (a["strategy"] == "loop_reorder") EXPECT_EQ(e["flops"][0], e["flops"][1]);
    }
  }
  EXPECT_GT(argued, 50);
  EXPECT_GT(parallel, 0);
  EXPECT_GT(verdicts["faster"], 0);
  EXPECT_GT(verdicts["same"] + verdicts["slower"], 0);
  // stats.json compares the expectations with the labels.
  auto st = json::parse(slurp(*dir_ / "stats.json"));
  EXPECT_EQ(st["expectation_agreement"]["overall"]["answers"].get<int>(), argued);
}

// Issue 15: a CPU record never argues from GPU-only hardware. A step that adds a bound loop or an
// s/l buffer states what it means on the CPU; the others do not mention it.
TEST_F(Generated, GpuFlavouredChoicesStateTheirCpuMeaning) {
  auto count = [](const std::string& t, const std::string& w) {
    size_t n = 0;
    for (size_t p = t.find(w); p != std::string::npos; p = t.find(w, p + 1)) ++n;
    return n;
  };
  int binding = 0, scoped = 0;
  for (const auto& r : lines(*dir_ / "steps.jsonl")) {
    ASSERT_EQ(r["target"], "cpu");
    const std::string cot = r["cot"], before = r["parent_program"];
    bool any_binding = false, any_scoped = false;
    for (const auto& a : r["answers"]) {
      const std::string after = a["result_program"];
      any_binding |= count(after, "B^{") > count(before, "B^{");
      any_scoped |= count(after, ",s}") + count(after, ",l}") > count(before, ",s}") + count(before, ",l}");
    }
    EXPECT_EQ(cot.find("On the CPU a bound loop (B) runs as an OpenMP parallel loop") != std::string::npos, any_binding)
        << r["id"];
    EXPECT_EQ(cot.find("On the CPU shared (s) and local (l) buffers are plain arrays") != std::string::npos, any_scoped)
        << r["id"];
    binding += any_binding;
    scoped += any_scoped;
  }
  EXPECT_GT(binding, 0);
  EXPECT_GT(scoped, 0);
}

TEST_F(Generated, NoLeakageBetweenTrainAndEval) {
  std::set<std::string> train_root, eval_root, train_hash, eval_hash;
  int n_eval = 0, n_train = 0;
  for (const auto& r : lines(*dir_ / "steps.jsonl")) {
    bool ev = r["split"] == "eval";
    (ev ? n_eval : n_train)++;
    (ev ? eval_root : train_root).insert(r["root"]["key"].get<std::string>());
    auto& hs = ev ? eval_hash : train_hash;
    hs.insert(r["root"]["hash"].get<std::string>());
    hs.insert(r["parent_hash"].get<std::string>());
    for (const auto& a : r["answers"]) hs.insert(a["result_hash"].get<std::string>());
  }
  EXPECT_GT(n_train, 0);
  EXPECT_GT(n_eval, 0);
  for (const auto& k : eval_root) EXPECT_FALSE(train_root.count(k)) << k;
  for (const auto& h : eval_hash) EXPECT_FALSE(train_hash.count(h)) << h;
}

TEST_F(Generated, IdenticalBytesWithTwoJobs) {
  auto d2 = tmpdir("jobs2");
  auto o = tiny_opts(d2.string());
  o.jobs = 2;
  ASSERT_TRUE(generate(o).complete);
  for (const auto& f : kFiles) EXPECT_EQ(slurp(*dir_ / f), slurp(d2 / f)) << f;
}

TEST_F(Generated, InterruptedRunResumesToIdenticalBytes) {
  auto d = tmpdir("resume");
  auto o = tiny_opts(d.string());
  o.stop_after = 2;
  auto s = generate(o);
  EXPECT_FALSE(s.complete);
  EXPECT_EQ(s.roots_done, 2);
  for (const auto& f : kFiles) EXPECT_FALSE(fs::exists(d / f)) << f;
  o.stop_after = -1;
  ASSERT_TRUE(generate(o).complete);
  for (const auto& f : kFiles) EXPECT_EQ(slurp(*dir_ / f), slurp(d / f)) << f;
}

TEST(Generate, BadOptionsWriteNothing) {
  auto d = tmpdir("bad");
  auto o = tiny_opts(d.string());
  o.depth = 0;
  EXPECT_EQ(steptp::testing::thrown_kind([&] { generate(o); }), base::ErrorKind::BadRequest);
  EXPECT_FALSE(fs::exists(d));
  o = tiny_opts("/proc/steptp-not-writable/out");
  EXPECT_THROW(generate(o), std::exception);
}

TEST(Generate, NumbersInSkipsIdentifiers) {
  auto n = numbers_in("loop i0 (extent 16) speedup 1.25, x_3 1e-05 L^{8}_{a=0}");
  std::vector<std::string> want = {"16", "1.25", "1e-05", "8", "0"};
  EXPECT_EQ(n, want);
}

}  // namespace
}  // namespace steptp::dataset
