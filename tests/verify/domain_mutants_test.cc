// The domain mutant battery (domain_mutants.h) at tiny sizes; small sizes: domain_mutants_heavy_test.cc.
#include "verify/domain_mutants.h"

TEST(DomainMutants, TinyNoneAcceptedThatDifferWhereTheOriginalIsFinite) {
  auto t = steptp::testing::run_domain_mutants(steptp::workloads::SizeClass::Tiny);
  EXPECT_EQ(t.accepted, 0);
  EXPECT_GE(t.workloads, 80);
  EXPECT_GE(t.counted, 800);
}
