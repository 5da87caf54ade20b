// chain, greedy, beam, dfs and bfs (search.h); mcts is in mcts.cc.
#include <algorithm>
#include <deque>
#include <stdexcept>

#include "apps/optimize/tree.h"
#include "base/error.h"

namespace steptp::optimize {

TreeSearchResult run_mcts(Tree& t, const TreeSearchOptions& o);

namespace {

void chain(Tree& t, const TreeSearchOptions& o) {
  int cur = 0;
  while (!t.exhausted() && t.nodes[size_t(cur)].depth < o.depth) {
    auto kids = t.expand(cur, 1);
    if (!kids.empty() && t.nodes[size_t(kids.front())].parent == cur && t.nodes[size_t(kids.front())].draws == 0) {
      cur = kids.front();
      continue;
    }
    if (t.nodes[size_t(cur)].failures >= o.retries) break;
  }
}

void greedy(Tree& t, const TreeSearchOptions& o) {
  int cur = 0;
  while (!t.exhausted() && t.nodes[size_t(cur)].depth < o.depth) {
    auto kids = t.expand(cur, o.proposals);
    t.sort_fastest(kids);
    if (kids.empty() || t.nodes[size_t(kids.front())].speedup <= t.nodes[size_t(cur)].speedup) break;
    cur = kids.front();
  }
}

void beam(Tree& t, const TreeSearchOptions& o) {
  std::vector<int> frontier{0};
  for (int d = 0; d < o.depth && !frontier.empty() && !t.exhausted(); ++d) {
    std::vector<int> next;
    for (int n : frontier) {
      if (t.exhausted()) break;
      for (int k : t.expand(n, o.proposals))
        if (t.nodes[size_t(k)].depth == d + 1 && std::find(next.begin(), next.end(), k) == next.end()) next.push_back(k);
    }
    t.sort_fastest(next);
    if (int(next.size()) > o.beam) next.resize(size_t(o.beam));
    frontier = next;
  }
}

// DFS and BFS differ only in the end of the frontier they take the next state from: the newest
// (depth first; the fastest child on top) or the oldest (level by level).
void frontier_search(Tree& t, const TreeSearchOptions& o, bool depth_first) {
  std::deque<int> frontier{0};
  int expansions = 0;
  while (!frontier.empty() && expansions < o.nodes && !t.exhausted()) {
    int n = depth_first ? frontier.back() : frontier.front();
    if (depth_first) frontier.pop_back();
    else frontier.pop_front();
    if (t.nodes[size_t(n)].depth >= o.depth) continue;
    auto kids = t.expand(n, o.proposals);
    expansions++;
    std::vector<int> fresh;  // new states (a state reached before is not searched again)
    for (int k : kids)
      if (t.nodes[size_t(k)].parent == n && t.nodes[size_t(k)].draws == 0) fresh.push_back(k);
    t.sort_fastest(fresh);
    if (depth_first) std::reverse(fresh.begin(), fresh.end());
    frontier.insert(frontier.end(), fresh.begin(), fresh.end());
  }
}

}  // namespace

SearchKind search_kind_from(const std::string& s) {
  for (SearchKind k : {SearchKind::Chain, SearchKind::Greedy, SearchKind::Beam, SearchKind::Dfs, SearchKind::Bfs,
                       SearchKind::Mcts})
    if (to_string(k) == s) return k;
  throw base::Error(base::ErrorKind::BadRequest,
                    "search must be chain, greedy, beam, dfs, bfs or mcts (got '" + s + "')");
}

std::string_view to_string(SearchKind k) {
  switch (k) {
    case SearchKind::Chain: return "chain";
    case SearchKind::Greedy: return "greedy";
    case SearchKind::Beam: return "beam";
    case SearchKind::Dfs: return "dfs";
    case SearchKind::Bfs: return "bfs";
    case SearchKind::Mcts: return "mcts";
  }
  return "greedy";
}

TreeSearchResult run_tree_search(const leir::Program& root, Policy& policy, Funnel& funnel, Spend& spend,
                                 const TreeSearchOptions& o) {
  Tree t(root, policy, funnel, spend, o);
  switch (o.kind) {
    case SearchKind::Chain: chain(t, o); break;
    case SearchKind::Greedy: greedy(t, o); break;
    case SearchKind::Beam: beam(t, o); break;
    case SearchKind::Dfs: frontier_search(t, o, true); break;
    case SearchKind::Bfs: frontier_search(t, o, false); break;
    case SearchKind::Mcts: return run_mcts(t, o);
  }
  return t.finish();
}

}  // namespace steptp::optimize
