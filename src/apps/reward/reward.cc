// The funnel and the reward of an answer (see reward.h).
#include "apps/reward/reward.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/dataset/prompt.h"
#include "base/error.h"
#include "base/hash.h"
#include "ir/leir/canonical.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/program_io.h"
#include "ir/leir/validate.h"
#include "transform/apply_named.h"
#include "search/tune/runner.h"
#include "transform/trace.h"
#include "ir/verify/verifier.h"

namespace steptp::reward {
namespace {

using nlohmann::json;

// Parses and validates a program text; throws LeirError naming `field` as the file.
leir::Program valid_program(const std::string& text, const std::string& field) {
  return require_valid(leir::program_from_text(text, field), field);
}

// A body-only IR (public_train.jsonl's form) has no declaration line.
bool has_signature(const std::string& ir) {
  size_t pos = 0;
  while (pos < ir.size()) {
    size_t end = ir.find('\n', pos);
    std::string line = ir.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    size_t b = line.find_first_not_of(" \t\r");
    if (b != std::string::npos && line[b] != '#') {
      for (const char* kw : {"name ", "input ", "output ", "param ", "constant "})
        if (line.compare(b, std::string_view(kw).size(), kw) == 0) return true;
      return false;  // the first meaningful line is body
    }
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return false;
}

std::string signature_text(const leir::Program& p) {
  std::string s;
  if (!p.name.empty()) s += "name " + p.name + "\n";
  for (const auto& d : p.known) s += leir::signature_line(d) + "\n";
  return s;
}

double log2_clamped(double s) { return std::clamp(std::log2(std::max(s, 1e-12)), -1.0, 1.0); }

// B's timing against A's, read the other way round (A against B).
backend::Comparison reversed(const backend::Comparison& c) {
  return {c.b, c.a, c.speedup > 0 ? 1 / c.speedup : 1};
}

json blank_outcome(const AnswerStep& s) {
  return {{"reward", 0.0},
          {"parts", {{"format", 0.0}, {"validity", 0.0}, {"equivalence", 0.0}, {"compiles", 0.0}, {"speedup", 0.0}}},
          {"stages_passed", json::array({"parsed"})},
          {"failed_stage", nullptr},
          {"inconclusive", false},
          {"reason", ""},
          {"form", std::string(to_string(s.form))},
          {"strategy", s.strategy}};
}

void finish(json& o) {
  double r = 0;
  for (const auto& [k, v] : o["parts"].items()) r += v.get<double>();
  o["reward"] = std::round(r * 1e6) / 1e6;
}

json fail(json o, Stage stage, const std::string& reason) {
  o["failed_stage"] = std::string(to_string(stage));
  o["reason"] = reason;
  finish(o);
  return o;
}

// The measurement stages (compiles → faster) of a verified candidate; `out` has passed
// "equivalent". Sets j.outcome.
void judge_measured(const MeasuredStep& m, const leir::Program& cand, double improve_threshold, Judgement& j) {
  json& out = j.outcome;
  if (!m.ok) {
    out["measurement"] = {{"error", m.error}};
    out = fail(out, Stage::Compiles, (m.compiled ? "run failed: " : "") + m.error);
    return;
  }
  // The kernel that was timed must compute what was verified: its outputs against the root's
  // kernel on the same inputs. A mismatch (a codegen bug, or a program the interpreter and the
  // backend read differently) takes back the equivalence credit: the answer is not equivalent.
  if (m.outputs) {
    out["compiled_outputs"] = json::parse(verify::to_json(*m.outputs));
    if (m.outputs->verdict == verify::Verdict::Failed) {
      out["stages_passed"].erase(out["stages_passed"].size() - 1);  // "equivalent"
      out["parts"]["equivalence"] = RewardParts::kNotEquivalent;
      std::string why = m.outputs->error;
      if (why.empty() && m.outputs->worst)
        why = fmt::format("{}[{}] = {} vs the root's {}", m.outputs->worst->tensor,
                          fmt::join(m.outputs->worst->index, ","), m.outputs->worst->b, m.outputs->worst->a);
      out = fail(out, Stage::Equivalent, "the compiled kernel's outputs differ from the root's: " + why);
      return;
    }
  }
  out["parts"]["compiles"] = RewardParts::kCompiles;
  out["stages_passed"].push_back("compiles");
  double sp = m.vs_parent.speedup, sr = m.vs_root.speedup;
  out["speedup_vs_parent"] = sp;
  out["speedup_vs_root"] = sr;
  out["measurement"] = {{"parent", to_json(m.vs_parent.a)}, {"candidate_vs_parent", to_json(m.vs_parent.b)},
                        {"root", to_json(m.vs_root.a)},     {"candidate_vs_root", to_json(m.vs_root.b)},
                        {"threads", m.threads}};
  bool implausible = false;
  if (m.peaks) {
    double bound_ms = 1e3 * lower_bound_seconds(cand, *m.peaks);
    out["lower_bound_ms"] = bound_ms;
    implausible = std::min(m.vs_parent.b.median_ms, m.vs_root.b.median_ms) < bound_ms;
  }
  out["implausible"] = implausible;
  if (implausible) {
    out = fail(out, Stage::Faster, "implausible: faster than the machine's peaks allow");
    return;
  }
  // One timing policy: a speedup (or a slowdown) is paid only when the noise rule says it is
  // real; a difference within the noise earns nothing either way.
  const bool faster = tune::clears_noise(m.vs_parent), slower = tune::clears_noise(reversed(m.vs_parent));
  out["clears_noise"] = faster;
  if (faster || slower) out["parts"]["speedup"] = RewardParts::kSpeedupScale * log2_clamped(sp);
  if (!faster) {
    out = fail(out, Stage::Faster,
               fmt::format("speedup over the parent {:.3g}{}", sp, slower ? ": slower" : " is within the timing noise"));
    return;
  }
  if (sp < improve_threshold) {
    out = fail(out, Stage::Faster, fmt::format("speedup over the parent {:.3g} < {:.3g}", sp, improve_threshold));
    return;
  }
  out["stages_passed"].push_back("faster");
  finish(out);
}

// One answer's funnel, after parsing.
Judgement judge_step(const leir::Program& parent, uint64_t parent_hash, const AnswerStep& step, const Judge& jg,
                     const std::vector<uint64_t>& earlier) {
  Judgement j;
  j.step = step;
  if (step.form == AnswerStep::Form::Choice)
    if (auto a = choice_action(parent, step)) j.step = std::move(*a);
  json& out = j.outcome;
  out = blank_outcome(step);
  out["strategy"] = j.step.strategy;
  auto progress = [&](Stage next) {
    if (!jg.on_progress) return;
    json p = out;
    p["entering"] = std::string(to_string(next));
    jg.on_progress(p);
  };
  progress(Stage::Valid);
  StepProgram c = candidate_program(parent, j.step);  // a choice already resolved: its menu is built once
  if (c.program && jg.admissible)
    if (std::string why = jg.admissible(*c.program); !why.empty()) {
      c.error = why;
      c.program.reset();
    }
  if (!c.program) {
    out["parts"]["validity"] = RewardParts::kInvalid;
    out = fail(out, Stage::Valid, c.error);
    return j;
  }
  out["stages_passed"].push_back("valid");
  j.program = std::move(c.program);
  const leir::Program& cand = *j.program;
  // "Differs" on the canonical form: renaming, commuting or `+0` is not a step.
  const uint64_t h = j.canonical_hash = leir::canonical_hash(cand);
  out["candidate_hash"] = base::hex64(leir::program_hash(cand));  // as the dataset's result_hash
  out["canonical_hash"] = base::hex64(h);
  if (h == parent_hash) {
    out = fail(out, Stage::Differs, "the program is the parent's (up to renaming, operand order and identities)");
    return j;
  }
  if (auto k = std::find(earlier.begin(), earlier.end(), h); k != earlier.end()) {
    out = fail(out, Stage::Differs, fmt::format("the same program as answer {}", k - earlier.begin()));
    return j;
  }
  out["stages_passed"].push_back("differs");

  progress(Stage::Equivalent);
  Verdict v = jg.verify(cand, h);
  if (!v.report.is_null()) out["verification"] = v.report;
  out["verdict"] = v.verdict;
  if (!v.equivalent) {
    out["parts"]["equivalence"] = RewardParts::kNotEquivalent;
    // Any verdict but equivalent is not verified; "inconclusive" is counted apart.
    out["inconclusive"] = v.verdict == "inconclusive";
    std::string why = fmt::format("not equivalent to the root ({})", v.verdict);
    out = fail(out, Stage::Equivalent, v.error.empty() ? why : why + ": " + v.error);
    return j;
  }
  out["parts"]["equivalence"] = RewardParts::kEquivalent;
  out["stages_passed"].push_back("equivalent");

  if (jg.measure) {
    progress(Stage::Compiles);
    try {
      j.measured = jg.measure(cand, h);
    } catch (const std::bad_alloc&) {
      throw;  // memory exhausted while the kernel ran: the supervisor scores it (serve's died_reply)
    } catch (const std::exception& e) {
      j.measured = MeasuredStep{};
      j.measured->infrastructure = true;
      j.measured->error = e.what();
    }
  }
  if (!j.measured) {
    finish(out);
    return j;
  }
  if (j.measured->infrastructure) {
    out["infrastructure_failure"] = j.measured->error;
    out["failed_stage"] = kNoScore;
    out["reason"] = "not judged: " + j.measured->error;
    out["reward"] = nullptr;
    return j;
  }
  judge_measured(*j.measured, cand, jg.improve_threshold, j);
  return j;
}

Verdict verdict_of(const verify::VerifyReport& r) {
  return {r.equivalent, std::string(verify::to_string(r.verdict)), r.equivalent ? "" : r.error,
          json::parse(verify::to_json(r))};
}

}  // namespace

leir::Program require_valid(leir::Program p, const std::string& field) {
  auto report = leir::validate_all(p);
  if (!report.ok()) throw leir::LeirError(field, report.errors.front().loc, report.errors.front().message);
  return p;
}

std::string_view to_string(Stage s) {
  switch (s) {
    case Stage::Parsed: return "parsed";
    case Stage::Valid: return "valid";
    case Stage::Differs: return "differs";
    case Stage::Equivalent: return "equivalent";
    case Stage::Compiles: return "compiles";
    case Stage::Faster: return "faster";
  }
  return "parsed";
}

Context parse_context(const json& j) {
  if (!j.is_object()) throw base::Error(base::ErrorKind::BadRequest, "reward_context must be a JSON object");
  for (const char* k : {"root_program", "parent_program"})
    if (!j.contains(k) || !j[k].is_string())
      throw base::Error(base::ErrorKind::BadRequest, fmt::format("reward_context.{} must be a LEIR program text", k));
  return {valid_program(j["root_program"].get<std::string>(), "reward_context.root_program"),
          valid_program(j["parent_program"].get<std::string>(), "reward_context.parent_program")};
}

namespace {

// Applies strategy `name` at the site `pick` chooses with `params` (nullopt or empty: the site's
// first choice); throws base::Error (BadRequest, naming the field) saying why it does not apply
// (`no_site`: the message when `pick` finds none, given the strategy's site count).
leir::Program apply_picked(const leir::Program& parent, const std::string& name, const strategies::SitePicker& pick,
                           const std::function<std::string(size_t site_count)>& no_site,
                           const std::optional<json>& params) {
  const bool given = params && !params->empty();
  const std::string want = given ? params->dump() : "";  // nlohmann objects keep keys sorted, as params_to_json
  auto r = strategies::apply_named(
      parent, name, pick, [&](const std::vector<strategies::Params>& space) -> std::optional<strategies::Params> {
        // A site without parameters applies with none; without `params` the site's first choice.
        if (space.empty()) return given ? std::nullopt : std::optional<strategies::Params>(strategies::Params{});
        if (!given) return space.front();
        for (const auto& p : space)
          if (strategies::params_to_json(p) == want) return p;
        return std::nullopt;
      });
  if (auto* a = std::get_if<strategies::AppliedStep>(&r)) return std::move(a->candidate.program);
  const auto& f = std::get<strategies::ApplyFailure>(r);
  using Stage = strategies::ApplyFailure::Stage;
  using base::ErrorKind;
  switch (f.stage) {
    case Stage::UnknownStrategy:
      throw base::Error(ErrorKind::BadRequest, fmt::format("unknown strategy '{}'", name), "strategy");
    case Stage::NoSite: throw base::Error(ErrorKind::BadRequest, no_site(f.site_count), "site");
    case Stage::ParamsNotChosen:
      throw base::Error(ErrorKind::BadRequest,
                        fmt::format("params {} are not among the {} choice(s) of {} at site {}", want,
                                    std::max<size_t>(f.space_size, 1), name, f.site_index),
                        "params");
    case Stage::Refused:
      throw base::Error(ErrorKind::BadRequest,
                        fmt::format("{} does not apply at site {} with these params: {}", name, f.site_index, f.reason),
                        "params");
  }
  throw std::logic_error("unreachable");
}

}  // namespace

leir::Program apply_action(const leir::Program& parent, const std::string& name, int site,
                           const std::optional<json>& params) {
  return apply_picked(
      parent, name,
      [&](const std::vector<strategies::Site>&) { return site < 0 ? std::nullopt : std::optional<size_t>(site); },
      [&](size_t count) {
        return fmt::format("{} has {} site(s) in this program; site {} does not exist", name, count, site);
      },
      params);
}

std::optional<AnswerStep> choice_action(const leir::Program& parent, const AnswerStep& step, size_t* options) {
  const auto menu = dataset::choice_options(parent);
  if (options) *options = menu.size();
  if (!step.choice || *step.choice < 1 || size_t(*step.choice) > menu.size()) return std::nullopt;
  const dataset::MenuOption& o = menu[size_t(*step.choice) - 1];
  AnswerStep a;
  a.form = AnswerStep::Form::Action;
  a.strategy = o.strategy;
  a.site_handle = strategies::to_handle(o.address);
  a.params = strategies::params_json(o.params);
  return a;
}

StepProgram candidate_program(const leir::Program& parent, const AnswerStep& step) {
  if (step.form == AnswerStep::Form::Choice) {
    size_t options = 0;
    if (auto a = choice_action(parent, step, &options)) return candidate_program(parent, *a);
    StepProgram c;
    c.error = fmt::format("choice {} is not among the {} numbered options of this program's menu",
                          step.choice.value_or(0), options);
    return c;
  }
  StepProgram c;
  c.strategy = step.strategy;
  try {
    if (step.form == AnswerStep::Form::Action) {
      if (step.site) {
        c.program = apply_action(parent, step.strategy, *step.site, step.params);
      } else {
        const auto handle = *strategies::parse_handle(step.site_handle);
        c.program = apply_picked(
            parent, step.strategy,
            [&](const std::vector<strategies::Site>& sites) { return strategies::find_site(sites, handle); },
            [&](size_t) { return fmt::format("{} has no site {} in this program", step.strategy, step.site_handle); },
            step.params);
      }
      return c;
    }
    if (has_signature(step.ir)) {
      c.program = valid_program(step.ir, "transformed_IR");
      return c;
    }
    // Body only: the parent's signature goes first; positions are reported in the answer's lines.
    std::string sig = signature_text(parent);
    int sig_lines = int(std::count(sig.begin(), sig.end(), '\n'));
    try {
      c.program = valid_program(sig + step.ir, "transformed_IR");
    } catch (const leir::LeirError& e) {
      leir::SourceLoc loc = e.loc();
      if (loc.line > uint32_t(sig_lines)) loc.line -= uint32_t(sig_lines);
      throw leir::LeirError("transformed_IR", loc, e.message());
    }
  } catch (const leir::LeirError& e) {
    c.program.reset();
    c.error = e.what();
  } catch (const std::exception& e) {
    c.program.reset();
    c.error = e.what();
  }
  return c;
}

json judge_answer(const leir::Program& parent, std::string_view answer_text, const Judge& jg,
                  std::vector<Judgement>* steps) {
  ParsedAnswer pa = parse_answer(answer_text);
  json res = {{"parsed", pa.ok}, {"list", pa.list}, {"answers", json::array()}};
  if (pa.ok && jg.single_step && pa.steps.size() != 1) {
    pa.ok = false;
    pa.reason = fmt::format("a list of {} steps; one step was asked for", pa.steps.size());
    res["parsed"] = false;
  }
  if (!pa.ok) {
    res["reason"] = pa.reason;
    res["failed_stage"] = "parsed";
    res["reward"] = RewardParts::kParseFail;
    res["parts"] = {{"format", RewardParts::kParseFail}};
    return res;
  }
  const uint64_t parent_hash = leir::canonical_hash(parent);
  std::vector<uint64_t> hashes;
  double total = 0;
  for (size_t i = 0; i < pa.steps.size(); ++i) {
    Judge ji = jg;
    if (jg.on_progress)
      ji.on_progress = [&, i](const json& partial) {
        jg.on_progress({{"answer", i}, {"of", pa.steps.size()}, {"done", res["answers"]}, {"partial", partial}});
      };
    Judgement a = judge_step(parent, parent_hash, pa.steps[i], ji, hashes);
    hashes.push_back(a.canonical_hash);
    const json& o = a.outcome;
    res["answers"].push_back(o);
    if (o.contains("infrastructure_failure")) {
      // Not the answer's fault: the whole reply is "no score", the rest of the list unjudged.
      std::string why = o["infrastructure_failure"];
      if (steps) steps->push_back(std::move(a));
      return no_score(std::move(res["answers"]), pa.steps.size(), why);
    }
    total += o["reward"].get<double>();
    if (steps) steps->push_back(std::move(a));
  }
  res["reward"] = std::round(total / double(pa.steps.size()) * 1e6) / 1e6;
  return res;
}

json score(const Context& ctx, std::string_view answer_text, const ScoreOptions& o) {
  Judge j;
  j.improve_threshold = o.improve_threshold;
  j.on_progress = o.on_progress;
  j.admissible = o.admissible;
  j.verify = [&](const leir::Program& cand, uint64_t) {
    verify::VerifyOptions vo;
    vo.trials = o.verify_trials;
    vo.seed = o.verify_seed;
    return verdict_of(verify::verify(ctx.root, cand, vo));
  };
  if (o.measure)
    j.measure = [&](const leir::Program& cand, uint64_t) -> std::optional<MeasuredStep> {
      return o.measurer ? o.measurer(ctx, cand) : measure_step(ctx.root, ctx.parent, cand, {});
    };
  return judge_answer(ctx.parent, answer_text, j);
}

json no_score(json answers, size_t of, const std::string& reason) {
  const size_t unscored = of - answers.size();
  return {{"parsed", true},    {"list", of > 1},           {"answers", std::move(answers)}, {"unscored", unscored},
          {"reward", nullptr}, {"failed_stage", kNoScore}, {"infrastructure_failure", reason}};
}

json failed_outcome(json partial, const std::string& reason) {
  partial.erase("entering");
  partial.erase("kernel_run");
  return fail(std::move(partial), Stage::Compiles, reason);
}

}  // namespace steptp::reward
