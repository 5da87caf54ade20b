// CUDA C backend, heavy: every suite program (suite.h: examples, corpus, goldens and every tiny
// workload) lowers or is rejected with a reason (counted, with a table of reasons), and the code
// of every lowered program compiles with `nvcc -c -arch=sm_90`: translation units of 40 programs,
// two nvcc processes at a time (about 10 minutes on 2 busy cores). Skipped when nvcc is absent.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>

#include "backend_test_util.h"
#include "cuda_suite.h"

namespace steptp::backend {
namespace {

std::string nvcc_path() {
  for (const char* p : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (std::filesystem::exists(p)) return p;
  if (std::system("command -v nvcc > /dev/null 2>&1") == 0) return "nvcc";
  return "";
}

TEST(CudaNvcc, WholeSuiteLowersOrIsRejectedAndCompiles) {
  std::vector<std::string> emit_errors;
  auto programs = testing::suite_programs(&emit_errors);
  EXPECT_EQ(emit_errors, std::vector<std::string>{});
  auto r = testing::lower_cuda(programs, 40);
  testing::print_cuda_lowering(r, programs.size());
  for (const auto& why : r.rejections) std::cout << "  rejected " << why.substr(0, 300) << "\n";
  EXPECT_EQ(r.bad_rejections, std::vector<std::string>{}) << "every rejection must say why";
  EXPECT_EQ(r.lowered + r.rejected, static_cast<int>(programs.size()));
  EXPECT_GT(r.lowered, 0);
  std::string nvcc = nvcc_path();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found: lowering checked, compilation skipped";
  testing::TempDir dir("cuda");
  auto compile = [&](size_t u) {
    std::string base = fmt::format("{}/suite{}", dir.path, u);
    std::ofstream(base + ".cu") << r.units[u];
    std::string cmd = fmt::format("{} -std=c++17 -arch=sm_90 -c -o {}.o {}.cu > {}.log 2>&1", nvcc, base, base, base);
    int rc = std::system(cmd.c_str());
    std::ifstream log(base + ".log");
    std::string text((std::istreambuf_iterator<char>(log)), {});
    return rc == 0 ? std::string() : fmt::format("unit {} (rc {}): {}", u, rc, text.substr(0, 6000));
  };
  int compiled_units = 0;
  for (size_t u = 0; u < r.units.size(); u += 2) {
    auto second = u + 1 < r.units.size() ? std::async(std::launch::async, compile, u + 1) : std::future<std::string>();
    auto e1 = compile(u);
    EXPECT_EQ(e1, "");
    compiled_units += e1.empty();
    if (second.valid()) {
      auto e2 = second.get();
      EXPECT_EQ(e2, "");
      compiled_units += e2.empty();
    }
  }
  std::cout << fmt::format("[cuda] nvcc: {} of {} translation units ({} lowered programs) compile\n", compiled_units,
                           r.units.size(), r.lowered);
  EXPECT_EQ(compiled_units, static_cast<int>(r.units.size()));
}

}  // namespace
}  // namespace steptp::backend
