// The public-style examples and a quick slice of the corpus through every dataflow/softmax
// strategy (the full corpus sweep is dataflow_corpus_heavy_test).
#include <filesystem>

#include "strategies/dataflow_check.h"

namespace steptp::dataflow_test {
namespace {

const char* kMine[] = {"operator_fusion", "operator_fission", "compute_inline", "expression_splitting",
                       "tensor_concat_to_fuse_operators", "tensor_split_to_decouple_operators",
                       "common_subexpression_elimination", "dead_code_elimination", "expression_reorder",
                       "partially_equivalent_then_correct", "normal_loop_max_to_prefix_max",
                       "normal_loop_summation_on_exp_to_prefix_summation_on_exp", "online_softmax",
                       "flashattention_wo_tiling"};

TEST(DataflowExamples, EveryApplicableStrategyVerifies) {
  int total = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(STEPTP_SHARED_DIR) + "/examples")) {
    auto p = leir::read_programs(entry.path().string()).at(0);
    for (const char* name : kMine) {
      SCOPED_TRACE(std::string(name) + " on " + entry.path().filename().string());
      total += check_all(strategy(name), p, 2, 2);
    }
  }
  EXPECT_GT(total, 30);
}

TEST(DataflowCorpus, SmallProgramsVerify) {
  auto corpus = corpus_translator();
  int total = 0;
  for (const char* w : {"softmax", "Gemm_Multiply_LeakyReLU", "Matmul_Mean_Softmax", "TripletMarginLoss", "exp_exp",
                        "Conv2d_Min_Add_Multiply", "KLDivLoss"}) {
    const auto* r = corpus_program(corpus, w);
    ASSERT_TRUE(r) << w;
    for (const char* name : kMine) {
      SCOPED_TRACE(std::string(name) + " on " + w);
      total += check_all(strategy(name), r->program, 1, 1);
    }
  }
  EXPECT_GT(total, 40);
}

}  // namespace
}  // namespace steptp::dataflow_test
