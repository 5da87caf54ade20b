// CUDA C backend: every example and corpus program either lowers or is rejected with a reason
// (the test counts both); legality rejections name the limit. nvcc: cuda_nvcc_heavy_test.cc.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "backend/cuda/cuda_codegen.h"
#include "backend_test_util.h"
#include "leir/diagnostic.h"
#include "leir/program_io.h"

namespace steptp::backend {
namespace {

TEST(CudaBackend, SuiteLowersOrIsRejectedWithReason) {
  std::vector<leir::Program> programs;
  for (auto& c : testing::example_cases()) programs.push_back(c.program);
  for (auto& c : testing::corpus_cases()) programs.push_back(c.program);
  for (const char* own : {"offset_reduction", "tiled_bound_cached", "fused_softmax"})
    programs.push_back(leir::read_programs(std::string(STEPTP_SOURCE_DIR) + "/tests/backend/golden/" + own + ".leir").at(0));
  std::string tu(cuda::cuda_prelude());
  int lowered = 0, rejected = 0;
  for (size_t i = 0; i < programs.size(); ++i) {
    try {
      auto src = cuda::generate_cuda(programs[i], fmt::format("steptp_p{}", i));
      tu += fmt::format("// ---- {} ----\n", programs[i].name) + src.code;
      ++lowered;
    } catch (const leir::LeirError& e) {
      std::string why = e.what();
      EXPECT_NE(why.find("cuda target rejects the program: "), std::string::npos) << why;
      EXPECT_GT(why.size(), 60u) << "a rejection must say why: " << why;
      std::cout << "[cuda] rejected " << programs[i].name << ": " << e.message() << "\n";
      ++rejected;
    }
  }
  std::cout << "[cuda] " << lowered << " lowered, " << rejected << " rejected of " << programs.size() << "\n";
  EXPECT_EQ(lowered + rejected, static_cast<int>(programs.size()));
  EXPECT_GT(lowered, 0);
}

TEST(CudaBackend, LegalityRejectionsNameTheLimit) {
  auto too_many = leir::program_from_text(
      "input A: f64[2048]\noutput C: f64[2048]\nB^{2048}_{tx=0}[C^{f64,g}_{tx}=A^{f64,g}_{tx}*2;];", "big.leir");
  auto twice = leir::program_from_text(
      "input A: f64[8,8]\noutput C: f64[8,8]\nB^{8}_{tx=0}B^{8}_{txa=0}[C^{f64,g}_{tx,txa}=A^{f64,g}_{tx,txa};];", "twice.leir");
  auto crossing = leir::program_from_text(
      "input A: f64[8]\noutput C: f64[8]\nB^{8}_{tx=0}[E^{f64,s}_{tx}=A^{f64,g}_{tx};];B^{8}_{tx=0}[C^{f64,g}_{tx}=E^{f64,s}_{tx};];",
      "cross.leir");
  auto shared = leir::program_from_text(
      "input A: f64[8192]\noutput C: f64[8]\nB^{8}_{tx=0}[L^{1024}_{a=0}[E^{f64,s}_{tx,a}=A^{f64,g}_{tx*1024+a};];C^{f64,g}_{tx}=E^{f64,s}_{tx,0};];",
      "shared.leir");
  struct Case {
    leir::Program p;
    std::string needle;
  } cases[] = {{too_many, "2048 threads per block"},
               {twice, "threadIdx.x is bound twice"},
               {crossing, "shared buffer E is used by 2 kernels"},
               {shared, "65536 bytes of shared memory"}};
  for (const auto& c : cases) {
    try {
      cuda::generate_cuda(c.p);
      ADD_FAILURE() << c.p.file << " should be rejected";
    } catch (const leir::LeirError& e) {
      EXPECT_NE(std::string(e.what()).find(c.needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.p.file + ":"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace steptp::backend
