// Steps as a replayable trace. A step is (strategy, stable site address, typed parameters); a
// trace replays from the root to the same program bytes, so the best-found program always comes
// with the path that makes it.
//
// Site address: the site's structural coordinates as the strategy reports them (Site::path —
// the item indices from the top-level body down to the nest/loop/statement — and Site::detail,
// the strategy's own refinement: loop positions, operand, tensor), plus an occurrence number for
// the rare strategies that report two sites at the same coordinates. It names *where* in the
// program the step applies, not a position in a recomputed site list, so adding or reordering
// the sites a strategy enumerates does not change what an address means. (The strategy layer's
// schedule state — issue 12 — can adopt SiteAddress as its stable handle unchanged.)
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "leir/ast.h"
#include "strategies/strategy.h"

namespace steptp::tune {

struct SiteAddress {
  std::vector<int> path;
  std::vector<int> detail;
  int occurrence = 0;  // among sites with the same path and detail
  bool operator==(const SiteAddress&) const = default;
};

// Address of sites[i].
SiteAddress address_of(const std::vector<strategies::Site>& sites, size_t i);
// Index of the site with that address, if the program still has it.
std::optional<size_t> find_site(const std::vector<strategies::Site>& sites, const SiteAddress& a);

// The address as one short token for prompts and action answers: "@" + path joined by "." +
// ("/" + detail joined by ".", when there is a detail) + ("#" + occurrence, when not 0), e.g.
// "@0/1.2" (item 0, loops 1 and 2) or "@" (the whole program). parse_handle is its inverse
// (nullopt for anything else).
std::string to_handle(const SiteAddress& a);
std::optional<SiteAddress> parse_handle(std::string_view h);

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
