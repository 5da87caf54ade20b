#include "transform/equivalence.h"

#include <fmt/format.h>

#include "ir/verify/verifier.h"

namespace steptp::strategies {

// Delegates to the project verifier (LEIR.md §5: per-dtype tolerances, exact/reassoc/failed).
Equivalence check_equivalent(const leir::Program& a, const leir::Program& b, const EquivalenceOptions& o) {
  verify::VerifyOptions vo;
  vo.trials = o.trials;
  vo.seed = o.seed;
  auto rep = verify::verify(a, b, vo);
  Equivalence r;
  r.ok = rep.equivalent;
  r.exact = rep.verdict == verify::Verdict::Exact;
  r.inconclusive = rep.verdict == verify::Verdict::Inconclusive;
  if (!r.ok) {
    if (!rep.error.empty()) r.message = rep.error;
    if (rep.worst) {
      const auto& w = *rep.worst;
      std::string idx;
      for (auto i : w.index) idx += (idx.empty() ? "" : ",") + std::to_string(i);
      r.message += (r.message.empty() ? "" : "; ") +
                   fmt::format("worst {}[{}]: {} (input) vs {} (result), trial {}, seed {}", w.tensor, idx, w.a, w.b,
                               w.trial, w.seed);
    }
  }
  return r;
}

}  // namespace steptp::strategies
