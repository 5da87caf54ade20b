// The files by training method (apps/dataset/method_files.h) and the split (apps/dataset/split.h) on a
// generated dataset (analytic cost, so labels are the model's): SFT holds only improving or
// enabling answers, no prompt twice, multi answers sorted by speedup; DPO pairs share their
// prompt and chosen is better; RL prompts carry no answer; no metadata in any message; no line
// above the token cap; eval holds out roots within every family with >= 3 roots. Plus the rules
// on hand-made answers and records (duplicate prompts, the token cap).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "apps/dataset/dataset.h"
#include "dataset/dataset_test_util.h"
#include "apps/dataset/method_files.h"
#include "apps/dataset/prompt.h"
#include "apps/dataset/split.h"
#include "apps/dataset/token_stats.h"
#include "front/tokenizer/bpe_tokenizer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::dataset {
namespace {

using namespace testing;

json answer(const std::string& strategy, const std::string& label, double speedup, const std::string& hash) {
  return {{"strategy", strategy}, {"label", label}, {"result_hash", hash},
          {"cost", {{"speedup_vs_parent", speedup}, {"speedup_vs_root", speedup}, {"measured", true}}}};
}

TEST(MethodFileRules, SftKeepsImprovingAndEnablingAnswersSortedBySpeedup) {
  json single = {{"kind", "single"}, {"answers", {answer("loop_reorder", "non_improving", 0.5, "a")}}};
  EXPECT_TRUE(sft_record(single).is_null());
  single["answers"][0]["label"] = "enabling";
  EXPECT_EQ(sft_record(single)["answers"].size(), 1u);

  json multi = {{"kind", "multi"},
                {"answers", {answer("loop_tiling", "improving", 1.2, "a"),
                             answer("loop_split", "non_improving", 3.0, "b"),
                             answer("loop_parallelization", "improving", 2.5, "c"),
                             answer("loop_unrolling", "improving", 1.2, "d")}}};
  json s = sft_record(multi);
  ASSERT_EQ(s["answers"].size(), 3u);
  EXPECT_EQ(s["answers"][0]["strategy"], "loop_parallelization");
  EXPECT_EQ(s["answers"][1]["strategy"], "loop_tiling");  // equal speedups keep the record's order
  EXPECT_EQ(s["answers"][2]["strategy"], "loop_unrolling");
  multi["answers"][2]["label"] = multi["answers"][3]["label"] = "non_improving";
  EXPECT_TRUE(sft_record(multi).is_null());  // one good answer is not a multi-answer target
}

TEST(MethodFileRules, PreferredIsImprovingOverMeasurablyWorseNonImproving) {
  json c = answer("loop_parallelization", "improving", 2.0, "a");
  json r = answer("loop_reorder", "non_improving", 0.8, "b");
  EXPECT_TRUE(preferred(c, r));
  EXPECT_FALSE(preferred(r, c));
  EXPECT_FALSE(preferred(c, answer("loop_tiling", "enabling", 0.9, "c")));     // enabling is not rejected
  EXPECT_FALSE(preferred(c, answer("loop_tiling", "non_improving", 2.1, "c")));  // not worse as measured
  EXPECT_FALSE(preferred(c, answer("loop_tiling", "non_improving", 0.5, "a")));  // the same program
  // With confidence intervals the two must not overlap.
  c["cost"]["speedup_ci"] = {1.6, 2.4};
  r["cost"]["speedup_ci"] = {0.7, 1.7};
  EXPECT_FALSE(preferred(c, r));
  r["cost"]["speedup_ci"] = {0.7, 0.95};
  EXPECT_TRUE(preferred(c, r));
  json o = answer_outcome(c);
  EXPECT_EQ(o["speedup_ci"], c["cost"]["speedup_ci"]);
  EXPECT_FALSE(o.contains("noise_verdict"));
}

fs::path tmpdir(const std::string& name) { return testing::tmpdir("method_files_test", name); }

class MethodFilesOfARun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(tmpdir("base"));
    GenerateOptions o = small_search(dir_->string(), 7, 16);
    o.measured = false;
    o.token_sample = 0;
    o.eval_fraction = 0.2;
    ASSERT_TRUE(generate(o).complete);
    steps_ = new std::vector<json>(lines(*dir_ / "steps.jsonl"));
    tok_ = new tokenizer::BpeTokenizer(tokenizer::BpeTokenizer::load(tokenizer::default_qwen3_path()));
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete steps_;
    delete tok_;
  }
  static std::vector<json> file(const std::string& method, const std::string& split) {
    return lines(*dir_ / (method + "_" + split + ".jsonl"));
  }
  static const json& record(const std::string& id) {
    for (const auto& r : *steps_)
      if (r["id"] == id) return r;
    throw std::runtime_error("no record " + id);
  }
  static fs::path* dir_;
  static std::vector<json>* steps_;
  static tokenizer::BpeTokenizer* tok_;
};
fs::path* MethodFilesOfARun::dir_ = nullptr;
std::vector<json>* MethodFilesOfARun::steps_ = nullptr;
tokenizer::BpeTokenizer* MethodFilesOfARun::tok_ = nullptr;

