// The training files by method (see method_files.h).
#include "apps/dataset/method_files.h"

#include <algorithm>
#include <cmath>

#include "apps/dataset/dataset.h"
#include "apps/dataset/token_stats.h"

namespace steptp::dataset {

using nlohmann::json;

namespace {

double speedup(const json& a) { return a["cost"]["speedup_vs_parent"].get<double>(); }

// Two prompts are the same when their system and user texts are.
std::string prompt_key(const json& messages) {
  return messages[0]["content"].get<std::string>() + '\0' + messages[1]["content"].get<std::string>();
}

json prompt_of(const json& messages) { return json::array({messages[0], messages[1]}); }

// Strategy distribution of the answers a file teaches (or, RL, lists).
struct Tally {
  int records = 0, answers = 0, dropped_tokens = 0;
  std::map<std::string, int> per_strategy;
  void count(const json& answer) {
    answers++;
    per_strategy[answer["strategy"].get<std::string>()]++;
  }
  int loop_answers() const {
    int n = 0;
    for (const char* s : {"loop_reorder", "loop_vectorization"})
      if (auto it = per_strategy.find(s); it != per_strategy.end()) n += it->second;
    return n;
  }
  json to_json() const {
    return {{"records", records},
            {"answers", answers},
            {"per_strategy", per_strategy},
            {"strategies", per_strategy.size()},
            {"loop_reorder_vectorization_share", answers ? std::round(1e4 * loop_answers() / answers) / 1e4 : 0.0},
            {"dropped_over_token_cap", dropped_tokens}};
  }
};

json outcome_with_id(const json& rec, const json& answer) {
  json o = answer_outcome(answer);
  o["record_id"] = rec.value("id", "");
  return o;
}

}  // namespace

bool sft_answer(const json& a) { return a["label"] == "improving" || a["label"] == "enabling"; }

json sft_record(const json& rec) {
  json good = json::array();
  for (const auto& a : rec["answers"])
    if (sft_answer(a)) good.push_back(a);
  const bool multi = rec["kind"] == "multi";
  if (good.empty() || (multi && good.size() < 2)) return nullptr;
  std::stable_sort(good.begin(), good.end(), [](const json& x, const json& y) { return speedup(x) > speedup(y); });
  json out = rec;
  out["answers"] = std::move(good);
  return out;
}

bool preferred(const json& c, const json& r) {
  if (c["label"] != "improving" || r["label"] != "non_improving") return false;
  if (c["result_hash"] == r["result_hash"]) return false;
  if (!(speedup(c) > speedup(r))) return false;
  const json &ci_c = c["cost"].value("speedup_ci", json()), &ci_r = r["cost"].value("speedup_ci", json());
  if (ci_c.is_array() && ci_r.is_array()) return ci_c[0].get<double>() > ci_r[1].get<double>();
  return true;
}

json answer_outcome(const json& a) {
  const json& k = a["cost"];
  json o = {{"strategy", a["strategy"]},
            {"label", a["label"]},
            {"speedup_vs_parent", k["speedup_vs_parent"]},
            {"speedup_vs_root", k["speedup_vs_root"]},
            {"measured", k.value("measured", false)}};
  for (const char* f : {"speedup_ci", "noise_verdict"})
    if (k.contains(f)) o[f] = k[f];
  return o;
}

void MethodFiles::add(const json& rec, const json& chat) { entries_.push_back({&rec, &chat}); }

MethodFiles::Output MethodFiles::finish() const {
  Output out;
  json file_stats = json::object();
  json selection = json::object();
  int sft_answers = 0, sft_loop = 0;
  std::map<std::string, int> sft_loop_by;
  json dropped = json::object();
  for (const std::string split : {"train", "eval"}) {
    // ---- SFT: one candidate per prompt, the best measured ----
    struct Sft {
      json rec, chat;
    };
    std::vector<Sft> sft;
    std::map<std::string, size_t> sft_at;
    int no_answer = 0, multi_too_few = 0, duplicates = 0, answers_left_out = 0;
    for (const auto& e : entries_) {
      if ((*e.rec)["split"] != split) continue;
      json s = sft_record(*e.rec);
      if (s.is_null()) {
        ((*e.rec)["kind"] == "multi" ? multi_too_few : no_answer)++;
        continue;
      }
      answers_left_out += int((*e.rec)["answers"].size() - s["answers"].size());
      json chat = s["answers"] == (*e.rec)["answers"] ? *e.chat : make_chat(s, format_);
      const std::string key = prompt_key(chat["messages"]);
      auto [it, fresh] = sft_at.emplace(key, sft.size());
      if (fresh) {
        sft.push_back({std::move(s), std::move(chat)});
        continue;
      }
      duplicates++;
      // Records come in id order, so on equal speedups the first (lower id) stays.
      if (speedup(s["answers"][0]) > speedup(sft[it->second].rec["answers"][0]))
        sft[it->second] = {std::move(s), std::move(chat)};
    }
    selection[split] = {{"records", sft.size()},
                        {"single_without_improving_or_enabling_answer", no_answer},
                        {"multi_with_fewer_than_two", multi_too_few},
                        {"multi_answers_left_out", answers_left_out},
                        {"duplicate_prompts_dropped", duplicates}};
    Tally t_msg, t_pc;
    std::string msg_text, pc_text;
    for (const auto& s : sft) {
      json outcome = {{"record_id", s.rec["id"]}, {"kind", s.rec["kind"]}, {"answers", json::array()}};
      for (const auto& a : s.rec["answers"]) outcome["answers"].push_back(answer_outcome(a));
      const json& m = s.chat["messages"];
      if (chat_tokens(m, tok_) > kMaxRecordTokens) {
        t_msg.dropped_tokens++, t_pc.dropped_tokens++;
        continue;
      }
      for (Tally* t : {&t_msg, &t_pc}) {
        t->records++;
        for (const auto& a : s.rec["answers"]) t->count(a);
      }
      msg_text +=
          json{{"messages", m}, {"reward_context", s.chat["reward_context"]}, {kOutcomeColumn, outcome}}.dump() + "\n";
      pc_text += json{{"prompt", prompt_of(m)},
                      {"completion", json::array({m[2]})},
                      {"reward_context", s.chat["reward_context"]},
                      {kOutcomeColumn, outcome}}.dump() + "\n";
    }
    sft_answers += t_msg.answers;
    sft_loop += t_msg.loop_answers();
    for (const char* s : {"loop_reorder", "loop_vectorization"})
      if (t_msg.per_strategy.count(s)) sft_loop_by[s] += t_msg.per_strategy.at(s);

    // ---- DPO: single-step prompts, grouped by prompt text ----
    struct Option {
      const Entry* e;
      json answer, rec;  // rec: the single-step record (a multi record's answer asked alone); null: e's own
      json prompt;
    };
    std::vector<std::vector<Option>> groups;
    std::map<std::string, size_t> group_at;
    auto add_option = [&](Option o) {
      auto [it, fresh] = group_at.emplace(prompt_key(o.prompt), groups.size());
      if (fresh) groups.emplace_back();
      auto& g = groups[it->second];
      // The same step reached from two records is one option.
      for (const auto& x : g)
        if (x.answer["result_hash"] == o.answer["result_hash"]) return;
      g.push_back(std::move(o));
    };
    for (const auto& e : entries_) {
      if ((*e.rec)["split"] != split) continue;
      if ((*e.rec)["kind"] == "single") {
        add_option({&e, (*e.rec)["answers"][0], nullptr, prompt_of((*e.chat)["messages"])});
        continue;
      }
      for (const auto& a : (*e.rec)["answers"]) {
        json one = *e.rec;
        one["kind"] = "single";
        one["answers"] = json::array({a});
        json prompt = prompt_messages(one, format_);
        add_option({&e, a, std::move(one), std::move(prompt)});
      }
    }
    auto assistant = [&](const Option& o) -> json {
      if (o.rec.is_null()) return (*o.e->chat)["messages"][2];
      return make_chat(o.rec, format_)["messages"][2];
    };
    Tally t_dpo;
    std::map<std::string, int> rejected_by;
    std::string dpo_text;
    for (const auto& g : groups) {
      std::vector<const Option*> chosen, rejected;
      for (const auto& o : g) {
        if (o.answer["label"] == "improving") chosen.push_back(&o);
        if (o.answer["label"] == "non_improving") rejected.push_back(&o);
      }
      std::stable_sort(chosen.begin(), chosen.end(),
                       [](const Option* x, const Option* y) { return speedup(x->answer) > speedup(y->answer); });
      std::stable_sort(rejected.begin(), rejected.end(),
                       [](const Option* x, const Option* y) { return speedup(x->answer) < speedup(y->answer); });
      int pairs = 0;
      for (size_t sum = 0; sum + 1 < chosen.size() + rejected.size() && pairs < kDpoPairsPerPrompt; ++sum) {
        for (size_t i = 0; i <= sum && pairs < kDpoPairsPerPrompt; ++i) {
          const size_t j = sum - i;
          if (i >= chosen.size() || j >= rejected.size()) continue;
          const Option &c = *chosen[i], &r = *rejected[j];
          if (!preferred(c.answer, r.answer)) continue;
          json ca = assistant(c), ra = assistant(r);
          const size_t ntok = chat_tokens(c.prompt, tok_) +
                              std::max(chat_tokens(json::array({ca}), tok_), chat_tokens(json::array({ra}), tok_));
          if (ntok > kMaxRecordTokens) {
            t_dpo.dropped_tokens++;
            continue;
          }
          ++pairs;
          t_dpo.records++;
          t_dpo.count(c.answer);
          rejected_by[r.answer["strategy"].get<std::string>()]++;
          json ctx = reward_context(c.rec.is_null() ? *c.e->rec : c.rec);
          dpo_text += json{{"prompt", c.prompt},
                           {"chosen", json::array({ca})},
                           {"rejected", json::array({ra})},
                           {"chosen_message", ca},
                           {"rejected_message", ra},
                           {"reward_context", ctx},
                           {kOutcomeColumn, {{"chosen", outcome_with_id(*c.e->rec, c.answer)},
                                             {"rejected", outcome_with_id(*r.e->rec, r.answer)}}}}
                          .dump() + "\n";
        }
      }
    }

    // ---- RL: every distinct prompt, with what is known of its answers ----
    struct Rl {
      json prompt, ctx, answers;
    };
    std::vector<Rl> rl;
    std::map<std::string, size_t> rl_at;
    for (const auto& e : entries_) {
      if ((*e.rec)["split"] != split) continue;
      const json& m = (*e.chat)["messages"];
      auto [it, fresh] = rl_at.emplace(prompt_key(m), rl.size());
      if (fresh) rl.push_back({prompt_of(m), (*e.chat)["reward_context"], json::array()});
      for (const auto& a : (*e.rec)["answers"]) rl[it->second].answers.push_back(outcome_with_id(*e.rec, a));
    }
    Tally t_rl;
    std::string rl_text;
    for (auto& p : rl) {
      if (chat_tokens(p.prompt, tok_) > kMaxRecordTokens) {
        t_rl.dropped_tokens++;
        continue;
      }
      std::stable_sort(p.answers.begin(), p.answers.end(), [](const json& x, const json& y) {
        return x["speedup_vs_parent"].get<double>() > y["speedup_vs_parent"].get<double>();
      });
      t_rl.records++;
      for (const auto& a : p.answers) t_rl.count(a);
      rl_text +=
          json{{"prompt", p.prompt}, {"reward_context", p.ctx}, {kOutcomeColumn, {{"answers", p.answers}}}}.dump() + "\n";
    }

    const std::vector<std::pair<std::string, std::pair<const Tally*, std::string*>>> made = {
        {"sft_messages_" + split + ".jsonl", {&t_msg, &msg_text}},
        {"sft_prompt_completion_" + split + ".jsonl", {&t_pc, &pc_text}},
        {"dpo_" + split + ".jsonl", {&t_dpo, &dpo_text}},
        {"rl_prompts_" + split + ".jsonl", {&t_rl, &rl_text}}};
    for (const auto& [name, tf] : made) {
      file_stats[name] = tf.first->to_json();
      dropped[name] = tf.first->dropped_tokens;
      out.files.emplace_back(name, std::move(*tf.second));
    }
    file_stats["dpo_" + split + ".jsonl"]["rejected_per_strategy"] = rejected_by;
  }
  const json tags = {{"role_tag", "role"}, {"content_tag", "content"}, {"user_tag", "user"},
                     {"assistant_tag", "assistant"}, {"system_tag", "system"}};
  for (const std::string split : {"train", "eval"}) {
    out.dataset_info["steptp_sft_" + split] = {{"file_name", "sft_messages_" + split + ".jsonl"},
                                               {"formatting", "sharegpt"},
                                               {"columns", {{"messages", "messages"}}},
                                               {"tags", tags}};
    out.dataset_info["steptp_dpo_" + split] = {
        {"file_name", "dpo_" + split + ".jsonl"},
        {"formatting", "sharegpt"},
        {"ranking", true},
        {"columns", {{"messages", "prompt"}, {"chosen", "chosen_message"}, {"rejected", "rejected_message"}}},
        {"tags", tags}};
  }
  out.stats = {{"files", file_stats},
               {"sft_selection", selection},
               {"sft_loop_share", {{"answers", sft_answers},
                                   {"loop_reorder", sft_loop_by["loop_reorder"]},
                                   {"loop_vectorization", sft_loop_by["loop_vectorization"]},
                                   {"share", sft_answers ? std::round(1e4 * sft_loop / sft_answers) / 1e4 : 0.0},
                                   {"goal_at_most", 0.5}}},
               {"token_cap", {{"limit", kMaxRecordTokens}, {"dropped_lines", dropped}}}};
  return out;
}

}  // namespace steptp::dataset
