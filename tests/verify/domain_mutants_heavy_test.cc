// The domain mutant battery (domain_mutants.h) at small sizes (about 15 minutes on 2 busy cores).
#include "verify/domain_mutants.h"

TEST(DomainMutants, SmallNoneAcceptedThatDifferWhereTheOriginalIsFinite) {
  auto t = steptp::testing::run_domain_mutants(steptp::workloads::SizeClass::Small);
  EXPECT_EQ(t.accepted, 0);
  EXPECT_GE(t.workloads, 80);
  EXPECT_GE(t.counted, 800);
}