std::string prompt_text(const json& messages) {
  return messages[0]["content"].get<std::string>() + "\n" + messages[1]["content"].get<std::string>();
}

TEST_F(MethodFilesOfARun, SftTeachesOnlyGoodAnswersOncePerPromptSortedBySpeedup) {
  // The best measured speedup over the parent (first answer) among the SFT forms of the records
  // of each split and prompt.
  std::map<std::string, double> best;
  for (const auto& r : *steps_) {
    json s = sft_record(r);
    if (s.is_null()) continue;
    double& b = best.try_emplace(r["split"].get<std::string>() + prompt_text(prompt_messages(s, AnswerFormat::IR)), 0.0)
                    .first->second;
    b = std::max(b, s["answers"][0]["cost"]["speedup_vs_parent"].get<double>());
  }
  int multi = 0, lines_seen = 0;
  size_t prompts_seen = 0;
  for (const std::string split : {"train", "eval"}) {
    auto msg = file("sft_messages", split), pc = file("sft_prompt_completion", split);
    ASSERT_EQ(msg.size(), pc.size());
    std::set<std::string> prompts;
    for (size_t i = 0; i < msg.size(); ++i) {
      const json& m = msg[i]["messages"];
      ASSERT_EQ(m.size(), 3u);
      EXPECT_TRUE(prompts.insert(prompt_text(m)).second) << "prompt twice in sft_messages_" << split;
      // The prompt/completion form is the same conversation cut after the user message.
      EXPECT_EQ(pc[i]["prompt"], json::array({m[0], m[1]}));
      EXPECT_EQ(pc[i]["completion"], json::array({m[2]}));
      const json& out = msg[i][kOutcomeColumn];
      const json& rec = record(out["record_id"]);
      EXPECT_EQ(rec["split"], split);
      EXPECT_EQ(msg[i]["reward_context"]["record_id"], rec["id"]);
      double prev = 1e300;
      for (const auto& a : out["answers"]) {
        EXPECT_TRUE(a["label"] == "improving" || a["label"] == "enabling") << a.dump();
        EXPECT_LE(a["speedup_vs_parent"].get<double>(), prev);
        prev = a["speedup_vs_parent"].get<double>();
      }
      // The assistant text is make_chat's for the record's SFT form: nothing added by the export.
      json s = sft_record(rec);
      ASSERT_FALSE(s.is_null());
      EXPECT_EQ(m[2], make_chat(s, AnswerFormat::IR)["messages"][2]);
      if (rec["kind"] == "multi") {
        ++multi;
        EXPECT_GE(out["answers"].size(), 2u);
      }
      // The best measured of the records with this prompt was kept.
      EXPECT_EQ(best.at(split + prompt_text(m)), out["answers"][0]["speedup_vs_parent"].get<double>());
      ++lines_seen;
    }
    prompts_seen += prompts.size();
  }
  EXPECT_EQ(prompts_seen, best.size());  // every prompt with something to teach is taught
  EXPECT_GT(lines_seen, 5);
  EXPECT_GT(multi, 0);
}

TEST_F(MethodFilesOfARun, DpoChosenBeatsRejectedAtTheSamePrompt) {
  int pairs = 0;
  for (const std::string split : {"train", "eval"}) {
    std::map<std::string, int> per_prompt;
    for (const auto& d : file("dpo", split)) {
      ASSERT_EQ(d["prompt"].size(), 2u);
      ASSERT_EQ(d["chosen"].size(), 1u);
      ASSERT_EQ(d["rejected"].size(), 1u);
      EXPECT_EQ(d["chosen"][0], d["chosen_message"]);
      EXPECT_EQ(d["rejected"][0], d["rejected_message"]);
      EXPECT_NE(d["chosen"][0]["content"], d["rejected"][0]["content"]);
      const json& c = d[kOutcomeColumn]["chosen"];
      const json& r = d[kOutcomeColumn]["rejected"];
      EXPECT_EQ(c["label"], "improving");
      EXPECT_EQ(r["label"], "non_improving");
      EXPECT_GT(c["speedup_vs_parent"].get<double>(), r["speedup_vs_parent"].get<double>());
      // Both answers were given at this prompt: the prompt of their records' state, one step asked.
      for (const json* o : {&c, &r}) {
        json one = record((*o)["record_id"]);
        EXPECT_EQ(one["split"], split);
        json a;
        for (const auto& x : one["answers"])
          if (x["strategy"] == (*o)["strategy"] && x["cost"]["speedup_vs_parent"] == (*o)["speedup_vs_parent"]) a = x;
        ASSERT_FALSE(a.is_null()) << o->dump();
        one["kind"] = "single";
        one["answers"] = json::array({a});
        EXPECT_EQ(prompt_messages(one, AnswerFormat::IR), d["prompt"]);
      }
      EXPECT_LE(++per_prompt[prompt_text(d["prompt"])], kDpoPairsPerPrompt);
      ++pairs;
    }
  }
  EXPECT_GT(pairs, 0);
}

