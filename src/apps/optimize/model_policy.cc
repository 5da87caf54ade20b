// The cost-model baseline: the tuner's model (search/tune/cost_model.h) ranks a seeded sample of the
// action menu's (site, parameter choice) pairs by predicted speedup and proposes the best. It
// starts from the analytic prior and is retrained on every candidate the run measures, as
// `steptp tune` retrains between rounds — so it is the tuner's step chooser inside the same
// searches and funnel as the LLM.
#include <algorithm>
#include <numeric>

#include "apps/optimize/policy.h"
#include "transform/sampler.h"
#include "search/tune/cost_model.h"
#include "search/tune/feature_extractor.h"

namespace steptp::optimize {
namespace {

// Actions applied and ranked per ask (the menu of a large program has thousands).
constexpr size_t kRanked = 48;

class ModelPolicy : public Policy {
 public:
  ModelPolicy(uint64_t seed, int threads) : seed_(seed), machine_(tune::this_machine(threads)) {}
  std::string name() const override { return "model"; }

  std::vector<Proposal> propose(const State& s, int n, uint64_t draw, Spend&) override {
    if (dirty_) {
      model_.train(xs_, ys_);
      dirty_ = false;
    }
    auto menu = dataset::action_menu(*s.program);
    std::vector<std::pair<size_t, size_t>> actions;
    for (size_t i = 0; i < menu.size(); ++i)
      for (size_t k = 0; k < menu[i].choices.size(); ++k) actions.push_back({i, k});
    auto pick = strategies::choose_indices(actions.size(), kRanked, base::mix_seed(base::mix_seed(seed_, s.key), draw));
    std::sort(pick.begin(), pick.end());
    std::vector<size_t> applied;
    std::vector<tune::Features> x;
    for (size_t p : pick) {
      const auto& m = menu[actions[p].first];
      try {
        auto prog =
            strategies::apply_step(*s.program, {m.strategy, m.address, m.description, m.choices[actions[p].second]});
        x.push_back(tune::extract_features(prog, machine_));
        applied.push_back(p);
      } catch (const std::exception&) {
        // A choice the strategy refuses is simply not ranked.
      }
    }
    std::vector<double> pred = model_.predict(x);
    std::vector<size_t> order(applied.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pred[a] > pred[b]; });
    std::vector<Proposal> out;
    for (size_t r = 0; r < order.size() && int(out.size()) < n; ++r) {
      const auto& a = actions[applied[order[r]]];
      const auto& m = menu[a.first];
      out.push_back(proposal(action_answer_text(m.strategy, strategies::to_handle(m.address),
                                                  strategies::params_to_json(m.choices[a.second]))));
    }
    return out;
  }

  void observe(const leir::Program& p, double log2_speedup) override {
    xs_.push_back(tune::extract_features(p, machine_));
    ys_.push_back(log2_speedup);
    dirty_ = true;
  }

 private:
  uint64_t seed_;
  tune::Machine machine_;
  tune::CostModel model_;
  std::vector<tune::Features> xs_;
  std::vector<double> ys_;
  bool dirty_ = false;
};

}  // namespace

std::unique_ptr<Policy> make_model_policy(uint64_t seed, int threads) {
  return std::make_unique<ModelPolicy>(seed, threads);
}

}  // namespace steptp::optimize
