// Heavy sweep (ctest -L heavy): every workload at `small` size, one seed of ordinary inputs,
// against PyTorch with the same tolerance as the tiny test (torch_agreement_test.cc). Small
// shapes reach reductions of hundreds to thousands of terms, windows of 3-7 taps with real
// strides and paddings, and longer scans.
#include <gtest/gtest.h>

#include "torch_harness.h"

namespace steptp::workloads {
namespace {

TEST(TorchAgreementHeavy, EveryWorkloadSmallOneSeed) {
  std::vector<std::pair<const Workload*, harness::Trial>> runs;
  for (const auto& w : all_workloads()) runs.push_back({&w, {11, interp::InputProfile::Ordinary}});
  int compared = harness::check_workloads(runs, SizeClass::Small, "workloads_torch_small");
  EXPECT_GE(compared, static_cast<int>(runs.size()));
}

}  // namespace
}  // namespace steptp::workloads
