// The "differs" stage judges on the canonical form (ir/leir/canonical.h): every result of every
// strategy must still count as a step. Every registered strategy at every site (up to 3
// parameter choices) of the 10 examples and of every 4th workload at tiny size: the result's
// canonical hash differs from its input's — except where the algebraic strategies' whole edit is
// removing an exact identity the workload wrote (elu's `1.0*(...)`, instance_norm's `/1` for a
// 1x1 spatial size): the compiler folds x*1.0 and x/1.0 itself (exact in IEEE arithmetic, no
// -ffast-math needed), so the kernel does not change and earning nothing is right.
#include <gtest/gtest.h>

#include <iostream>
#include <set>

#include "ir/leir/canonical.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "transform/sampler.h"
#include "transform/strategy.h"
#include "front/workloads/workload.h"

namespace steptp::reward {
namespace {

TEST(CanonicalSweep, EveryStrategyResultDiffersFromItsInput) {
  std::vector<leir::Program> starts;
  for (const char* e : {"argmax", "conv2d_pad1", "gelu", "gemm_multiply_leakyrelu", "layernorm", "matmul",
                        "maxpool2d", "nll_loss_mean", "online_softmax", "softmax"})
    starts.push_back(leir::read_programs(std::string(STEPTP_SHARED_DIR) + "/examples/" + e + ".json").at(0));
  const auto& ws = workloads::all_workloads();
  for (size_t i = 0; i < ws.size(); i += 4) starts.push_back(workloads::emit(ws[i], 0, workloads::SizeClass::Tiny));
  // The strategies whose results may be an identity removal (and nothing else).
  const std::set<std::string> simplifiers = {"factorization", "expand_factorization", "cancellation"};
  int checked = 0, same = 0;
  for (const auto& p : starts) {
    const uint64_t h = leir::canonical_hash(p);
    for (const auto* s : strategies::all_strategies()) {
      strategies::SampleOptions o;
      o.seed = 1;
      for (const auto& c : strategies::sample_candidates(*s, p, o)) {
        ++checked;
        if (leir::canonical_hash(c.program) != h) continue;
        ++same;
        if (simplifiers.count(std::string(s->name())) && leir::program_hash(c.program) != leir::program_hash(p))
          continue;
        ADD_FAILURE() << s->name() << " on " << p.name << " " << strategies::params_to_json(c.params)
                      << ": the result is the input up to renaming, operand order and identities\n"
                      << leir::print_body(p.body) << "\n→\n" << leir::print_body(c.program.body);
      }
    }
  }
  std::cout << "strategy results checked: " << checked << " from " << starts.size()
            << " programs, not differing (identity removals): " << same << "\n";
  EXPECT_GT(checked, 10000);
  EXPECT_LE(same, 9) << "more strategy results became no-ops under the canonical form: look at them";
}

}  // namespace
}  // namespace steptp::reward
