// Monte Carlo tree search over step sequences (search.h): UCT selection, progressive widening,
// values from measured speedups backed up to the root.
#include <cmath>

#include "apps/optimize/tree.h"

namespace steptp::optimize {
namespace {

double uct(const TreeNode& parent, const TreeNode& child, double c) {
  if (child.visits == 0) return INFINITY;
  return child.value_sum / child.visits + c * std::sqrt(std::log(double(parent.visits)) / child.visits);
}

// Progressive widening: children a state of `visits` visits may have.
int widening_limit(int visits, const TreeSearchOptions& o) {
  return std::max(1, int(std::ceil(o.widening_c * std::pow(double(visits + 1), o.widening_alpha))));
}

}  // namespace

TreeSearchResult run_mcts(Tree& t, const TreeSearchOptions& o) {
  for (int iter = 0; iter < o.nodes && !t.exhausted(); ++iter) {
    // Selection: descend while the state is fully widened (or closed) and has children.
    std::vector<int> path{0};
    int n = 0;
    double value = 0;
    for (;;) {
      TreeNode& nd = t.nodes[size_t(n)];
      bool closed = nd.failures >= o.retries || nd.depth >= o.depth;
      if (!closed && int(nd.children.size()) < widening_limit(nd.visits, o)) {
        // Expansion: one proposal for a new sibling.
        size_t before = nd.children.size();
        t.expand(n, 1);
        const TreeNode& after = t.nodes[size_t(n)];
        if (after.children.size() > before) {
          int c = after.children.back();
          path.push_back(c);
          value = t.nodes[size_t(c)].speedup;  // the new state's measured speedup over the root
        }
        break;  // a failed expansion backs up 0
      }
      if (nd.children.empty()) {
        value = nd.speedup;  // a closed leaf: its own value again
        break;
      }
      int best = nd.children.front();
      for (int c : nd.children)
        if (uct(nd, t.nodes[size_t(c)], o.uct_c) > uct(nd, t.nodes[size_t(best)], o.uct_c)) best = c;
      path.push_back(best);
      n = best;
    }
    // Backup.
    for (int k : path) {
      t.nodes[size_t(k)].visits++;
      t.nodes[size_t(k)].value_sum += value;
    }
    // Stop when the whole tree is closed (nothing left to expand anywhere).
    bool open = false;
    for (const TreeNode& nd : t.nodes) open = open || (nd.failures < o.retries && nd.depth < o.depth);
    if (!open) break;
  }
  return t.finish();
}

}  // namespace steptp::optimize