TEST_F(MethodFilesOfARun, RlPromptsAreDistinctAndCarryNoAnswer) {
  std::map<std::string, int> prompts_of_split;
  for (const auto& r : *steps_) {
    json p = prompt_messages(r, AnswerFormat::IR);
    prompts_of_split[r["split"].get<std::string>() + prompt_text(p)]++;
  }
  size_t total = 0;
  for (const std::string split : {"train", "eval"}) {
    std::set<std::string> seen;
    for (const auto& l : file("rl_prompts", split)) {
      EXPECT_FALSE(l.contains("messages") || l.contains("completion") || l.contains("chosen"));
      ASSERT_EQ(l["prompt"].size(), 2u);
      EXPECT_EQ(l["prompt"][1]["role"], "user");
      EXPECT_TRUE(seen.insert(prompt_text(l["prompt"])).second);
      EXPECT_TRUE(prompts_of_split.count(split + prompt_text(l["prompt"])));
      EXPECT_EQ(record(l["reward_context"]["record_id"])["split"], split);
      EXPECT_FALSE(l[kOutcomeColumn]["answers"].empty());
    }
    total += seen.size();
  }
  EXPECT_EQ(total, prompts_of_split.size());  // every distinct prompt once
}

TEST_F(MethodFilesOfARun, MetadataNeverInMessagesAndNoLineAboveTheTokenCap) {
  auto st = json::parse(slurp(*dir_ / "stats.json"));
  auto info = json::parse(slurp(*dir_ / "dataset_info.json"));
  for (const std::string method : {"sft_messages", "sft_prompt_completion", "dpo", "rl_prompts"}) {
    for (const std::string split : {"train", "eval"}) {
      const std::string name = method + "_" + split + ".jsonl";
      auto ls = file(method, split);
      EXPECT_EQ(st["files"][name]["records"].get<size_t>(), ls.size()) << name;
      for (const auto& l : ls) {
        EXPECT_FALSE(l.contains("labels")) << "a column named labels collides with the trainer's label tensor";
        json convo = json::array();
        for (const char* col : {"messages", "prompt", "completion", "chosen", "rejected"})
          if (l.contains(col))
            for (const auto& m : l[col]) convo.push_back(m);
        for (const auto& m : convo) {
          const std::string c = m["content"];
          for (const char* meta : {kOutcomeColumn, "reward_context", "record_id", "noise_verdict"})
            EXPECT_EQ(c.find(meta), std::string::npos) << meta << " in a message of " << name;
        }
        size_t ntok = 0;
        if (method == "dpo")
          ntok = chat_tokens(l["prompt"], *tok_) +
                 std::max(chat_tokens(l["chosen"], *tok_), chat_tokens(l["rejected"], *tok_));
        else
          ntok = chat_tokens(convo, *tok_);
        EXPECT_LE(ntok, kMaxRecordTokens) << name;
      }
    }
  }
  // LLaMA-Factory's index names existing files, in its sharegpt form with role/content tags.
  for (const auto& [name, d] : info.items()) {
    EXPECT_TRUE(fs::exists(*dir_ / d["file_name"].get<std::string>())) << name;
    EXPECT_EQ(d["formatting"], "sharegpt");
    EXPECT_EQ(d["tags"]["assistant_tag"], "assistant");
  }
  EXPECT_EQ(info["steptp_dpo_train"]["columns"]["chosen"], "chosen_message");
  EXPECT_TRUE(info["steptp_dpo_train"]["ranking"].get<bool>());
  EXPECT_EQ(st["token_cap"]["limit"].get<size_t>(), kMaxRecordTokens);
  const json& loop = st["sft_loop_share"];
  EXPECT_EQ(loop["answers"].get<int>(), st["files"]["sft_messages_train.jsonl"]["answers"].get<int>() +
                                            st["files"]["sft_messages_eval.jsonl"]["answers"].get<int>());
}

