// The non-virtual half of the strategy interface: cached sites and refusals, one-off calls on a
// bare program, and the candidate/refusal builders every strategy uses.
#include "transform/strategy.h"

#include "transform/schedule_state.h"

namespace steptp::strategies {

void Survey::consider(Site site, std::optional<std::string> refusal) {
  if (refusal) refusals.push_back({std::move(site.description), std::move(*refusal)});
  else sites.push_back(std::move(site));
}

std::vector<Params> Strategy::param_space(const ScheduleState&, const Site&) const { return {Params{}}; }

const std::vector<Site>& Strategy::sites(const ScheduleState& st) const { return st.survey(*this).sites; }
const std::vector<Refusal>& Strategy::explain(const ScheduleState& st) const { return st.survey(*this).refusals; }

std::vector<Site> Strategy::sites(const leir::Program& p) const { return sites(ScheduleState(p)); }
std::vector<Params> Strategy::param_space(const leir::Program& p, const Site& s) const {
  return param_space(ScheduleState(p), s);
}
Applied Strategy::apply(const leir::Program& p, const Site& s, const Params& params) const {
  return apply(ScheduleState(p), s, params);
}
std::vector<Refusal> Strategy::explain(const leir::Program& p) const { return explain(ScheduleState(p)); }

Candidate Strategy::candidate(const ScheduleState& st, const Site& s, const Params& params, Exactness ex,
                              leir::Program result) const {
  Candidate c;
  c.strategy = std::string(name());
  // The last site at the same coordinates, as the strategies always numbered it.
  const auto& all = sites(st);
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].path == s.path && all[i].detail == s.detail) c.site = static_cast<int>(i);
  c.params = params;
  c.exactness = ex;
  c.program = std::move(result);
  return c;
}

}  // namespace steptp::strategies
