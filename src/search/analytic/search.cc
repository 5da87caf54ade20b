#include "search/analytic/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "base/hash.h"
#include "ir/analysis/cost.h"
#include "ir/leir/canonical.h"
#include "transform/sampler.h"
#include "transform/schedule_state.h"

namespace steptp::search {
namespace {

using Clock = std::chrono::steady_clock;
double secs(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }

}  // namespace

Cost model_cost(const leir::Program& p) {
  return {std::round(analysis::analytic_cost(p, analysis::kReferenceMachine) * 10.0) / 10.0, false};
}

double round_ratio(double num, double den) {
  if (den <= 0) return 0;
  return std::round(num / den * 10000.0) / 10000.0;
}

namespace {

struct State {
  leir::Program program;
  std::vector<Step> steps;
  Cost cost;
  int index = 0;
};

struct Scored {
  Transition t;
  std::string key;  // deterministic tie-break
};

}  // namespace

SearchResult run_search(const leir::Program& root, const SearchOptions& opts) {
  auto t0 = Clock::now();
  SearchResult res;
  auto tc = Clock::now();
  Cost root_cost = model_cost(root);
  res.stats.cost_s += secs(tc);
  verify::VerifyOptions vo;
  vo.trials = opts.verify_trials;
  vo.seed = base::mix_seed(opts.seed, 0x7e41f1);
  // Every candidate is verified on the same input sets, so whether a trial is evidence depends
  // on the root alone: a root whose outputs are mostly NaN/inf on all of them would make every
  // candidate inconclusive. Say so once and skip the search instead.
  {
    auto tv = Clock::now();
    verify::VerifyReport self = verify::verify(root, root, vo);
    res.stats.verify_s += secs(tv);
    res.stats.root_finite_share = self.finite_share;
    if (self.verdict == verify::Verdict::Inconclusive) {
      res.stats.root_inconclusive = true;
      res.stats.search_s = secs(t0);
      return res;
    }
  }

  std::set<uint64_t> seen{leir::program_hash(root)};
  std::vector<State> frontier{{root, {}, root_cost, 0}};
  int next_state = 1;
  for (int depth = 1; depth <= opts.depth && !frontier.empty(); ++depth) {
    std::vector<Scored> scored;
    for (const auto& st : frontier) {
      res.stats.states++;
      const strategies::ScheduleState state(st.program);  // analyses shared by every strategy
      const auto& strats = strategies::all_strategies();
      for (size_t si = 0; si < strats.size(); ++si) {
        const auto& S = *strats[si];
        uint64_t sseed = base::mix_seed(base::mix_seed(opts.seed, uint64_t(st.index) * 131 + depth), si);
        std::vector<strategies::Site> sites;
        try {
          sites = S.sites(state);
        } catch (const std::exception&) {
          continue;
        }
        auto site_idx = strategies::choose_indices(sites.size(), size_t(opts.sites_per_strategy), sseed);
        for (size_t k : site_idx) {
          std::vector<strategies::Params> space;
          try {
            space = S.param_space(state, sites[k]);
          } catch (const std::exception&) {
            continue;
          }
          if (space.empty()) space.push_back({});
          auto pidx = strategies::choose_indices(space.size(), size_t(opts.params_per_site),
                                                 base::mix_seed(sseed, k + 1));
          for (size_t pi : pidx) {
            res.stats.candidates++;
            std::optional<strategies::Candidate> c;
            try {
              if (auto a = S.apply(state, sites[k], space[pi])) c = std::move(*a);
            } catch (const std::exception&) {
              c.reset();
            }
            if (!c) continue;
            uint64_t h = leir::program_hash(c->program);
            if (seen.count(h)) {
              res.stats.duplicates++;
              continue;
            }
            auto tv = Clock::now();
            verify::VerifyReport rep;
            try {
              rep = verify::verify(root, c->program, vo);
            } catch (const std::exception& e) {
              rep.equivalent = false;
              rep.error = e.what();
            }
            res.stats.verify_s += secs(tv);
            if (!rep.equivalent) {  // failed or inconclusive: not verified
              res.stats.failed++;
              continue;
            }
            seen.insert(h);
            res.stats.verified++;
            Transition t;
            t.depth = depth;
            t.state = st.index;
            t.steps_so_far = st.steps;
            t.strategy = std::string(S.name());
            t.site_index = int(k);
            t.site = sites[k];
            t.params = c->params;
            t.exactness = c->exactness;
            t.parent = st.program;
            t.result = std::move(c->program);
            t.report = std::move(rep);
            t.cost_root = root_cost;
            t.cost_parent = st.cost;
            tc = Clock::now();
            t.cost_result = model_cost(t.result);
            res.stats.cost_s += secs(tc);
            t.improving = t.cost_result.value > 0 &&
                          t.cost_parent.value / t.cost_result.value >= opts.improve_threshold;
            t.result_hash = h;
            std::string key = fmt::format("{:020.3f}|{:06d}|{:03d}|{:04d}|{}", t.cost_result.value, st.index,
                                          si, k, strategies::params_to_json(t.params));
            scored.push_back({std::move(t), std::move(key)});
          }
        }
      }
    }
    // Choose the states to expand: the best improving candidates (1 for greedy, B for beam).
    std::vector<size_t> order(scored.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scored[a].key < scored[b].key; });
    size_t keep = opts.mode == Mode::Greedy ? 1 : size_t(std::max(1, opts.beam));
    std::vector<State> next;
    for (size_t i : order) {
      if (next.size() >= keep) break;
      auto& t = scored[i].t;
      if (!t.improving) continue;
      t.chosen = true;
      State ns{t.result, t.steps_so_far, t.cost_result, next_state++};
      ns.steps.push_back({t.strategy, t.params});
      next.push_back(std::move(ns));
    }
    for (auto& s : scored) res.transitions.push_back(std::move(s.t));
    frontier = std::move(next);
  }
  res.stats.search_s = secs(t0);
  return res;
}

}  // namespace steptp::search
