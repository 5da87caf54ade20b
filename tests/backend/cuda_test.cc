// CUDA C backend: every example, corpus and golden program (suite.h core_programs) either lowers or is rejected with a reason
// (the test counts both); legality rejections name the limit. nvcc: cuda_nvcc_heavy_test.cc.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "lower/cuda/cuda_codegen.h"
#include "backend_test_util.h"
#include "cuda_suite.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/program_io.h"

namespace steptp::backend {
namespace {

TEST(CudaBackend, SuiteLowersOrIsRejectedWithReason) {
  auto programs = testing::core_programs();
  auto r = testing::lower_cuda(programs);
  testing::print_cuda_lowering(r, programs.size());
  EXPECT_EQ(r.bad_rejections, std::vector<std::string>{}) << "every rejection must say why";
  EXPECT_EQ(r.lowered + r.rejected, static_cast<int>(programs.size()));
  EXPECT_GT(r.lowered, 0);
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
