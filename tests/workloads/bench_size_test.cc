// The `bench` size class (front/workloads/bench_size.h): every workload has bench shapes inside the
// window, within its constraints, the same for the same seed.
#include <gtest/gtest.h>

#include "base/error.h"
#include "ir/leir/program_io.h"
#include "front/workloads/bench_size.h"
#include "front/workloads/workload.h"

namespace steptp::workloads {
namespace {

// A fixed sample (every 5th workload of the sorted suite: every family of both levels) keeps the
// default suite fast (drawing all of them takes minutes on 2 cores).
TEST(BenchSize, WorkloadsFitTheWindowDeterministically) {
  std::vector<std::string> none;
  const auto& all = all_workloads();
  for (size_t i = 0; i < all.size(); i += 5) {
    const auto& w = all[i];
    SCOPED_TRACE(w.name);
    HyperValues hv;
    try {
      hv = sample_hyper(w, 1, SizeClass::Bench);
    } catch (const base::Error&) {  // no shapes of this class (BadRequest)
      none.push_back(w.name);
      continue;
    }
    EXPECT_EQ(check_hyper(w, hv), "");
    leir::Program p = emit(w, hv);
    int64_t n = statement_instances(p);
    EXPECT_GE(n, kBenchMinInstances);
    EXPECT_LE(n, kBenchMaxInstances);
    EXPECT_EQ(bench_window_miss(p), "");
    EXPECT_EQ(sample_hyper(w, 1, SizeClass::Bench), hv);
  }
  // Only workloads whose work is O(batch) with batch <= 4096 cannot reach the window.
  EXPECT_LE(none.size(), 2u) << ::testing::PrintToString(none);
}

TEST(BenchSize, CountsStatementInstances) {
  auto p = leir::program_from_text(
      "input A: f64[4,8]\noutput C: f64[4]\n"
      "B^{4}_{tx=0}[C^{f64,g}_{tx}=0;L^{8}_{a=0}[C^{f64,g}_{tx}=C^{f64,g}_{tx}+A^{f64,g}_{tx,a};];];",
      "t.leir");
  EXPECT_EQ(statement_instances(p), 4 + 32);
  EXPECT_NE(bench_window_miss(p).find("outside the bench window"), std::string::npos);
  EXPECT_EQ(parse_size_class("bench"), SizeClass::Bench);
  EXPECT_EQ(to_string(SizeClass::Bench), "bench");
}

}  // namespace
}  // namespace steptp::workloads
