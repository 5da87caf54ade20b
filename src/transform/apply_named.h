// Applying a strategy named by its user at one of its sites: the one lookup -> survey ->
// parameter check -> apply that the reward's action answers (site by index, parameters as JSON)
// and the tuner's trace replay (site by stable address, typed parameters) share. The caller picks
// the site and the parameters; a failure says at which check the application stopped, with what
// the caller's message names, so each front keeps its own wording and error type.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/leir/ast.h"
#include "transform/strategy.h"

namespace steptp::strategies {

// A step applied: the site it resolved to (and its index in the strategy's site list) and the
// strategy's candidate (program, exactness, parameters).
struct AppliedStep {
  Site site;
  size_t site_index = 0;
  Candidate candidate;
};

struct ApplyFailure {
  enum class Stage { UnknownStrategy, NoSite, ParamsNotChosen, Refused } stage = Stage::UnknownStrategy;
  size_t site_count = 0;     // the strategy's sites in the program
  std::optional<Site> site{};  // ParamsNotChosen, Refused: the site picked
  size_t site_index = 0;     // ParamsNotChosen, Refused: its index in the strategy's sites
  size_t space_size = 0;     // ParamsNotChosen, Refused: the site's parameter choices
  std::string reason{};      // Refused: the strategy's reason
};

// Index of the site to apply at, nullopt when none matches.
using SitePicker = std::function<std::optional<size_t>(const std::vector<Site>& sites)>;
// The parameters to apply with, chosen from the site's space (which may be empty), nullopt when
// none fits.
using ParamPicker = std::function<std::optional<Params>(const std::vector<Params>& space)>;

std::variant<AppliedStep, ApplyFailure> apply_named(const leir::Program& p, const std::string& name,
                                                    const SitePicker& pick_site, const ParamPicker& pick_params);

}  // namespace steptp::strategies
