#include "transform/trace.h"

#include <algorithm>

#include <fmt/format.h>

namespace steptp::strategies {

using nlohmann::json;

AppliedStep resolve_step(const leir::Program& p, const TraceStep& step) {
  auto r = apply_named(
      p, step.strategy, [&](const std::vector<Site>& sites) { return find_site(sites, step.site); },
      [&](const std::vector<Params>& space) -> std::optional<Params> {
        if (std::find(space.begin(), space.end(), step.params) == space.end()) return std::nullopt;
        return step.params;
      });
  if (auto* a = std::get_if<AppliedStep>(&r)) return std::move(*a);
  const auto& f = std::get<ApplyFailure>(r);
  using Stage = ApplyFailure::Stage;
  switch (f.stage) {
    case Stage::UnknownStrategy: throw ReplayError(fmt::format("unknown strategy '{}'", step.strategy));
    case Stage::NoSite:
      throw ReplayError(fmt::format("{}: no site at path [{}] detail [{}] ({})", step.strategy,
                                    fmt::join(step.site.path, ","), fmt::join(step.site.detail, ","),
                                    step.site_description));
    case Stage::ParamsNotChosen:
      throw ReplayError(fmt::format("{} at {}: parameters {} are not in the site's space", step.strategy,
                                    f.site->description, params_to_json(step.params)));
    case Stage::Refused:
      throw ReplayError(fmt::format("{} at {}: the strategy refused parameters {}: {}", step.strategy,
                                    f.site->description, params_to_json(step.params), f.reason));
  }
  throw ReplayError("unreachable");
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
          {"params", params_json(s.params)}};
}

Params params_from_json(const json& j) {
  if (!j.is_object()) throw ReplayError("params: expected an object");
  Params p;
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

}  // namespace steptp::strategies
