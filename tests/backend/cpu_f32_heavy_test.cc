// CPU backend, heavy: native f32 builds of every example and corpus program and of every tiny
// workload (all f64 tensors turned into f32) against the reference interpreter. Batched compiles.
#include <gtest/gtest.h>

#include "lower/cpu/cpu_program.h"
#include "backend_test_util.h"
#include "cpu_differential.h"
#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/program_io.h"
#include "front/workloads/workload.h"

namespace steptp::backend {
namespace {

using namespace cpu;
using testing::compare_values;
using testing::TempDir;

// f32 build vs interpreter (float64 arithmetic on the same f32 inputs): each f32 operation
// rounds with eps = 1.2e-7; the programs reduce over at most ~500 terms of magnitude <= ~10
// (seeded inputs in [-1, 1], small weights), so the worst accumulated error is about
// 500 * 1.2e-7 * 10 = 6e-4 in absolute terms for values of order 1-10, below 1e-3.
constexpr double kAtolF32 = 1e-3, kRtolF32 = 1e-3;

// Native f32 builds of the f32 variants: f32 storage and arithmetic.
TEST(CpuBackend, NativeF32BuildsMatchInterpreter) {
  TempDir dir("cpu-f32");
  KernelCompiler cc({.cache_dir = dir.path});
  std::vector<leir::Program> programs;
  for (auto& c : testing::example_cases()) programs.push_back(c.program);
  for (auto& c : testing::corpus_cases()) programs.push_back(c.program);
  for (auto& p : programs) {
    auto t = leir::program_to_text(p);
    for (size_t pos; (pos = t.find("f64")) != std::string::npos;) t.replace(pos, 3, "f32");
    p = leir::program_from_text(t, p.name + ".leir");
  }
  auto built = build_cpu_programs(programs, {}, &cc);
  for (size_t i = 0; i < programs.size(); ++i) {
    ASSERT_TRUE(built[i].program) << programs[i].name << ": " << built[i].error;
    EXPECT_NE(built[i].program->source().code.find("float"), std::string::npos);
    auto inputs = interp::generate_inputs(programs[i], 99 + i);
    auto want = interp::run_program(programs[i], inputs);
    auto got = built[i].program->run(inputs);
    EXPECT_EQ(compare_values(got, want, kAtolF32, kRtolF32), "") << programs[i].name;
  }
}

// Every tiny workload as a native f32 build. Same error bound as above, applied the verifier's
// way (LEIR.md §5): atol = 1e-3 * max|reference| over the output tensor, so outputs of
// magnitude above ~1 (sums over a window, products) get the absolute slack their rounding error
// scales with, while a wrong element (off by a fraction of the tensor's scale) still fails.
TEST(CpuBackend, NativeF32WorkloadsMatchInterpreter) {
  std::vector<std::string> emit_errors;
  auto suite = testing::workload_programs(&emit_errors);
  EXPECT_EQ(emit_errors, std::vector<std::string>{});
  for (auto& s : suite) s.program = workloads::to_f32(s.program);
  TempDir dir("cpu-f32-workloads");
  testing::CpuDiffOptions o;
  o.codegen = {};
  o.batch = 100;
  o.tolerance = [](const leir::Program&) { return verify::Tolerance{kRtolF32, kAtolF32}; };
  auto t = testing::cpu_differential(suite, dir.path, o);
  for (const auto& f : t.failures) ADD_FAILURE() << f;
  EXPECT_EQ(t.interp_errors, 0);
  std::cout << "[cpu f32 workloads] " << t.matched << " of " << t.programs
            << " tiny workloads: native f32 build = interpreter on 2 input profiles\n";
  EXPECT_EQ(t.matched, t.programs);
}

}  // namespace
}  // namespace steptp::backend
