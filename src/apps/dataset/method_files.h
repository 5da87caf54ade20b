// The training files of `steptp generate` by method (docs/dataset.md, "Files"), train and eval
// of each, made from the exported records (steps.jsonl form, with split and id) and their chat
// records (make_chat), in record order:
//   sft_messages_{train,eval}.jsonl           {"messages": [system, user, assistant]}
//   sft_prompt_completion_{train,eval}.jsonl  {"prompt": [system, user], "completion": [assistant]}
//   dpo_{train,eval}.jsonl                    {"prompt": [system, user], "chosen": [assistant],
//                                              "rejected": [assistant], "chosen_message",
//                                              "rejected_message" (the same two as one message
//                                              each: LLaMA-Factory's ranking form)}
//   rl_prompts_{train,eval}.jsonl             {"prompt": [system, user]} (no answer)
// Every line also carries the metadata columns "reward_context" (dataset.h) and kOutcomeColumn
// (the measured outcomes: never "labels", which trainers use for the label tensor). Neither ever
// enters a message: the assistant text is make_chat's, unchanged.
//
// SFT: only answers labelled improving or enabling. A single record whose answer is one; a
// multi record restricted to those answers, sorted by measured speedup over the parent
// (descending), when two or more remain. No prompt (system + user text) twice: of the
// candidates with one prompt the best measured is kept (speedup over the parent of its first
// answer; then the lower record id).
// DPO: single-step prompts — the single records, and each answer of a multi record asked as a
// single step at the same state — grouped by prompt text; chosen an improving answer, rejected a
// non_improving one that is measurably worse (preferred()); at most kDpoPairsPerPrompt pairs per
// prompt, best chosen and worst rejected first.
// RL: every distinct prompt of the records (their own kind), the first record's reward_context;
// kOutcomeColumn lists the measured outcomes of every answer given to that prompt.
// A line above kMaxRecordTokens Qwen3 tokens (token_stats.h; DPO: prompt + the longer answer) is
// dropped and counted.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/dataset/prompt.h"

namespace steptp::tokenizer {
class BpeTokenizer;
}

namespace steptp::dataset {

inline constexpr const char* kOutcomeColumn = "step_outcome";
inline constexpr int kDpoPairsPerPrompt = 4;

// An answer SFT may teach: labelled improving or enabling.
bool sft_answer(const nlohmann::json& answer);
// The SFT form of a record: null when it has no answer to teach (single) or fewer than two
// (multi); else the record with only those answers, sorted by speedup_vs_parent, descending
// (stable: equal speedups keep the record's order).
nlohmann::json sft_record(const nlohmann::json& rec);
// DPO: `chosen` is labelled improving, `rejected` non_improving, they differ, chosen's measured
// speedup over the parent is higher and, when both carry a confidence interval
// (cost.speedup_ci), chosen's lower bound is above rejected's upper bound.
bool preferred(const nlohmann::json& chosen, const nlohmann::json& rejected);
// {"strategy", "label", "speedup_vs_parent", "speedup_vs_root", "measured"} of an answer, plus
// "speedup_ci" and "noise_verdict" when the record has them.
nlohmann::json answer_outcome(const nlohmann::json& answer);

class MethodFiles {
 public:
  MethodFiles(AnswerFormat f, const tokenizer::BpeTokenizer& tok) : format_(f), tok_(tok) {}
  // One exported record (with "split" and "id") and its chat record (make_chat(rec, format)).
  void add(const nlohmann::json& rec, const nlohmann::json& chat);
  // The files (name, contents) in a fixed order, the LLaMA-Factory dataset_info.json, and the
  // stats.json part: {"files": {name: {"records", "answers", "per_strategy", ...}},
  // "sft_selection": {...}, "sft_loop_share": {...}, "token_cap": {...}}.
  struct Output {
    std::vector<std::pair<std::string, std::string>> files;
    nlohmann::json dataset_info;
    nlohmann::json stats;
  };
  Output finish() const;

 private:
  struct Entry {
    const nlohmann::json* rec;
    const nlohmann::json* chat;
  };
  AnswerFormat format_;
  const tokenizer::BpeTokenizer& tok_;
  std::vector<Entry> entries_;
};

}  // namespace steptp::dataset
