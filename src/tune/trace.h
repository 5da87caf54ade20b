// Steps as a replayable trace. A step is (strategy, stable site address, typed parameters); a
// trace replays from the root to the same program bytes, so the best-found program always comes
// with the path that makes it.
//
// A step's site is a stable site address (strategies/site_address.h), not a position in a
// recomputed site list.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "leir/ast.h"
#include "strategies/site_address.h"
#include "strategies/strategy.h"

namespace steptp::tune {

// Sites are addressed by the strategy layer's stable handles (strategies/site_address.h).
using strategies::address_of;
using strategies::find_site;
using strategies::parse_handle;
using strategies::SiteAddress;
using strategies::to_handle;

struct TraceStep {
  std::string strategy;
  SiteAddress site;
  std::string site_description;  // for people; replay ignores it
  strategies::Params params;
};
using Trace = std::vector<TraceStep>;

// A step that does not replay: unknown strategy, no such site, parameters not in the site's
// space, or the strategy refused them.
struct ReplayError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A step applied: the site it resolved to (and its index in the strategy's site list of `p`) and
// the strategy's candidate (program, exactness, parameters).
struct AppliedStep {
  strategies::Site site;
  size_t site_index = 0;
  strategies::Candidate candidate;
};
AppliedStep resolve_step(const leir::Program& p, const TraceStep& step);  // throws ReplayError
leir::Program apply_step(const leir::Program& p, const TraceStep& step);  // throws ReplayError
leir::Program replay(const leir::Program& root, const Trace& trace);      // throws ReplayError

// {"strategy","site":{"path","detail","occurrence","description"},"params"} and back
// (throws ReplayError naming the field on malformed input).
nlohmann::json step_to_json(const TraceStep& s);
TraceStep step_from_json(const nlohmann::json& j);
strategies::Params params_from_json(const nlohmann::json& j);

}  // namespace steptp::tune
