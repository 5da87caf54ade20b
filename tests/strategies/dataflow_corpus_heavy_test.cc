// Every dataflow / softmax strategy at every site of every corpus translator program and every
// public example: each result runs and matches its input on seeded inputs.
#include <map>

#include "strategies/dataflow_check.h"

namespace steptp::dataflow_test {
namespace {

const char* kMine[] = {"operator_fusion", "operator_fission", "compute_inline", "expression_splitting",
                       "tensor_concat_to_fuse_operators", "tensor_split_to_decouple_operators",
                       "common_subexpression_elimination", "dead_code_elimination", "expression_reorder",
                       "partially_equivalent_then_correct", "normal_loop_max_to_prefix_max",
                       "normal_loop_summation_on_exp_to_prefix_summation_on_exp", "online_softmax",
                       "flashattention_wo_tiling"};

TEST(DataflowCorpus, EveryResultVerifies) {
  auto corpus = corpus_translator();
  ASSERT_EQ(corpus.size(), 40u);
  std::map<std::string, int> applied;
  for (const auto& r : corpus) {
    for (const char* name : kMine) {
      const auto* s = strategies::find_strategy(name);
      if (!s) continue;
      SCOPED_TRACE(r.program.name);
      int n = check_all(*s, r.program, 2, 1);
      if (n > 0) applied[name]++;
    }
  }
  for (const auto& [k, v] : applied) std::printf("%-60s applies to %d corpus programs\n", k.c_str(), v);
}

}  // namespace
}  // namespace steptp::dataflow_test
