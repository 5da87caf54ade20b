// The search tree shared by the searches (searches.cc, mcts.cc): asking the policy at a state,
// passing the proposals through the funnel, recording events and adding the measured children.
#pragma once

#include <map>
#include <vector>

#include "apps/optimize/search.h"

namespace steptp::optimize {

class Tree {
 public:
  Tree(const leir::Program& root, Policy& policy, Funnel& funnel, Spend& spend, const TreeSearchOptions& o);

  // Asks for `n` proposals at `node`; returns the children they reached (new or not, in proposal
  // order, without repeats). Sets exhausted() when a budget stopped it.
  std::vector<int> expand(int node, int n);
  bool exhausted() const { return exhausted_; }
  // Fastest first, ties by index.
  void sort_fastest(std::vector<int>& v) const;

  TreeSearchResult finish();

  std::vector<TreeNode> nodes;

 private:
  Policy& policy_;
  Funnel& funnel_;
  Spend& spend_;
  TreeSearchOptions o_;
  std::vector<Event> events_;
  std::vector<int> order_;
  std::map<uint64_t, int> by_hash_;
  bool exhausted_ = false;
};

}  // namespace steptp::optimize
