#include "apps/dataset/filter.h"

#include <set>

#include "base/hash.h"
#include "apps/dataset/shortcut.h"
#include "ir/interp/inputs.h"
#include "transform/sampler.h"

namespace steptp::dataset {

using nlohmann::json;

std::vector<char> filter_records(std::vector<json>& recs, const GenerateOptions& o, std::map<std::string, int>& drops) {
  std::set<std::string> seen_hash;
  std::vector<char> keep(recs.size(), 1);
  for (size_t i = 0; i < recs.size(); ++i) {
    auto& r = recs[i];
    // Drop anything that failed a check.
    bool ok = true;
    for (const auto& a : r["answers"])
      if (!a["verification"]["equivalent"].get<bool>() || a["verification"]["class"] == "failed") ok = false;
    if (!ok) { keep[i] = 0; drops["failed"]++; continue; }
    if (r["kind"] == "single") {
      const auto& a = r["answers"][0];
      std::string h = a["result_hash"];
      if (seen_hash.count(h)) { keep[i] = 0; drops["duplicate"]++; continue; }
      seen_hash.insert(h);
      std::string s = a["strategy"];
      if (!r["steps_so_far"].empty()) {
        std::string last = r["steps_so_far"].back()["strategy"];
        auto inv = inverses().find(s);
        if (inv != inverses().end() && inv->second == last) { keep[i] = 0; drops["inverse_of_previous"]++; continue; }
      }
      if (r.contains("coverage_reserve")) continue;  // judged by the coverage rule below
      if (trivial_strategies().count(s) && a["label"] != "improving" && !a.contains("path")) {
        interp::Rng rng(base::mix_seed(o.seed, base::fnv1a(h, base::kProgramHashBasis)));
        if (rng.uniform() >= o.trivial_keep) { keep[i] = 0; drops["trivial_downweighted"]++; continue; }
      }
    }
  }
  // Per-strategy caps, applied in a seeded order so every root gets its chance.
  {
    auto order = strategies::choose_indices(recs.size(), recs.size(), base::mix_seed(o.seed, 0xca9));
    std::map<std::string, int> count;
    for (size_t i : order) {
      if (!keep[i] || recs[i]["kind"] != "single") continue;
      if (recs[i]["answers"][0].contains("path")) continue;  // a tuned path is kept whole
      if (recs[i].contains("coverage_reserve")) continue;
      std::string s = recs[i]["answers"][0]["strategy"];
      if (++count[s] > o.per_strategy_cap) { keep[i] = 0; drops["per_strategy_cap"]++; }
    }
  }
  // Multi-answer records: at most multi_per_strategy_cap appearances per strategy, in a seeded
  // order. An over-cap answer is removed; the record goes when its first answer (the one its
  // facts describe) is over cap or fewer than 2 answers remain.
  {
    auto order = strategies::choose_indices(recs.size(), recs.size(), base::mix_seed(o.seed, 0x3a17));
    std::map<std::string, int> count;
    for (size_t i : order) {
      if (!keep[i] || recs[i]["kind"] != "multi") continue;
      json& answers = recs[i]["answers"];
      std::vector<char> over(answers.size(), 0);
      int left = 0;
      for (size_t k = 0; k < answers.size(); ++k) {
        over[k] = count[answers[k]["strategy"].get<std::string>()] >= o.multi_per_strategy_cap;
        left += !over[k];
      }
      if (over[0] || left < 2) { keep[i] = 0; drops["multi_per_strategy_cap"]++; continue; }
      json kept = json::array();
      for (size_t k = 0; k < answers.size(); ++k) {
        if (over[k]) { drops["multi_answer_over_cap"]++; continue; }
        count[answers[k]["strategy"].get<std::string>()]++;
        kept.push_back(answers[k]);
      }
      answers = kept;
    }
  }
  // Coverage: a reserve record stays, as a "coverage" record, only for a strategy that no other
  // kept record answers — the first such reserve in record (root) order.
  {
    std::set<std::string> shown;
    for (size_t i = 0; i < recs.size(); ++i)
      if (keep[i] && !recs[i].contains("coverage_reserve"))
        for (const auto& a : recs[i]["answers"]) shown.insert(a["strategy"].get<std::string>());
    for (size_t i = 0; i < recs.size(); ++i) {
      if (!recs[i].contains("coverage_reserve")) continue;
      recs[i].erase("coverage_reserve");
      if (!keep[i]) continue;
      if (!shown.insert(recs[i]["answers"][0]["strategy"].get<std::string>()).second) {
        keep[i] = 0;
        drops["coverage_reserve_unused"]++;
        continue;
      }
      recs[i]["coverage"] = true;
    }
  }

  return keep;
}

}  // namespace steptp::dataset
