// `steptp optimize` for one program: a policy proposes, the funnel judges, a search grows the
// tree within the budgets; the result is every event (prompt, answer, outcome, spend), the best
// state with its steps, and the program's metrics (apps/optimize/metrics.h).
#pragma once

#include <nlohmann/json.hpp>

#include "ir/leir/ast.h"
#include "apps/optimize/budget.h"
#include "apps/optimize/funnel.h"
#include "apps/optimize/policy.h"
#include "apps/optimize/search.h"

namespace steptp::optimize {

struct OptimizeOptions {
  TreeSearchOptions search;
  Budget budget;  // per program
  FunnelOptions funnel;
};

// {"program", "root_hash", "verification", "best": {"speedup", "steps", "program"}, "nodes",
//  "expansion_order", "budget_exhausted", "spend", "events": [...], "metrics"}
// `wall_s` and the replay counts are the only fields that depend on the clock or the stores.
nlohmann::json optimize_program(const leir::Program& root, Policy& policy, tune::ObservationStore& store,
                                tune::Runner& runner, const OptimizeOptions& o);

nlohmann::json event_json(const Event& e, const std::vector<TreeNode>& nodes);

}  // namespace steptp::optimize
