// Static counts of a program: what its statements execute (arithmetic, global bytes, local
// accesses, instances) per top-level nest, its loops and their dependences. The dataset's CoT
// and step effects, the roofline's operation count (search/tune/roofline.h) and the reward's plausibility floor
// (apps/reward/timing.h) all read them, so they are counted once, here.
//
// Flops count the arithmetic of values (subscript arithmetic is addressing, not flops; a
// transcendental call counts 4); bytes the global-scope accesses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/leir/ast.h"
#include "ir/leir/tensors.h"

namespace steptp::analysis {

struct NestFacts {
  std::string header;            // "P^{8}_{a=0} L^{16}_{b=0}"
  std::vector<int64_t> extents;  // loop extents, outermost first
  int64_t iterations = 0;        // product of all loop extents enclosing statements (summed)
  int64_t flops = 0;             // arithmetic operations executed
  int64_t bytes = 0;             // bytes of global-scope accesses executed
  int64_t local_accesses = 0;    // accesses of l/s-scope buffers executed
  int64_t parallel_loops = 0;    // P / B loops in the nest
  int64_t vector_loops = 0;      // V loops
  int64_t carried_loops = 0;     // loops that carry a dependence (check_loop)
  int64_t reduction_loops = 0;   // loops whose only dependence is an accumulation
  // Executed global accesses, and those whose address moves by at most one element per
  // iteration of the statement's innermost loop of extent > 1 (unit stride or invariant): the
  // accesses that stream through cache lines and SIMD lanes.
  int64_t accesses = 0;
  int64_t contiguous_accesses = 0;
};
struct ProgramFacts {
  std::vector<NestFacts> nests;  // top-level items in order
  int64_t flops = 0, bytes = 0, local_accesses = 0, statements = 0;
  int64_t accesses = 0, contiguous_accesses = 0;
};
ProgramFacts program_facts(const leir::Program& p);

// How far the flat (row-major) address of `access` moves per step of loop variable `var`, in
// elements; nullopt when a subscript is not affine (gathers, // and %) or the tensor's rank is
// not known. The stride classes of the cost models (invariant, unit, strided) come from it.
std::optional<int64_t> flat_stride(const leir::Expr& access, const std::string& var, const leir::TensorTable& table);

}  // namespace steptp::analysis
