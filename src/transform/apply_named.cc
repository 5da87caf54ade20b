#include "transform/apply_named.h"

#include "transform/schedule_state.h"

namespace steptp::strategies {

std::variant<AppliedStep, ApplyFailure> apply_named(const leir::Program& p, const std::string& name,
                                                    const SitePicker& pick_site, const ParamPicker& pick_params) {
  using Stage = ApplyFailure::Stage;
  const Strategy* s = find_strategy(name);
  if (!s) return ApplyFailure{.stage = Stage::UnknownStrategy};
  const ScheduleState st(p);
  const auto& sites = s->sites(st);
  std::optional<size_t> i = pick_site(sites);
  if (!i || *i >= sites.size()) return ApplyFailure{.stage = Stage::NoSite, .site_count = sites.size()};
  const Site& site = sites[*i];
  const auto space = s->param_space(st, site);
  std::optional<Params> params = pick_params(space);
  if (!params)
    return ApplyFailure{.stage = Stage::ParamsNotChosen, .site_count = sites.size(), .site = site, .site_index = *i,
                        .space_size = space.size()};
  auto c = s->apply(st, site, *params);
  if (!c)
    return ApplyFailure{.stage = Stage::Refused, .site_count = sites.size(), .site = site, .site_index = *i,
                        .space_size = space.size(), .reason = c.refusal().reason};
  return AppliedStep{site, *i, std::move(*c)};
}

}  // namespace steptp::strategies
