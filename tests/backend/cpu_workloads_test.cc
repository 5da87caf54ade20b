// CPU backend differential test over the workload suite: every registered workload at tiny size,
// compiled as an all-f64 build (one batch; the compiler splits it over its parallel processes), against the reference
// interpreter on two seeded input profiles, with the verifier's element rule (LEIR.md §5).
#include <gtest/gtest.h>

#include "cpu_differential.h"

namespace steptp::backend {
namespace {

TEST(CpuBackendSuite, EveryWorkloadMatchesInterpreterF64) {
  std::vector<std::string> emit_errors;
  auto suite = testing::workload_programs(&emit_errors);
  EXPECT_EQ(emit_errors, std::vector<std::string>{});
  ASSERT_GT(suite.size(), 100u);
  testing::TempDir dir("cpu-workloads");
  auto t = testing::cpu_differential(suite, dir.path, {.batch = suite.size()});
  for (const auto& f : t.failures) ADD_FAILURE() << f;
  EXPECT_EQ(t.interp_errors, 0);
  std::cout << "[cpu workloads] " << t.matched << " of " << t.programs
            << " tiny workloads: compiled f64 = interpreter on 2 input profiles (" << t.compiler_invocations
            << " compiler invocations)\n";
  EXPECT_EQ(t.matched, t.programs);
}

}  // namespace
}  // namespace steptp::backend
