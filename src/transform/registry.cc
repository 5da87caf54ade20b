// The strategy registry: 43 slots in the order of STRATEGIES.md. Each strategy file registers
// itself into its slot; all_strategies() lists the registered ones in slot order, so a missing
// strategy is simply absent (tests assert that all 43 are present).
#include <array>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "transform/strategy.h"

namespace steptp::strategies {

namespace {

struct Registry {
  std::array<std::unique_ptr<Strategy>, kStrategyCount> slots;
  std::vector<const Strategy*> list;
  bool dirty = true;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

const std::array<std::string_view, kStrategyCount>& strategy_names() {
  static const std::array<std::string_view, kStrategyCount> names = {
      "operator_fusion", "operator_fission", "compute_inline", "expression_splitting",
      "tensor_concat_to_fuse_operators", "tensor_split_to_decouple_operators",
      "common_subexpression_elimination", "dead_code_elimination", "expression_reorder", "loop_reorder",
      "loop_tiling", "loop_split", "loop_fusion", "loop_unrolling", "loop_parallelization",
      "loop_vectorization", "loop_binding", "reduction_factorization", "cache_read_write",
      "layout_transformation", "set_storage_scope", "set_storage_layout", "precompute_indices",
      "factorization", "expand_factorization", "cancellation", "expand_cancellation", "apart", "together",
      "powsimp", "expand_powsimp", "expand_log", "logsimp", "collect", "expand_collect",
      "partially_equivalent_then_correct", "normal_loop_max_to_prefix_max", "exponential_split",
      "multiplicative_split", "additive_split", "normal_loop_summation_on_exp_to_prefix_summation_on_exp",
      "online_softmax", "flashattention_wo_tiling"};
  return names;
}

int strategy_index(std::string_view name) {
  const auto& names = strategy_names();
  for (int i = 0; i < kStrategyCount; ++i)
    if (names[i] == name) return i;
  return -1;
}

std::string_view to_string(Exactness e) {
  switch (e) {
    case Exactness::Exact: return "exact";
    case Exactness::Reassoc: return "reassoc";
    case Exactness::Algebraic: return "algebraic";
  }
  return "?";
}

nlohmann::json params_json(const Params& p) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : p) {
    if (const auto* i = std::get_if<int64_t>(&v)) j[k] = *i;
    else if (const auto* s = std::get_if<std::string>(&v)) j[k] = *s;
    else j[k] = std::get<std::vector<int64_t>>(v);
  }
  return j;
}

std::string params_to_json(const Params& p) { return params_json(p).dump(); }

void register_strategy(int index, std::unique_ptr<Strategy> s) {
  auto& r = registry();
  if (index < 0 || index >= kStrategyCount)
    throw std::logic_error("register_strategy: index " + std::to_string(index) + " out of range");
  if (s->name() != strategy_names()[index])
    throw std::logic_error("register_strategy: slot " + std::to_string(index) + " is " +
                           std::string(strategy_names()[index]) + ", not " + std::string(s->name()));
  if (r.slots[index]) throw std::logic_error("register_strategy: " + std::string(s->name()) + " registered twice");
  r.slots[index] = std::move(s);
  r.dirty = true;
}

const std::vector<const Strategy*>& all_strategies() {
  auto& r = registry();
  if (r.dirty) {
    r.list.clear();
    for (const auto& s : r.slots)
      if (s) r.list.push_back(s.get());
    r.dirty = false;
  }
  return r.list;
}

const Strategy* find_strategy(std::string_view name) {
  int i = strategy_index(name);
  return i < 0 ? nullptr : registry().slots[i].get();
}

}  // namespace steptp::strategies
