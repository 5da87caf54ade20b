// Steps as a replayable trace. A step is (strategy, stable site address, typed parameters); a
// trace replays from the root to the same program bytes, so the best-found program always comes
// with the path that makes it.
//
// A step's site is a stable site address (transform/site_address.h), not a position in a
// recomputed site list.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "ir/leir/ast.h"
#include "transform/apply_named.h"
#include "transform/site_address.h"
#include "transform/strategy.h"

namespace steptp::strategies {

struct TraceStep {
  std::string strategy;
  SiteAddress site;
  std::string site_description;  // for people; replay ignores it
  Params params;
};
using Trace = std::vector<TraceStep>;

// A step that does not replay: unknown strategy, no such site, parameters not in the site's
// space, or the strategy refused them.
struct ReplayError : base::Error {
  explicit ReplayError(const std::string& what) : base::Error(base::ErrorKind::Invalid, what) {}
};

// A step applied (transform/apply_named.h, shared with the reward's action answers).
AppliedStep resolve_step(const leir::Program& p, const TraceStep& step);  // throws ReplayError
leir::Program apply_step(const leir::Program& p, const TraceStep& step);  // throws ReplayError
leir::Program replay(const leir::Program& root, const Trace& trace);      // throws ReplayError

// {"strategy","site":{"path","detail","occurrence","description"},"params"} and back
// (throws ReplayError naming the field on malformed input).
nlohmann::json step_to_json(const TraceStep& s);
TraceStep step_from_json(const nlohmann::json& j);
Params params_from_json(const nlohmann::json& j);

}  // namespace steptp::strategies
