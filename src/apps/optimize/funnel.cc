#include "apps/optimize/funnel.h"

#include <fmt/format.h>

#include "base/hash.h"
#include "ir/leir/canonical.h"
#include "ir/leir/program_io.h"

namespace steptp::optimize {

using nlohmann::json;

json to_json(const Outcome& o) {
  json j = {{"failed_stage", o.failed ? json(std::string(reward::to_string(*o.failed))) : json(nullptr)},
            {"reason", o.reason},
            {"inconclusive", o.inconclusive},
            {"cached", o.cached},
            {"form", o.form},
            {"strategy", o.strategy}};
  if (o.program) j["candidate_hash"] = base::hex64(o.hash);
  if (o.budget_stop) j["budget_stop"] = true;
  if (!o.infrastructure_failure.empty()) j["infrastructure_failure"] = o.infrastructure_failure;
  if (o.measured) j["speedup_vs_root"] = o.speedup_vs_root, j["clears_noise"] = o.clears_noise;
  return j;
}

Funnel::Funnel(const leir::Program& root, tune::ObservationStore& store, tune::Runner& runner, FunnelOptions o)
    : root_(root), root_text_(leir::program_to_text(root)), root_hash_(leir::canonical_hash(root)), store_(store),
      comparer_(store, runner), verifier_(root, o.verify_seed), o_(o) {}

Outcome Funnel::evaluate(const leir::Program& parent, double parent_speedup, const std::string& answer, Spend& spend) {
  Outcome out;
  bool verdict_reused = false, timed_now = false;
  reward::Judge j;
  j.single_step = true;
  j.improve_threshold = o_.faster_ratio;
  j.verify = [&](const leir::Program& cand, uint64_t h) {
    auto it = cache_.find(h);
    verdict_reused = it != cache_.end();
    if (!verdict_reused) {
      const std::string text = leir::program_to_text(cand);
      tune::Subject subject{&cand, &text};
      it = cache_.emplace(h, Facts{tune::stored_verdicts(store_, verifier_, root_text_, {subject}, o_.verify_seed).front(),
                                   std::nullopt})
               .first;
    }
    const json& v = it->second.verdict;
    return reward::Verdict{v.at("equivalent").get<bool>(), v.value("verdict", "failed"), v.value("error", ""),
                           v.value("report", json(nullptr))};
  };
  j.measure = [&](const leir::Program& cand, uint64_t h) -> std::optional<reward::MeasuredStep> {
    Facts& f = cache_.at(h);
    if (!f.timing) {
      if (!spend.can_measure()) {
        out.budget_stop = true;
        cache_.erase(h);  // measured later, if at all, at its full price
        return std::nullopt;
      }
      const std::string text = leir::program_to_text(cand);
      tune::Subject root{&root_, &root_text_}, subject{&cand, &text};
      f.timing = comparer_.compare({{root, subject}}).front();
      spend.measured++;
      timed_now = true;
    }
    const tune::PairResult& t = *f.timing;
    if (!t.ok) return reward::MeasuredStep::failed(t);
    reward::MeasuredStep m;
    m.ok = m.compiled = true;
    m.vs_root = t.cmp;
    // Over the parent: the ratio of the two speedups over the root, each from its own session;
    // the noise rule sees the parent's spread (from its timing against the root) and the candidate's.
    m.vs_parent = t.cmp;
    if (leir::canonical_hash(parent) != root_hash_) {
      m.vs_parent.speedup = t.cmp.speedup / parent_speedup;
      if (auto p = cache_.find(leir::canonical_hash(parent)); p != cache_.end() && p->second.timing && p->second.timing->ok)
        m.vs_parent.a = p->second.timing->cmp.b;
    }
    return m;
  };
  std::vector<reward::Judgement> steps;
  json res = reward::judge_answer(parent, answer, j, &steps);
  if (!res["parsed"].get<bool>()) {
    out.failed = reward::Stage::Parsed;
    out.reason = res["reason"].get<std::string>();
    return out;
  }
  const reward::Judgement& jd = steps.front();
  const json& oc = jd.outcome;
  const reward::AnswerStep& step = jd.step;
  out.form = oc["form"].get<std::string>();
  out.strategy = oc["strategy"].get<std::string>();
  out.inconclusive = oc["inconclusive"].get<bool>();
  out.reason = oc["reason"].get<std::string>();
  for (int s = 0; s < reward::kStageCount; ++s)
    if (oc["failed_stage"] == reward::to_string(reward::Stage(s))) out.failed = reward::Stage(s);
  if (jd.program) {
    out.program = jd.program;
    out.text = leir::program_to_text(*out.program);
    out.hash = leir::program_hash(*out.program);
    out.step = {{"strategy", step.strategy.empty() ? "unnamed" : step.strategy},
                {"params", step.params ? *step.params : json::object()}};
    if (!step.site_handle.empty()) out.step["site"] = step.site_handle;  // the prompt's steps so far name it
  }
  if (out.budget_stop) {
    out.failed = reward::Stage::Compiles;
    out.reason = "measurement budget spent";
    return out;
  }
  if (oc.contains("infrastructure_failure")) {
    out.infrastructure_failure = oc["infrastructure_failure"].get<std::string>();
    out.failed = reward::Stage::Compiles;
    out.reason = "not measured: " + out.infrastructure_failure;
    return out;
  }
  out.cached = verdict_reused && !timed_now;
  if (jd.measured && jd.measured->ok) {
    out.measured = true;
    out.speedup_vs_root = jd.measured->vs_root.speedup;
    out.clears_noise = tune::clears_noise(jd.measured->vs_root);
  }
  return out;
}

}  // namespace steptp::optimize
