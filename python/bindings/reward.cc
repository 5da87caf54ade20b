// In-process answer scoring: the reward module `steptp serve` runs for /v1/score (apps/reward/reward.h,
// apps/reward/answer.h), with the same measurement settings and implausibility check, minus the
// service's worker sandbox (kernels still run in the timing policy's sandboxed child).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "json_caster.h"
#include "apps/reward/answer.h"
#include "apps/reward/reward.h"
#include "apps/reward/timing.h"
#include "search/tune/timing_lock.h"

namespace steptp::python {

namespace {

nlohmann::json score(const std::string& answer, const nlohmann::json& reward_context, bool measure, int verify_trials,
                     uint64_t verify_seed, uint64_t input_seed, const std::string& peaks, int measure_threads,
                     double measure_min_time) {
  const reward::Context ctx = reward::parse_context(reward_context);
  reward::ScoreOptions o;
  o.verify_trials = verify_trials;
  o.verify_seed = verify_seed;
  o.measure = measure;
  o.measurer = [&](const reward::Context& cx, const leir::Program& cand) {
    reward::MeasureSettings s;
    s.options.threads = measure_threads;
    s.options.min_time_s = measure_min_time;
    s.input_seed = input_seed;
    tune::TimingLock machine;  // cached_peaks may measure the machine
    auto m = reward::measure_step(cx.root, cx.parent, cand, s);
    if (!peaks.empty()) m.peaks = reward::cached_peaks(peaks, measure_threads);
    return m;
  };
  nlohmann::json body = reward::score(ctx, answer, o);
  body["verify_seed"] = verify_seed;
  body["input_seed"] = input_seed;
  return body;
}

nlohmann::json parse_answer(const std::string& text) {
  const auto a = reward::parse_answer(text);
  nlohmann::json j = {{"ok", a.ok}, {"reason", a.reason}, {"list", a.list}};
  auto steps = nlohmann::json::array();
  for (const auto& s : a.steps) {
    nlohmann::json st = {{"form", s.form == reward::Step::Form::IR ? "ir" : "action"}, {"strategy", s.strategy}};
    if (s.site) st["site"] = *s.site;
    if (s.params) st["params"] = *s.params;
    if (s.form == reward::Step::Form::IR) st["transformed_IR"] = s.ir;
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
