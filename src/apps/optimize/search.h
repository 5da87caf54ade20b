// The searches of `steptp optimize`, over a tree of states grown by a policy's proposals. A
// proposal that passes the funnel up to a measurement (apps/optimize/funnel.h) becomes a child state
// (a program reached before, by canonical hash, is not a new state); every proposal, passed or
// not, is recorded as an event (the run directory keeps them; metrics are computed from them).
//
//   chain   follow one proposal at a time (Step-TP's chain): a measured child becomes the state;
//           up to `retries` failed proposals per state, each re-prompted with the failure's
//           feedback in multi-turn mode;
//   greedy  `proposals` per state; move to the fastest child while it is faster;
//   beam    `proposals` per state of the beam; the `beam` fastest children form the next beam;
//   dfs     depth first, children fastest first, to `depth`, at most `nodes` expansions;
//   bfs     level by level (every state of depth d before any of depth d+1), same limits;
//   mcts    UCT selection (mean value + c·sqrt(ln N / n)); progressive widening: a state of n
//           visits may have up to ceil(widening_c · (n+1)^widening_alpha) children, so a new
//           sibling is expanded whenever the limit grows; the value of a new state is its
//           measured speedup over the root, backed up (visit counts and value sums) to the root;
//           a failed expansion backs up 0. One proposal per expansion.
//
// Every search stops when a budget runs out (budget.h). Determinism: each ask of a state draws
// from (seed, state hash, draw number); ties break by node index; with answers replayed from the
// run directory and measurements from the store, the same seed gives the same tree and events.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/leir/ast.h"
#include "apps/optimize/budget.h"
#include "apps/optimize/funnel.h"
#include "apps/optimize/policy.h"

namespace steptp::optimize {

enum class SearchKind { Chain, Greedy, Beam, Dfs, Bfs, Mcts };
SearchKind search_kind_from(const std::string& s);  // throws base::Error (BadRequest)
std::string_view to_string(SearchKind k);

struct TreeSearchOptions {
  SearchKind kind = SearchKind::Greedy;
  int depth = 4;       // steps from the root
  int proposals = 4;   // per expansion (chain, mcts: 1)
  int beam = 2;
  int nodes = 64;      // expansions (dfs, bfs); iterations (mcts)
  int retries = 3;     // failed proposals per state before chain and mcts give up on it
  double uct_c = 1.0;
  double widening_c = 1.0, widening_alpha = 0.5;
  bool multi_turn = true;  // feedback on the previous failed proposal goes into the next prompt
};

struct TreeNode {
  int parent = -1, depth = 0;
  leir::Program program;
  std::string text;
  uint64_t hash = 0;
  nlohmann::json steps = nlohmann::json::array();  // [{"strategy","params"}] from the root
  double speedup = 1;                              // measured, over the root
  std::vector<int> children;
  uint64_t draws = 0;         // asks so far
  int failures = 0;           // proposals that failed or reached a known state
  std::string feedback;       // the last failure, for the next prompt
  int visits = 0;             // mcts
  double value_sum = 0;       // mcts
};

struct Event {
  int node = 0;         // the state asked
  uint64_t draw = 0;
  Proposal proposal;
  Outcome outcome;
  int child = -1;       // the state it became (new or reached before), if measured
  int64_t measured_after = 0, tokens_after = 0, calls_after = 0;  // spend after this event
};

struct TreeSearchResult {
  std::vector<TreeNode> nodes;       // nodes[0] is the root
  std::vector<Event> events;
  std::vector<int> expansion_order;  // states in the order they were asked
  int best = 0;                      // fastest state
  bool budget_exhausted = false;
};

TreeSearchResult run_tree_search(const leir::Program& root, Policy& policy, Funnel& funnel, Spend& spend,
                                 const TreeSearchOptions& o);

}  // namespace steptp::optimize
