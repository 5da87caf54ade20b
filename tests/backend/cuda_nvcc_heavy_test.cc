// CUDA C backend, heavy: the lowered code of every accepted example/corpus/golden program,
// concatenated into one translation unit, compiles with one `nvcc -c -arch=sm_90` call
// (about 3 minutes on 2 busy cores). Skipped when nvcc is absent.
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

std::string nvcc_path() {
  for (const char* p : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (std::filesystem::exists(p)) return p;
  return "";
}

TEST(CudaNvcc, SuiteCompilesInOneNvccCall) {
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
  std::string nvcc = nvcc_path();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found: lowering checked, compilation skipped";
  testing::TempDir dir("cuda");
  std::ofstream(dir.path + "/suite.cu") << tu;
  std::string cmd = fmt::format("{} -std=c++17 -arch=sm_90 -c -o {}/suite.o {}/suite.cu > {}/nvcc.log 2>&1", nvcc, dir.path,
                                dir.path, dir.path);
  int rc = std::system(cmd.c_str());
  std::ifstream log(dir.path + "/nvcc.log");
  std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_EQ(rc, 0) << text.substr(0, 6000);
}

}  // namespace
}  // namespace steptp::backend
