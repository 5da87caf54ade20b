#include "tune/trace.h"

#include <algorithm>

#include <fmt/format.h>
#include "strategies/schedule_state.h"

namespace steptp::tune {

using nlohmann::json;

AppliedStep resolve_step(const leir::Program& p, const TraceStep& step) {
  const auto* s = strategies::find_strategy(step.strategy);
  if (!s) throw ReplayError(fmt::format("unknown strategy '{}'", step.strategy));
  const strategies::ScheduleState st(p);
  const auto& sites = s->sites(st);
  auto i = find_site(sites, step.site);
  if (!i)
    throw ReplayError(fmt::format("{}: no site at path [{}] detail [{}] ({})", step.strategy,
                                  fmt::join(step.site.path, ","), fmt::join(step.site.detail, ","),
                                  step.site_description));
  auto space = s->param_space(st, sites[*i]);
  if (std::find(space.begin(), space.end(), step.params) == space.end())
    throw ReplayError(fmt::format("{} at {}: parameters {} are not in the site's space", step.strategy,
                                  sites[*i].description, strategies::params_to_json(step.params)));
  auto c = s->apply(st, sites[*i], step.params);
  if (!c)
    throw ReplayError(fmt::format("{} at {}: the strategy refused parameters {}: {}", step.strategy,
                                  sites[*i].description, strategies::params_to_json(step.params), c.refusal().reason));
  return {sites[*i], *i, std::move(*c)};
}

leir::Program apply_step(const leir::Program& p, const TraceStep& step) {
  return std::move(resolve_step(p, step).candidate.program);
}

leir::Program replay(const leir::Program& root, const Trace& trace) {
  leir::Program p = root;
  for (size_t k = 0; k < trace.size(); ++k) {
    try {
      p = apply_step(p, trace[k]);
    } catch (const ReplayError& e) {
      throw ReplayError(fmt::format("step {}: {}", k + 1, e.what()));
    }
  }
  return p;
}

json step_to_json(const TraceStep& s) {
  return {{"strategy", s.strategy},
          {"site",
           {{"path", s.site.path}, {"detail", s.site.detail}, {"occurrence", s.site.occurrence},
            {"description", s.site_description}}},
          {"params", json::parse(strategies::params_to_json(s.params))}};
}

strategies::Params params_from_json(const json& j) {
  if (!j.is_object()) throw ReplayError("params: expected an object");
  strategies::Params p;
  for (const auto& [k, v] : j.items()) {
    if (v.is_number_integer()) p[k] = v.get<int64_t>();
    else if (v.is_string()) p[k] = v.get<std::string>();
    else if (v.is_array() && std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number_integer(); }))
      p[k] = v.get<std::vector<int64_t>>();
    else throw ReplayError(fmt::format("params.{}: expected an integer, a string or a list of integers", k));
  }
  return p;
}

TraceStep step_from_json(const json& j) {
  try {
    TraceStep s;
    s.strategy = j.at("strategy").get<std::string>();
    const json& site = j.at("site");
    s.site.path = site.at("path").get<std::vector<int>>();
    s.site.detail = site.at("detail").get<std::vector<int>>();
    s.site.occurrence = site.value("occurrence", 0);
    s.site_description = site.value("description", "");
    s.params = params_from_json(j.at("params"));
    return s;
  } catch (const json::exception& e) {
    throw ReplayError(std::string("malformed step: ") + e.what());
  }
}

}  // namespace steptp::tune
