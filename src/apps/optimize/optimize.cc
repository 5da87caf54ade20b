#include "apps/optimize/optimize.h"

#include "base/hash.h"
#include "ir/leir/program_io.h"
#include "apps/optimize/metrics.h"

namespace steptp::optimize {

using nlohmann::json;

json event_json(const Event& e, const std::vector<TreeNode>& nodes) {
  const Proposal& p = e.proposal;
  json j = {{"node", e.node},
            {"depth", nodes[size_t(e.node)].depth},
            {"draw", e.draw},
            {"call", p.call},
            {"error", p.error},
            {"answer", p.answer},
            {"prompt_tokens", p.prompt_tokens},
            {"completion_tokens", p.completion_tokens},
            {"latency_s", p.latency_s},
            {"replayed", p.replayed},
            {"outcome", to_json(e.outcome)},
            {"child", e.child},
            {"measured_after", e.measured_after},
            {"tokens_after", e.tokens_after},
            {"calls_after", e.calls_after}};
  if (!p.request.is_null()) j["request"] = p.request;
  return j;
}

json optimize_program(const leir::Program& root, Policy& policy, tune::ObservationStore& store, tune::Runner& runner,
                      const OptimizeOptions& o) {
  Spend spend(o.budget);
  Funnel funnel(root, store, runner, o.funnel);
  TreeSearchResult r = run_tree_search(root, policy, funnel, spend, o.search);
  json events = json::array();
  for (const auto& e : r.events) events.push_back(event_json(e, r.nodes));
  json nodes = json::array();
  for (const auto& n : r.nodes)
    nodes.push_back({{"parent", n.parent}, {"depth", n.depth}, {"hash", base::hex64(n.hash)}, {"speedup", n.speedup},
                     {"children", n.children}, {"visits", n.visits}, {"value_sum", n.value_sum},
                     {"failures", n.failures}, {"draws", n.draws}});
  const TreeNode& best = r.nodes[size_t(r.best)];
  json m = program_metrics(events);
  return {{"program", root.name},
          {"root_hash", base::hex64(r.nodes[0].hash)},
          {"verification", funnel.verification_method()},
          {"best", {{"speedup", best.speedup}, {"steps", best.steps}, {"program", best.text}, {"node", r.best}}},
          {"nodes", nodes},
          {"expansion_order", r.expansion_order},
          {"budget_exhausted", r.budget_exhausted},
          {"spend", {{"calls", spend.calls}, {"completion_tokens", spend.tokens}, {"prompt_tokens", spend.prompt_tokens},
                     {"measured", spend.measured}}},
          {"wall_s", spend.elapsed_s()},
          {"events", events},
          {"metrics", m}};
}

}  // namespace steptp::optimize
