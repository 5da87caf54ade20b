// Features of a program as the CPU backend lowers it (lower/cpu/codegen.h: the outermost run
// of P/B loops becomes one OpenMP parallel region, a V loop `omp simd`, U loops unrolled; GCC
// auto-vectorizes an innermost loop whose accesses are unit-stride or invariant). One fixed-length
// vector per program, each statement weighted by its share of the executed statement instances:
// loop extents and kinds, the stride class of every access at the innermost loop, the footprint
// of the loops from each level inward against the machine's L1/L2/L3 (reuse per cache level and
// the traffic beyond it), the vectorizable inner extent, the parallel extent against the core
// count, arithmetic intensity — and the analytic cost (ir/analysis/cost.h, on this machine) as one
// more input. The walk is the analytic cost's (analysis::cost_walk).
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "ir/leir/ast.h"
#include "search/tune/machine.h"

namespace steptp::tune {

inline constexpr size_t kFeatureCount = 26;
using Features = std::array<float, kFeatureCount>;

// Names in order (for reports and tests).
const std::array<std::string_view, kFeatureCount>& feature_names();

// Throws leir::LeirError for an invalid program.
Features extract_features(const leir::Program& p, const Machine& m);

}  // namespace steptp::tune
