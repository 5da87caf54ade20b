// Sharding of roots over ranks (apps/dataset/sharding.h): longest-processing-time-first on the cost
// estimates, deterministic, and the estimate grows with the work a search does.
#include <gtest/gtest.h>

#include "apps/dataset/sharding.h"
#include "front/workloads/workload.h"

namespace steptp::dataset {
namespace {

TEST(Sharding, LongestFirstToTheLeastLoadedRank) {
  // By hand: 5 -> r0 (5), 4 -> r1 (4), 3 -> r1 (7), 3 -> r0 (8), 2 -> r1 (9), 1 -> r0 (9).
  EXPECT_EQ(shard_by_cost({3, 5, 1, 4, 3, 2}, 2), (std::vector<int>{1, 0, 0, 1, 0, 1}));
  // Ties go to the lower index first and the lower rank first.
  EXPECT_EQ(shard_by_cost({7, 7, 7, 7}, 3), (std::vector<int>{0, 1, 2, 0}));
  EXPECT_EQ(shard_by_cost({}, 4), std::vector<int>{});
  EXPECT_EQ(shard_by_cost({9, 1}, 1), (std::vector<int>{0, 0}));
  // As lists: each part's items in the order assigned, longest first.
  EXPECT_EQ(shard_lists_by_cost({3, 5, 1, 4, 3, 2}, 2),
            (std::vector<std::vector<size_t>>{{1, 4, 2}, {3, 0, 5}}));
  EXPECT_EQ(shard_lists_by_cost({}, 2), (std::vector<std::vector<size_t>>{{}, {}}));
}

TEST(Sharding, RootCostGrowsWithTheProgram) {
  const auto* w = workloads::find_workload("square_matmul");
  ASSERT_NE(w, nullptr);
  uint64_t tiny = root_cost(workloads::emit(*w, 1, workloads::SizeClass::Tiny));
  uint64_t small = root_cost(workloads::emit(*w, 1, workloads::SizeClass::Small));
  EXPECT_GT(tiny, 0u);
  EXPECT_GT(small, tiny);
  EXPECT_EQ(tiny, root_cost(workloads::emit(*w, 1, workloads::SizeClass::Tiny)));
}

TEST(Sharding, TunedRootCostFollowsTheTrialsAndTheNaiveTime) {
  const auto* w = workloads::find_workload("square_matmul");
  ASSERT_NE(w, nullptr);
  const leir::Program tiny = workloads::emit(*w, 1, workloads::SizeClass::Tiny);
  const leir::Program small = workloads::emit(*w, 1, workloads::SizeClass::Small);
  // Each trial costs a fixed part and a part that grows with the measured naive time.
  const uint64_t base = tuned_root_cost(tiny, 1.0, 16);
  EXPECT_GT(base, 0u);
  EXPECT_GT(tuned_root_cost(tiny, 10.0, 16), base);
  EXPECT_EQ(tuned_root_cost(tiny, 1.0, 32), 2 * base);
  // A measured time is the estimate whatever the program; unmeasured (0), the program's work stands
  // in for it, so a larger program still costs more.
  EXPECT_EQ(tuned_root_cost(small, 1.0, 16), base);
  EXPECT_GT(tuned_root_cost(small, 0, 16), tuned_root_cost(tiny, 0, 16));
}

}  // namespace
}  // namespace steptp::dataset