TEST_F(MethodFilesOfARun, EvalHoldsOutRootsWithinEveryFamilyOfThreeOrMore) {
  std::map<std::string, std::set<std::string>> train_roots, eval_roots;
  std::vector<double> tokens[2];
  for (const auto& r : *steps_) {
    const bool ev = r["split"] == "eval";
    (ev ? eval_roots : train_roots)[r["root"]["family"].get<std::string>()].insert(r["root"]["key"].get<std::string>());
    tokens[ev].push_back(r["tokens"].get<double>());
  }
  auto st = json::parse(slurp(*dir_ / "stats.json"));
  int sampled = 0;
  for (const auto& [f, keys] : train_roots) {
    const size_t n = keys.size() + eval_roots[f].size();
    if (n >= size_t(kRootsForHeldOutRoots)) {
      EXPECT_GE(eval_roots[f].size(), 1u) << f;
      ++sampled;
    }
    for (const auto& k : keys) EXPECT_FALSE(eval_roots[f].count(k)) << k << " in both splits";
    EXPECT_EQ(st["eval_coverage"]["per_family"][f]["eval_roots"].get<size_t>(), eval_roots[f].size());
  }
  EXPECT_GT(sampled, 0) << "the run should have a family with 3 or more roots";
  ASSERT_FALSE(tokens[0].empty());
  ASSERT_FALSE(tokens[1].empty());
  const double ratio = median(tokens[1]) / median(tokens[0]);
  EXPECT_NEAR(ratio, 1.0, 0.3);
  EXPECT_EQ(st["split"]["median_tokens"]["train"].get<double>(), median(tokens[0]));
}

// Hand-made entries: two records with one prompt but different targets keep the faster; a chat
// above the token cap is dropped and counted.
TEST_F(MethodFilesOfARun, DuplicatePromptsKeepTheFasterAndTheCapDrops) {
  const json* base = nullptr;
  const json* other = nullptr;
  for (const auto& r : *steps_) {
    if (r["kind"] != "single" || r["answers"][0]["label"] != "improving") continue;
    if (!base) base = &r;
    else if (r["answers"][0]["strategy"] != (*base)["answers"][0]["strategy"]) other = &r;
    if (other) break;
  }
  ASSERT_TRUE(base && other);
  json a = *base, b = *base;
  a["split"] = b["split"] = "train";
  b["id"] = "999999";
  b["answers"] = (*other)["answers"];  // another target at the same prompt
  a["answers"][0]["cost"]["speedup_vs_parent"] = 1.5;
  b["answers"][0]["cost"]["speedup_vs_parent"] = 3.0;
  json ca = make_chat(a), cb = make_chat(b);
  ASSERT_EQ(prompt_text(ca["messages"]), prompt_text(cb["messages"]));
  ASSERT_NE(ca["messages"][2], cb["messages"][2]);
  MethodFiles mf(AnswerFormat::IR, *tok_);
  mf.add(a, ca);
  mf.add(b, cb);
  auto out = mf.finish();
  auto text = [&](const std::string& name) {
    for (const auto& [n, t] : out.files)
      if (n == name) return t;
    throw std::runtime_error("no file " + name);
  };
  json sft = json::parse(text("sft_messages_train.jsonl"));
  EXPECT_EQ(sft["messages"][2], cb["messages"][2]);
  EXPECT_EQ(sft[kOutcomeColumn]["record_id"], "999999");
  EXPECT_EQ(out.stats["sft_selection"]["train"]["duplicate_prompts_dropped"], 1);

  json huge = ca;
  std::string words;
  for (size_t i = 0; i < kMaxRecordTokens; ++i) words += " loop";
  huge["messages"][1]["content"] = words;
  ASSERT_GT(chat_tokens(huge["messages"], *tok_), kMaxRecordTokens);
  MethodFiles capped(AnswerFormat::IR, *tok_);
  capped.add(a, huge);
  auto out2 = capped.finish();
  for (const auto& [n, t] : out2.files) EXPECT_TRUE(t.empty()) << n;
  EXPECT_EQ(out2.stats["token_cap"]["dropped_lines"]["sft_messages_train.jsonl"], 1);
  EXPECT_EQ(out2.stats["token_cap"]["dropped_lines"]["rl_prompts_train.jsonl"], 1);
}

}  // namespace
}  // namespace steptp::dataset
