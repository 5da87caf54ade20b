// `mpirun -n 2 steptp generate --profile tuned` on the profile's own bench-shaped roots (each
// sized by measurement to at least 1 ms naive on one core; a few minutes on a 2-core machine,
// hence heavy: `ctest --test-dir build -L heavy -R MpiTuned`): two ranks complete, and the
// merged store replays to the same bytes on one process and on two ranks. The tiny-shaped tuned
// runs of mpi_generate_test.cc check the same and the resume after a killed rank in the normal
// suite.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "mpi/mpi_test_util.h"

namespace fs = std::filesystem;

namespace steptp::mpi {
namespace {

using namespace testing;

// Three drawn workloads at the profile's bench shapes, 4 trials each; the headroom screen off so
// that the roots do not depend on that measurement (two ranks need two roots at least).
std::string tuned_bench_args(const fs::path& out, const std::string& extra) {
  return fmt::format("generate --out {} --profile tuned --programs 3 --composites 0 --no-examples --tune-trials 4 "
                     "--min-headroom 0 --eval-fraction 0.4 --token-sample 20 --json {}",
                     out.string(), extra);
}

TEST(MpiTuned, BenchShapedRootsOnTwoRanksCompleteAndTheirStoreReplaysOnOneAndTwoRanks) {
  if (sh("command -v mpirun").code != 0)
    GTEST_SKIP() << "mpirun not installed (scripts/deps-test.sh installs OpenMPI for the tests)";
  const fs::path dir = tmpdir("tuned-bench");
  expect_tuned_run_and_replays(dir, tuned_bench_args);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace steptp::mpi
