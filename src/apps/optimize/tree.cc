#include "apps/optimize/tree.h"

#include <algorithm>
#include <cmath>

#include "ir/leir/canonical.h"
#include "ir/leir/program_io.h"

namespace steptp::optimize {

Tree::Tree(const leir::Program& root, Policy& policy, Funnel& funnel, Spend& spend, const TreeSearchOptions& o)
    : policy_(policy), funnel_(funnel), spend_(spend), o_(o) {
  TreeNode r;
  r.program = root;
  r.text = leir::program_to_text(root);
  r.hash = leir::program_hash(root);
  nodes.push_back(std::move(r));
  by_hash_[nodes[0].hash] = 0;
  policy_.observe(root, 0.0);
}

std::vector<int> Tree::expand(int node, int n) {
  std::vector<int> reached;
  if (spend_.out_of_time() || !spend_.can_measure()) {
    exhausted_ = true;
    return reached;
  }
  order_.push_back(node);
  State s;
  {
    const TreeNode& nd = nodes[size_t(node)];
    s.program = &nd.program;
    s.text = nd.text;
    s.steps_so_far = nd.steps;
    s.feedback = o_.multi_turn ? nd.feedback : "";
    s.speedup_vs_root = nd.speedup;
    s.key = nd.hash;
  }
  const uint64_t draw = nodes[size_t(node)].draws++;
  auto proposals = policy_.propose(s, n, draw, spend_);
  if (proposals.empty()) {
    nodes[size_t(node)].failures++;  // nothing to propose here (or no budget): never asked in vain forever
    exhausted_ = exhausted_ || !spend_.can_call() || spend_.out_of_time();
  }
  for (auto& p : proposals) {
    Event e;
    e.node = node;
    e.draw = draw;
    if (p.error.empty()) {
      const TreeNode& nd = nodes[size_t(node)];
      e.outcome = funnel_.evaluate(nd.program, nd.speedup, p.answer, spend_);
    }
    e.proposal = std::move(p);
    Outcome& oc = e.outcome;
    if (oc.budget_stop) exhausted_ = true;
    if (!e.proposal.error.empty() || (oc.failed && !oc.measured)) {
      TreeNode& nd = nodes[size_t(node)];
      nd.failures++;
      if (!oc.budget_stop)
        nd.feedback = e.proposal.error.empty() ? std::string(reward::to_string(*oc.failed)) + " stage failed: " + oc.reason
                                               : "";
    } else {
      // Measured (faster than the parent or not): a state of the tree.
      auto [it, fresh] = by_hash_.emplace(oc.hash, int(nodes.size()));
      if (fresh) {
        TreeNode c;
        c.parent = node;
        c.depth = nodes[size_t(node)].depth + 1;
        c.program = *oc.program;
        c.text = oc.text;
        c.hash = oc.hash;
        c.steps = nodes[size_t(node)].steps;
        c.steps.push_back(oc.step);
        c.speedup = oc.speedup_vs_root;
        nodes[size_t(node)].children.push_back(int(nodes.size()));
        nodes.push_back(std::move(c));
        if (!oc.cached) policy_.observe(*oc.program, std::log2(std::max(1e-9, oc.speedup_vs_root)));
      } else {
        nodes[size_t(node)].failures++;  // a state known already: no progress (closes a state asked in vain)
      }
      e.child = it->second;
      if (std::find(reached.begin(), reached.end(), e.child) == reached.end()) reached.push_back(e.child);
      nodes[size_t(node)].feedback = oc.failed ? "measured, not faster: " + oc.reason : "";
    }
    e.measured_after = spend_.measured;
    e.tokens_after = spend_.tokens;
    e.calls_after = spend_.calls;
    events_.push_back(std::move(e));
  }
  if (!spend_.can_measure() || spend_.out_of_time()) exhausted_ = true;
  return reached;
}

void Tree::sort_fastest(std::vector<int>& v) const {
  std::stable_sort(v.begin(), v.end(), [&](int a, int b) {
    if (nodes[size_t(a)].speedup != nodes[size_t(b)].speedup) return nodes[size_t(a)].speedup > nodes[size_t(b)].speedup;
    return a < b;
  });
}

TreeSearchResult Tree::finish() {
  TreeSearchResult r;
  std::vector<int> all(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) all[i] = int(i);
  sort_fastest(all);
  r.best = all.front();
  r.nodes = std::move(nodes);
  r.events = std::move(events_);
  r.expansion_order = std::move(order_);
  r.budget_exhausted = exhausted_;
  return r;
}

}  // namespace steptp::optimize
