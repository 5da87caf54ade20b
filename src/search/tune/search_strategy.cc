#include "search/tune/search_strategy.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "ir/leir/canonical.h"
#include "ir/leir/program_io.h"
#include "ir/leir/validate.h"
#include "transform/sampler.h"
#include "transform/schedule_state.h"
#include "search/tune/schedule_rules.h"

namespace steptp::tune {

EvolutionarySearch::EvolutionarySearch(leir::Program root, const Machine& m, EvolutionaryOptions o)
    : machine_(m), o_(o) {
  Node r;
  r.text = leir::program_to_text(root, false);
  r.x = extract_features(root, machine_);
  r.program = std::move(root);
  r.state = Node::State::Measured;  // speedup 1 over itself by definition
  seen_.push_back({leir::program_hash(r.program), 0});
  nodes_.push_back(std::move(r));
  add_rule_chains();
}

void EvolutionarySearch::add_rule_chains() {
  for (auto& chain : schedule_rule_chains(nodes_[0].program, machine_, o_.max_depth)) {
    int at = 0;
    for (auto& rs : chain) {
      int next = add_child(at, std::move(rs.step), std::move(rs.program));
      if (next < 0) break;
      at = next;
    }
    if (at != 0 && std::find(rule_nodes_.begin(), rule_nodes_.end(), at) == rule_nodes_.end()) rule_nodes_.push_back(at);
  }
}

int EvolutionarySearch::add_child(int parent, strategies::TraceStep step, leir::Program p) {
  stats_.candidates++;
  uint64_t h = leir::program_hash(p);
  auto it = std::lower_bound(seen_.begin(), seen_.end(), std::make_pair(h, -1));
  if (it != seen_.end() && it->first == h) {
    stats_.duplicates++;
    return it->second;
  }
  Node n;
  try {
    leir::validate(p);  // throws on an invalid program
    n.x = extract_features(p, machine_);
  } catch (const std::exception&) {
    stats_.invalid++;
    return -1;
  }
  n.trace = nodes_[size_t(parent)].trace;
  n.trace.push_back(std::move(step));
  n.text = leir::program_to_text(p, false);
  n.program = std::move(p);
  n.parent = parent;
  seen_.insert(it, {h, int(nodes_.size())});
  nodes_.push_back(std::move(n));
  return int(nodes_.size()) - 1;
}

void EvolutionarySearch::expand(int node, uint64_t seed) {
  stats_.expanded++;
  nodes_[size_t(node)].expanded = true;
  if (int(nodes_[size_t(node)].trace.size()) >= o_.max_depth) return;
  const strategies::ScheduleState p(nodes_[size_t(node)].program);  // a copy: nodes_ grows below
  const auto& all = strategies::all_strategies();
  for (size_t si = 0; si < all.size(); ++si) {
    const auto& s = *all[si];
    uint64_t sseed = base::mix_seed(seed, si);
    try {
      const auto& sites = s.sites(p);
      for (size_t i : strategies::choose_indices(sites.size(), size_t(o_.sites_per_strategy), sseed)) {
        auto space = s.param_space(p, sites[i]);
        for (size_t k : strategies::choose_indices(space.size(), size_t(o_.params_per_site),
                                                   base::mix_seed(sseed, i + 1))) {
          auto c = s.apply(p, sites[i], space[k]);
          if (!c) continue;
          add_child(node,
                    strategies::TraceStep{std::string(s.name()), strategies::address_of(sites, i),
                                          sites[i].description, space[k]},
                    std::move(c->program));
        }
      }
    } catch (const std::exception&) {
      stats_.invalid++;  // a strategy that cannot analyse this program contributes nothing
    }
  }
}

std::vector<int> EvolutionarySearch::next_round(const CostModel& model, int limit) {
  const uint64_t rseed = base::mix_seed(o_.seed, uint64_t(round_));
  // Predictions of every node (measured ones rank sources by their measurement instead).
  auto predict_all = [&] {
    std::vector<Features> x;
    for (const auto& n : nodes_) x.push_back(n.x);
    return model.predict(x);
  };
  std::vector<double> pred = predict_all();
  // 1. Sources.
  std::vector<int> measured, open;
  for (int i = 0; i < int(nodes_.size()); ++i) {
    if (nodes_[size_t(i)].state == Node::State::Measured) measured.push_back(i);
    else if (nodes_[size_t(i)].state == Node::State::Open && !nodes_[size_t(i)].expanded) open.push_back(i);
  }
  std::stable_sort(measured.begin(), measured.end(),
                   [&](int a, int b) { return nodes_[size_t(a)].log2_speedup > nodes_[size_t(b)].log2_speedup; });
  std::stable_sort(open.begin(), open.end(), [&](int a, int b) { return pred[size_t(a)] > pred[size_t(b)]; });
  std::vector<int> sources(measured.begin(), measured.begin() + std::min<long>(o_.sources, long(measured.size())));
  if (round_ > 0)  // in round 0 only the root exists
    sources.insert(sources.end(), open.begin(), open.begin() + std::min<long>(o_.lookahead, long(open.size())));
  for (int s : sources) expand(s, base::mix_seed(rseed, uint64_t(s)));
  round_++;
  // 2. Selection among open nodes.
  pred = predict_all();
  std::vector<int> pool, chosen;
  int budget = std::min(limit, o_.per_round);
  // The rule chains' programs first, once: in their designed order, or as a pre-trained model
  // (`--cost-model`) ranks them — it ranks held-out workloads' programs at τ ≈ 0.5 (docs/tune.md),
  // where the analytic prior does not beat the designed order and the root's own model has no
  // measurement yet.
  std::vector<int> rules;
  for (int r : rule_nodes_)
    if (nodes_[size_t(r)].state == Node::State::Open) rules.push_back(r);
  if (model.pretrained())
    std::stable_sort(rules.begin(), rules.end(), [&](int a, int b) { return pred[size_t(a)] > pred[size_t(b)]; });
  for (int r : rules)
    if (int(chosen.size()) < budget) chosen.push_back(r);
  for (int i = 0; i < int(nodes_.size()); ++i)
    if (nodes_[size_t(i)].state == Node::State::Open && std::find(chosen.begin(), chosen.end(), i) == chosen.end())
      pool.push_back(i);
  std::stable_sort(pool.begin(), pool.end(), [&](int a, int b) { return pred[size_t(a)] > pred[size_t(b)]; });
  int exploit = std::max(0, budget - o_.explore - int(chosen.size()));
  const long ranked = std::min<long>(exploit, long(pool.size()));
  chosen.insert(chosen.end(), pool.begin(), pool.begin() + ranked);
  // Exploration: seeded picks among the rest. The first `explore_untried` are stratified by
  // strategy: a seeded random candidate of a seeded random strategy this search has not tried
  // yet, one per strategy (uniform picks would mostly take loop steps, which have the most sites
  // and parameters). The others stay uniform over candidates, which is what finds multi-step
  // loop sequences whose first step is not faster.
  std::vector<int> rest(pool.begin() + ranked, pool.end());
  const int room = budget - int(chosen.size());
  std::set<std::string> tried;
  for (const auto& n : nodes_)
    if (n.state != Node::State::Open && !n.trace.empty()) tried.insert(n.trace.back().strategy);
  for (int c : chosen) tried.insert(nodes_[size_t(c)].trace.back().strategy);
  std::map<std::string, std::vector<size_t>> untried;  // strategy -> positions in rest
  for (size_t k = 0; k < rest.size(); ++k)
    if (const auto& s = nodes_[size_t(rest[k])].trace.back().strategy; !tried.count(s)) untried[s].push_back(k);
  // Rarest first: the strategies with the fewest candidates here (an algebraic rewrite with one
  // site before a loop step with dozens of sites and factors), in a seeded order among equals.
  std::vector<const std::vector<size_t>*> by_name, groups;
  for (const auto& [name, positions] : untried) by_name.push_back(&positions);
  for (size_t g : strategies::choose_indices(by_name.size(), by_name.size(), base::mix_seed(rseed, 0xe8)))
    groups.push_back(by_name[g]);
  std::stable_sort(groups.begin(), groups.end(), [](const auto* a, const auto* b) { return a->size() < b->size(); });
  std::vector<char> taken(rest.size(), 0);
  const int stratified = std::min({room, o_.explore_untried, int(groups.size())});
  for (size_t g = 0; g < size_t(std::max(0, stratified)); ++g) {
    const auto& positions = *groups[g];
    const size_t k = positions[strategies::choose_indices(positions.size(), 1, base::mix_seed(rseed, 0xe9 + g))[0]];
    chosen.push_back(rest[k]);
    taken[k] = 1;
  }
  std::vector<int> others;
  for (size_t k = 0; k < rest.size(); ++k)
    if (!taken[k]) others.push_back(rest[k]);
  const int uniform = budget - int(chosen.size());
  for (size_t k : strategies::choose_indices(others.size(), size_t(std::max(0, uniform)), base::mix_seed(rseed, 0xe7)))
    chosen.push_back(others[k]);
  for (int c : chosen) nodes_[size_t(c)].state = Node::State::Selected;
  return chosen;
}

void EvolutionarySearch::set_measured(int node, double log2_speedup) {
  nodes_[size_t(node)].state = Node::State::Measured;
  nodes_[size_t(node)].log2_speedup = log2_speedup;
}

void EvolutionarySearch::set_failed(int node) { nodes_[size_t(node)].state = Node::State::Failed; }

}  // namespace steptp::tune
