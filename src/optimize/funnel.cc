#include "optimize/funnel.h"

#include <fmt/format.h>

#include "leir/program_io.h"
#include "reward/answer.h"
#include "search/search.h"

namespace steptp::optimize {

using nlohmann::json;

json to_json(const Outcome& o) {
  json j = {{"failed_stage", o.failed ? json(std::string(reward::to_string(*o.failed))) : json(nullptr)},
            {"reason", o.reason},
            {"inconclusive", o.inconclusive},
            {"cached", o.cached},
            {"form", o.form},
            {"strategy", o.strategy}};
  if (o.program) j["candidate_hash"] = search::hex64(o.hash);
  if (o.budget_stop) j["budget_stop"] = true;
  if (o.measured) j["speedup_vs_root"] = o.speedup_vs_root, j["clears_noise"] = o.clears_noise;
  return j;
}

Funnel::Funnel(const leir::Program& root, tune::MeasurementStore& store, tune::Runner& runner, FunnelOptions o)
    : root_(root), root_text_(leir::program_to_text(root)), store_(store), comparer_(store, runner),
      verifier_(root, o.verify_seed), o_(o) {}

Outcome Funnel::evaluate(const leir::Program& parent, uint64_t parent_hash, double parent_speedup,
                         const std::string& answer, Spend& spend) {
  Outcome out;
  auto fail = [&](reward::Stage s, std::string why) {
    out.failed = s;
    out.reason = std::move(why);
    return out;
  };
  reward::ParsedAnswer pa = reward::parse_answer(answer);
  if (!pa.ok) return fail(reward::Stage::Parsed, pa.reason);
  if (pa.steps.size() != 1)
    return fail(reward::Stage::Parsed, fmt::format("a list of {} steps; one step was asked for", pa.steps.size()));
  const reward::Step& step = pa.steps.front();
  out.form = step.form == reward::Step::Form::IR ? "ir" : "action";
  out.strategy = step.strategy;
  reward::Candidate c = reward::candidate_program(parent, step);
  if (!c.program) return fail(reward::Stage::Valid, c.error);
  out.program = std::move(c.program);
  out.text = leir::program_to_text(*out.program);
  out.hash = search::program_hash(*out.program);
  out.step = {{"strategy", step.strategy.empty() ? "unnamed" : step.strategy},
              {"params", step.params ? *step.params : json::object()}};
  if (out.hash == parent_hash) return fail(reward::Stage::Differs, "the program is the parent's");

  auto it = cache_.find(out.hash);
  out.cached = it != cache_.end();
  if (!out.cached) {
    tune::Subject cand{&*out.program, &out.text};
    json v = tune::stored_verdicts(store_, verifier_, root_text_, {cand}, o_.verify_seed).front();
    it = cache_.emplace(out.hash, Facts{v, std::nullopt}).first;
  }
  Facts& f = it->second;
  if (!f.verdict.at("equivalent").get<bool>()) {
    std::string verdict = f.verdict.value("verdict", "failed");
    out.inconclusive = verdict == "inconclusive";
    std::string err = f.verdict.value("error", "");
    return fail(reward::Stage::Equivalent,
                fmt::format("not equivalent to the root ({}){}", verdict, err.empty() ? "" : ": " + err));
  }
  if (!f.timing) {
    if (!spend.can_measure()) {
      out.budget_stop = true;
      out.failed = reward::Stage::Compiles;
      out.reason = "measurement budget spent";
      cache_.erase(it);  // measured later, if at all, at its full price
      return out;
    }
    tune::Subject root{&root_, &root_text_}, cand{&*out.program, &out.text};
    f.timing = comparer_.compare({{root, cand}}).front();
    spend.measured++;
    out.cached = false;
  }
  if (!f.timing->ok) return fail(reward::Stage::Compiles, f.timing->error);
  out.measured = true;
  out.speedup_vs_root = f.timing->cmp.speedup;
  out.clears_noise = tune::clears_noise(f.timing->cmp);
  if (out.speedup_vs_root < parent_speedup * o_.faster_ratio)
    return fail(reward::Stage::Faster, fmt::format("speedup over the root {:.3g} vs the parent's {:.3g}",
                                                   out.speedup_vs_root, parent_speedup));
  return out;
}

}  // namespace steptp::optimize
