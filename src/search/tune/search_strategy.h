// The tuner's search over strategy steps: evolutionary expansion of step sequences, ranked by
// the cost model, with measurement in the loop (the loop itself is search/tune/tuner.h).
//
// Every program reached is a Node: its trace from the root, the program, its features. A round
//  1. expands sources — the `sources` best measured nodes (re-expanded each round with a fresh
//     seed: new sites and parameters) and the `lookahead` best *unmeasured* nodes by prediction
//     (expanded once): every registered strategy, up to `sites_per_strategy` sites each and
//     `params_per_site` parameter choices per site, drawn from the round's seed. Expanding
//     unmeasured nodes is what reaches enabling sequences (split → vectorize, tile → reorder →
//     parallelize) whose first step is not faster on its own: the model ranks the grandchild,
//     not the step.
//  2. ranks every unmeasured node with the model and picks the `per_round - explore` best plus
//     `explore` seeded random ones (exploration: the model learns where it is wrong), of which
//     `explore_untried` are candidates of strategies the search has not tried yet, the strategies
//     with the fewest candidates first (the rare rewrites, not the loop steps with many sites).
// Before round 0, the schedule rules' chains (search/tune/schedule_rules.h: parallel, vector, both, and
// register tiling of accumulation nests) add the programs a compiler would try first. Their end
// nodes are measured first in round 0, so the search and the model start from them; their
// traces replay like any other.
// Duplicates (same program bytes) are kept once, at the shortest trace found first. Every
// choice comes from the seed and deterministic orders; ties break by node index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/leir/ast.h"
#include "search/tune/cost_model.h"
#include "search/tune/feature_extractor.h"
#include "transform/trace.h"

namespace steptp::tune {

struct EvolutionaryOptions {
  uint64_t seed = 0;
  int per_round = 8;
  int explore = 2;
  // Of the `explore` picks, how many are candidates of strategies the search has not tried yet
  // (one per strategy). `generate --trajectories tune` makes them all so: its records need every
  // applicable strategy's measured contrast; `steptp tune` keeps 0, its exploration uniform
  // (uniform picks are what find split -> vectorize in Tuner.FindsATwoStep...).
  int explore_untried = 0;
  int sources = 3;
  int lookahead = 4;
  int sites_per_strategy = 3;
  int params_per_site = 3;
  int max_depth = 16;
};

struct Node {
  strategies::Trace trace;
  leir::Program program;
  std::string text;  // canonical text (store keys, dedup)
  int parent = -1;
  Features x{};
  enum class State : uint8_t { Open, Selected, Measured, Failed } state = State::Open;
  double log2_speedup = 0;  // measured, vs the root (Measured only)
  bool expanded = false;
};

struct SearchStats {
  int expanded = 0, candidates = 0, duplicates = 0, invalid = 0;
};

class EvolutionarySearch {
 public:
  EvolutionarySearch(leir::Program root, const Machine& m, EvolutionaryOptions o);

  // One round's expansion then selection; returns node indices to measure (at most `limit`),
  // empty when nothing is left to try.
  std::vector<int> next_round(const CostModel& model, int limit);
  // Results of the selected nodes: measured (log2 speedup vs root) or failed.
  void set_measured(int node, double log2_speedup);
  void set_failed(int node);

  const std::vector<Node>& nodes() const { return nodes_; }
  const SearchStats& stats() const { return stats_; }
  int round() const { return round_; }

 private:
  void expand(int node, uint64_t seed);
  // The node of `p` (new, or the existing one with the same bytes); -1 if `p` is invalid.
  int add_child(int parent, strategies::TraceStep step, leir::Program p);
  void add_rule_chains();

  Machine machine_;
  EvolutionaryOptions o_;
  std::vector<Node> nodes_;
  std::vector<std::pair<uint64_t, int>> seen_;  // (program hash, node), sorted: dedup
  std::vector<int> rule_nodes_;                  // ends of the rule chains, measured first
  SearchStats stats_;
  int round_ = 0;
};

}  // namespace steptp::tune
