// The measured bench regime of dataset v2: roots sized by their naive one-core time
// (apps/dataset/root_sizing.h). Tuned paths ending at their best state: tests/dataset/labels_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/dataset/dataset.h"
#include "dataset/dataset_test_util.h"
#include "apps/dataset/root_sizing.h"
#include "ir/leir/program_io.h"
#include "front/workloads/bench_size.h"
#include "front/workloads/workload.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::dataset {
namespace {

using testing::bench_root;

std::string text(const leir::Program& p) { return leir::program_to_text(p, false); }

// A root below the floor is drawn again with more work until its measured naive time reaches the
// floor; the store makes a rerun size identically; a root whose shapes cannot be drawn again
// (a composite) is left out and listed with its time, never kept below the floor.
TEST(RootSizing, ARootBelowTheFloorIsDrawnLargerAndTheStoreMakesItRepeatable) {
  const fs::path dir = testing::tmpdir("root_sizing_test", "sizing");
  fs::create_directories(dir);
  const std::string store = (dir / "m.sqlite").string();
  // This machine's naive time of the bench draw (a floor it already clears: kept as drawn).
  std::vector<Root> roots{bench_root("matmul_small_k", 5)};
  const std::string drawn = text(roots[0].program);
  json skipped = json::array();
  auto base = size_roots_by_measurement(roots, testing::bench_sizing_options(1e-6), store, &skipped);
  ASSERT_EQ(roots.size(), 1u);
  ASSERT_GT(base[0].naive_ms_one_thread, 0);
  EXPECT_EQ(base[0].bench_doublings, 0);
  EXPECT_EQ(text(roots[0].program), drawn);

  // A floor three times above it: at least two doublings of work, measured above the floor.
  const double floor_ms = 3 * base[0].naive_ms_one_thread;
  auto sized = size_roots_by_measurement(roots, testing::bench_sizing_options(floor_ms), store, &skipped);
  ASSERT_EQ(roots.size(), 1u) << skipped.dump();
  EXPECT_GE(sized[0].bench_doublings, 2);
  EXPECT_GE(sized[0].naive_ms_one_thread, floor_ms);
  EXPECT_NE(text(roots[0].program), drawn);
  EXPECT_GT(workloads::statement_instances(roots[0].program),
            workloads::statement_instances(leir::program_from_text(drawn)));
  const std::string grown = text(roots[0].program);

  // A rerun from the same draw with the same store: the same decisions, no new measurement.
  std::vector<Root> again{bench_root("matmul_small_k", 5)};
  auto resized = size_roots_by_measurement(again, testing::bench_sizing_options(floor_ms), store, &skipped);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(text(again[0].program), grown);
  EXPECT_EQ(resized[0].bench_doublings, sized[0].bench_doublings);
  EXPECT_EQ(resized[0].naive_ms_one_thread, sized[0].naive_ms_one_thread);

  // Not a workload (a composite): cannot be drawn again, so it is left out with its reason.
  std::vector<Root> composite{bench_root("matmul_small_k", 5)};
  composite[0].key = "c/0";
  composite[0].workload = nullptr;
  skipped = json::array();
  size_roots_by_measurement(composite, testing::bench_sizing_options(floor_ms), store, &skipped);
  EXPECT_TRUE(composite.empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0]["key"], "c/0");
  EXPECT_NE(skipped[0]["reason"].get<std::string>().find("below --min-root-ms"), std::string::npos);

  // A ceiling below its stored time: left out with its time and the reason, never shrunk; one
  // above it keeps it as drawn.
  std::vector<Root> capped{bench_root("matmul_small_k", 5)};
  auto with_ceiling = testing::bench_sizing_options(1e-6);
  with_ceiling.max_root_ms = base[0].naive_ms_one_thread / 2;
  skipped = json::array();
  size_roots_by_measurement(capped, with_ceiling, store, &skipped);
  EXPECT_TRUE(capped.empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0]["reason"].get<std::string>().find("above --max-root-ms"), std::string::npos) << skipped;
  capped = {bench_root("matmul_small_k", 5)};
  with_ceiling.max_root_ms = base[0].naive_ms_one_thread * 2;
  EXPECT_EQ(size_roots_by_measurement(capped, with_ceiling, store, nullptr)[0].naive_ms_one_thread,
            base[0].naive_ms_one_thread);
  EXPECT_EQ(text(capped[0].program), drawn);

  // Off (0), unmeasured or not the bench class: nothing is timed or changed.
  std::vector<Root> untouched{bench_root("matmul_small_k", 5)};
  auto off = testing::bench_sizing_options(0);
  EXPECT_EQ(size_roots_by_measurement(untouched, off, store, nullptr)[0].naive_ms_one_thread, 0);
  off = testing::bench_sizing_options(floor_ms);
  off.measured = false;
  EXPECT_EQ(size_roots_by_measurement(untouched, off, store, nullptr)[0].naive_ms_one_thread, 0);
  EXPECT_EQ(text(untouched[0].program), drawn);
  fs::remove_all(dir.parent_path());
}

}  // namespace
}  // namespace steptp::dataset
