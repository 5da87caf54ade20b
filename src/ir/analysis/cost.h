// The one analytic cost of a program (issue 36): a time estimate in arbitrary units, lower is
// faster, from a walk of its statements as the CPU backend lowers them (lower/cpu/codegen.h: the
// outermost run of P/B loops becomes one OpenMP parallel region, a V loop `omp simd`, U loops
// unrolled; GCC auto-vectorizes an innermost loop whose accesses are unit-stride or invariant).
// Per statement instance: arithmetic plus memory accesses priced by stride class, divided by the
// effective vector and parallel width, plus the traffic that misses L2 priced by bandwidth.
//
// It is a function of the program and a CostMachine. The tuner passes the machine it measures on
// (search/tune/machine.h cost_machine): its cold-start prior, a feature of its learned model and
// the times of `--measure model`. The analytic search and the dataset's model costs pass
// kReferenceMachine, so their outputs do not depend on the machine that computes them.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ir/leir/ast.h"

namespace steptp::analysis {

// What the cost sees of a machine.
struct CostMachine {
  int cores = 1;
  int64_t l1_bytes = 32 << 10, l2_bytes = 1 << 20, l3_bytes = 32 << 20;  // data caches
  int64_t f32_lanes = 4;  // f32 lanes one vector operation computes per cycle
};
// The fixed machine of machine-free callers: 16 cores, 128-bit vectors (4 f32 lanes) and the
// default caches — the parallel and vector widths the analytic search's model always capped at.
inline constexpr CostMachine kReferenceMachine{.cores = 16, .f32_lanes = 4};

// One statement as the walk sees it.
struct StmtCost {
  double n = 0;    // instances
  double ops = 0;  // per instance: one for the store, one per operation, 9 for a transcendental call
  int invariant = 0, unit = 0, strided = 0, local = 0;  // accesses by stride class at the innermost loop
  double access_bytes = 0;                              // per instance (global)
  double inner_extent = 1;                              // the innermost loop of extent > 1
  leir::LoopKind inner_kind = leir::LoopKind::Serial;
  bool vectorizable = false;  // GCC vectorizes the inner loop: contiguous accesses, extent >= 4
  double unroll = 1;
  double par_extent = 1;                 // extent of the outermost run of P/B loops
  std::array<double, 3> reuse{1, 1, 1};  // accesses' bytes per footprint byte at L1/L2/L3
  double footprint = 0;                  // bytes touched by the whole nest (outermost level)
  int depth = 0;
};
// Every statement in program order (the tuner's features read the same walk).
std::vector<StmtCost> cost_walk(const leir::Program& p, const CostMachine& m);

// Busy cores of a statement averaged over the waves of its parallel region.
double parallel_width(const StmtCost& s, int cores);

// The estimate of a walk, and of a program.
double cost_estimate(const std::vector<StmtCost>& walk, const CostMachine& m);
double analytic_cost(const leir::Program& p, const CostMachine& m);

}  // namespace steptp::analysis
