// Trivially applicable strategies and inverse pairs (see shortcut.h).
#include "apps/dataset/shortcut.h"

#include <utility>
#include <vector>

namespace steptp::dataset {

const std::set<std::string>& trivial_strategies() {
  static const std::set<std::string> s = {"loop_unrolling", "loop_parallelization", "loop_vectorization",
                                          "loop_binding", "expression_reorder", "set_storage_scope",
                                          "dead_code_elimination", "loop_split"};
  return s;
}

bool is_trivial_strategy(const std::string& name) { return trivial_strategies().count(name) > 0; }

const std::map<std::string, std::string>& inverses() {
  static const std::map<std::string, std::string> m = [] {
    std::vector<std::pair<std::string, std::string>> pairs = {
        {"operator_fusion", "operator_fission"},
        {"tensor_concat_to_fuse_operators", "tensor_split_to_decouple_operators"},
        {"factorization", "expand_factorization"},
        {"cancellation", "expand_cancellation"},
        {"apart", "together"},
        {"powsimp", "expand_powsimp"},
        {"expand_log", "logsimp"},
        {"collect", "expand_collect"},
        {"loop_split", "loop_fusion"}};
    std::map<std::string, std::string> r;
    for (auto& [a, b] : pairs) {
      r[a] = b;
      r[b] = a;
    }
    return r;
  }();
  return m;
}

}  // namespace steptp::dataset
