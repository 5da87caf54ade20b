// The random baseline: a seeded uniform draw of (site, parameter choice) pairs from the action
// menu (apps/dataset/prompt.h) — the menu an LLM prompted in action form sees.
#include <fmt/format.h>

#include "apps/optimize/policy.h"
#include "transform/sampler.h"

namespace steptp::optimize {

std::string action_answer_text(const std::string& strategy, const std::string& handle, const std::string& params_json) {
  return "<answer>" + dataset::action_object(strategy, handle, nlohmann::json::parse(params_json)).dump() + "</answer>";
}

namespace {

class RandomPolicy : public Policy {
 public:
  explicit RandomPolicy(uint64_t seed) : seed_(seed) {}
  std::string name() const override { return "random"; }
  std::vector<Proposal> propose(const State& s, int n, uint64_t draw, Spend&) override {
    auto menu = dataset::action_menu(*s.program);
    std::vector<std::pair<size_t, size_t>> actions;  // (menu entry, choice)
    for (size_t i = 0; i < menu.size(); ++i)
      for (size_t k = 0; k < menu[i].choices.size(); ++k) actions.push_back({i, k});
    auto pick = strategies::choose_indices(actions.size(), size_t(n), base::mix_seed(base::mix_seed(seed_, s.key), draw));
    std::vector<Proposal> out;
    for (size_t p : pick) {
      const auto& m = menu[actions[p].first];
      out.push_back(proposal(action_answer_text(m.strategy, strategies::to_handle(m.address),
                                                  strategies::params_to_json(m.choices[actions[p].second]))));
    }
    return out;
  }

 private:
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<Policy> make_random_policy(uint64_t seed) { return std::make_unique<RandomPolicy>(seed); }

}  // namespace steptp::optimize
