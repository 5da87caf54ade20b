// In-process answer scoring: the reward module `steptp serve` runs for /v1/score (apps/reward/reward.h,
// apps/reward/answer.h), with the same measurement settings and implausibility check, minus the
// service's worker sandbox (kernels still run in the timing policy's sandboxed child).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "apps/api/api.h"
#include "bindings.h"
#include "json_caster.h"
#include "apps/reward/answer.h"
#include "apps/reward/reward.h"

namespace steptp::python {

namespace {

nlohmann::json score(const std::string& answer, const nlohmann::json& reward_context, bool measure, int verify_trials,
                     uint64_t verify_seed, uint64_t input_seed, const std::string& peaks, int measure_threads,
                     double measure_min_time) {
  api::ScoreRequest r;
  r.answer = answer;
  r.context = reward::parse_context(reward_context);
  r.measure = measure;
  r.verify_trials = verify_trials;
  r.verify_seed = verify_seed;
  r.peaks_path = peaks;
  r.settings.options.threads = measure_threads;
  r.settings.options.min_time_s = measure_min_time;
  r.settings.input_seed = input_seed;
  return api::score(r);
}

nlohmann::json parse_answer(const std::string& text) {
  const auto a = reward::parse_answer(text);
  nlohmann::json j = {{"ok", a.ok}, {"reason", a.reason}, {"list", a.list}};
  auto steps = nlohmann::json::array();
  for (const auto& s : a.steps) {
    nlohmann::json st = {{"form", std::string(reward::to_string(s.form))}, {"strategy", s.strategy}};
    if (s.site) st["site"] = *s.site;
    if (s.params) st["params"] = *s.params;
    if (s.form == reward::AnswerStep::Form::IR) st["transformed_IR"] = s.ir;
    steps.push_back(std::move(st));
  }
  j["steps"] = steps;
  return j;
}

}  // namespace

void bind_reward(nb::module_& m) {
  const auto unlocked = nb::call_guard<nb::gil_scoped_release>();
  m.def("score", &score, nb::arg("answer"), nb::arg("reward_context"), nb::arg("measure"), nb::arg("verify_trials"),
        nb::arg("verify_seed"), nb::arg("input_seed"), nb::arg("peaks"), nb::arg("measure_threads"),
        nb::arg("measure_min_time"), unlocked,
        "The reward of an assistant answer (the body of serve's /v1/score reply; docs/serve.md).");
  m.def("parse_answer", &parse_answer, nb::arg("text"), unlocked,
        "The answer parser of the reward: {'ok', 'reason', 'list', 'steps': [{'form', 'strategy', 'site'?, "
        "'params'?, 'transformed_IR'?}]}.");
}

}  // namespace steptp::python
