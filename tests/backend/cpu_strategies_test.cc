// CPU backend differential test over strategy results (default-suite sample): the examples, two
// seeded tiny workloads and one composite, each transformed by every registered strategy (one
// seeded result per strategy and input); a seeded sample of 150 distinct results is compiled
// (all-f64, one batch) and compared with the reference interpreter (LEIR.md §5 element rule).
// Sized for CI (compiling ~150 kernels at -O3 is most of its cost). The wider sample (25 inputs,
// 2 results each: 774 distinct programs) cost ~7 CPU-minutes; the full sweep is
// cpu_strategies_heavy_test.cc.
#include <gtest/gtest.h>

#include "cpu_differential.h"
#include "strategy_results.h"

namespace steptp::backend {
namespace {

constexpr uint64_t kSeed = 5;
constexpr size_t kPrograms = 150;

TEST(CpuBackendStrategies, SampledStrategyResultsMatchInterpreterF64) {
  std::vector<testing::SuiteProgram> inputs;
  for (auto& c : testing::example_cases()) inputs.push_back({"example", std::move(c.program)});
  auto wl = testing::workload_programs();
  for (size_t i : strategies::choose_indices(wl.size(), 2, kSeed)) inputs.push_back(wl[i]);
  for (auto& c : testing::composite_programs(1, kSeed)) inputs.push_back(std::move(c));
  auto rs = testing::strategy_results(inputs, 1, 1, kSeed);
  EXPECT_EQ(rs.strategy_errors, 0);
  ASSERT_GT(rs.programs.size(), kPrograms);
  auto pick = strategies::choose_indices(rs.programs.size(), kPrograms, kSeed);
  std::sort(pick.begin(), pick.end());
  std::vector<testing::SuiteProgram> sample;
  for (size_t i : pick) sample.push_back(rs.programs[i]);
  testing::TempDir dir("cpu-strategies");
  auto t = testing::cpu_differential(sample, dir.path, {.profiles = {interp::InputProfile::Ordinary}, .batch = kPrograms});
  for (const auto& f : t.failures) ADD_FAILURE() << f.substr(0, 3000);
  std::cout << "[cpu strategies] " << inputs.size() << " inputs x " << strategies::all_strategies().size()
            << " strategies: " << rs.raw << " results, " << rs.programs.size() << " distinct, " << sample.size() << " checked; " << t.matched
            << " match the interpreter, " << t.failures.size() << " differ, " << t.interp_errors
            << " not comparable (interpreter error); " << t.compiler_invocations << " compiler invocations\n";
  // An input the interpreter itself refuses is the strategy's business (its own tests), not the
  // backend's: counted and printed, not compared.
  EXPECT_EQ(t.matched + t.interp_errors, t.programs);
  EXPECT_GT(t.matched, static_cast<int>(kPrograms) * 9 / 10);
}

}  // namespace
}  // namespace steptp::backend
