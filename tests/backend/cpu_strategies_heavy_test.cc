// CPU backend differential test over the full strategy sweep (heavy): every registered strategy
// at every site of every input of the strategy test set (tiny workloads, the 10 examples, 20
// seeded composites), <= 3 parameter samples per site, as `steptp strategy-sweep` enumerates them.
// Distinct results (by canonical text) are compiled all-f64 in batches of 300 kernels (the
// compiler spreads each batch over its parallel processes) and compared with the reference interpreter on seeded inputs
// (LEIR.md §5 element rule). If the sweep yields more than kCap distinct programs, a seeded
// sample of kCap is checked (printed), which keeps the run near half an hour on 2 cores.
#include <gtest/gtest.h>

#include "cpu_differential.h"
#include "strategy_results.h"

namespace steptp::backend {
namespace {

constexpr uint64_t kSeed = 0;
constexpr size_t kCap = 6000;

TEST(CpuBackendStrategies, FullSweepResultsMatchInterpreterF64) {
  std::vector<std::string> emit_errors;
  auto inputs = testing::strategy_inputs(20, kSeed, &emit_errors);
  EXPECT_EQ(emit_errors, std::vector<std::string>{});
  auto rs = testing::strategy_results(inputs, 0, 3, kSeed);
  std::cout << "[cpu strategies full] " << inputs.size() << " inputs x " << strategies::all_strategies().size()
            << " strategies: " << rs.raw << " results, " << rs.programs.size() << " distinct, " << rs.strategy_errors
            << " strategy errors\n";
  auto programs = std::move(rs.programs);
  if (programs.size() > kCap) {
    std::vector<testing::SuiteProgram> sample;
    auto pick = strategies::choose_indices(programs.size(), kCap, kSeed);
    std::sort(pick.begin(), pick.end());
    for (size_t i : pick) sample.push_back(std::move(programs[i]));
    std::cout << "[cpu strategies full] capped: seeded sample of " << kCap << " of " << programs.size() << "\n";
    programs = std::move(sample);
  }
  testing::TempDir dir("cpu-strategies-full");
  testing::CpuDiffOptions o;
  o.profiles = {interp::InputProfile::Ordinary};
  o.batch = 300;
  auto t = testing::cpu_differential(programs, dir.path, o);
  for (const auto& f : t.failures) ADD_FAILURE() << f.substr(0, 3000);
  std::cout << "[cpu strategies full] " << t.programs << " programs: " << t.matched << " match the interpreter, "
            << t.failures.size() << " differ, " << t.interp_errors << " not comparable (interpreter error); "
            << t.compiler_invocations << " compiler invocations\n";
  EXPECT_EQ(t.matched + t.interp_errors, t.programs);
}

}  // namespace
}  // namespace steptp::backend
