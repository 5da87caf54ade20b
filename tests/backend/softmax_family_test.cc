// The one-pass softmax strategies (40 summation on exp, 41 online softmax, 42 flash attention)
// through every backend: their results keep running values per row, updated in place along a
// serial loop, and 41 nests the normalization inside the row loops, so each result is compiled
// for the CPU and compared with the interpreter (ordinary and sign-mixed inputs), emitted as
// TVMScript, lowered to CUDA C and, where nvcc is present, compiled for sm_90. Inputs: the softmax
// example and the tiny workloads with a softmax over the last axis, a middle axis (the channel
// softmax of a convolution) and attention.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "lower/tir/tvmscript.h"
#include "cpu_differential.h"
#include "cuda_suite.h"
#include "ir/leir/diagnostic.h"
#include "transform/strategy.h"

namespace steptp::backend {
namespace {

std::vector<testing::SuiteProgram> one_pass_results() {
  std::vector<testing::SuiteProgram> inputs;
  for (auto& c : testing::example_cases())
    if (c.program.name == "softmax") inputs.push_back({"example", std::move(c.program)});
  for (auto& w : testing::workload_programs())
    for (const char* name : {"softmax", "log_softmax", "cross_entropy_loss", "Conv2d_Softmax_Sigmoid", "MHA", "MQA_sum", "GQA"})
      if (w.program.name == name) inputs.push_back(std::move(w));
  EXPECT_EQ(inputs.size(), 8u);
  std::vector<testing::SuiteProgram> out;
  for (const char* name : {"normal_loop_summation_on_exp_to_prefix_summation_on_exp", "online_softmax", "flashattention_wo_tiling"}) {
    const auto* s = strategies::find_strategy(name);
    for (const auto& in : inputs)
      for (const auto& site : s->sites(in.program))
        if (auto c = s->apply(in.program, site, {})) {
          c->program.name = fmt::format("{}.{}.{}", name, in.origin, in.program.name);
          out.push_back({"strategy", std::move(c->program)});
        }
  }
  return out;
}

TEST(SoftmaxFamilyBackends, OnePassResultsRunOnCpuAndLowerToTirAndCuda) {
  auto programs = one_pass_results();
  ASSERT_EQ(programs.size(), 19u);  // 40 and 41 on all 8 inputs, 42 on the three attentions
  testing::TempDir dir("softmax-family");
  auto t = testing::cpu_differential(programs, dir.path);
  for (const auto& f : t.failures) ADD_FAILURE() << f.substr(0, 3000);
  EXPECT_EQ(t.matched, t.programs);
  for (const auto& sp : programs) {
    try {
      EXPECT_NE(tir::emit_tvmscript(sp.program).find("T.prim_func"), std::string::npos) << sp.program.name;
    } catch (const leir::LeirError& e) {
      ADD_FAILURE() << sp.program.name << ": TVMScript emission failed: " << e.message();
    }
  }
  auto cuda = testing::lower_cuda(programs);
  for (const auto& why : cuda.rejections) ADD_FAILURE() << why;
  EXPECT_EQ(cuda.lowered, static_cast<int>(programs.size()));
  std::string nvcc = "/usr/local/cuda/bin/nvcc";
  if (!std::filesystem::exists(nvcc)) GTEST_SKIP() << "nvcc not found: CUDA lowering checked, compilation skipped";
  for (size_t u = 0; u < cuda.units.size(); ++u) {
    std::string base = fmt::format("{}/unit{}", dir.path, u);
    std::ofstream(base + ".cu") << cuda.units[u];
    std::string cmd = fmt::format("{} -std=c++17 -arch=sm_90 -c -o {}.o {}.cu > {}.log 2>&1", nvcc, base, base, base);
    int rc = std::system(cmd.c_str());
    std::ifstream log(base + ".log");
    std::string text((std::istreambuf_iterator<char>(log)), {});
    EXPECT_EQ(rc, 0) << text.substr(0, 6000);
  }
}

}  // namespace
}  // namespace steptp::backend
