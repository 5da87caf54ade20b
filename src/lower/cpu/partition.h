// Loop partitioning for the CPU lowering (the idea of Halide's PartitionLoops): a serial loop
// whose body reads under an affine bounds check in its variable — `if_then_else(1<=c+g<129 &
// 1<=d+h<129, A[c+g-1, d+h-1], 0)`, what inlining a zero-padded copy into a convolution leaves —
// is split into a prologue range, an interior where the check provably holds for every value of
// the other loops, and an epilogue. The interior's copy of the body reads A without the
// condition: the lazy `?:` an unsafe if_then_else is lowered to (lower/c_expr.h) keeps GCC's
// vector loop scalar, the plain read vectorizes. The border ranges keep the condition as it was.
//
// Same statements, same iterations in the same order, so the same bits. A nest is split only
// where that is provably so and pays: loops over the written elements, serial or the innermost
// vector loop of a nest without unrolled rows (a register tile stays whole), interiors of at
// least half the loop's range, and no later top-level item accumulating into what the nest
// writes (the accumulation plan, lower/accumulation.h, would no longer see one statement covering
// the whole tensor). Programs with nothing to split come back unchanged, so their generated code
// is byte-identical.
#pragma once

#include <cstdint>
#include <optional>

#include "ir/analysis/affine.h"
#include "ir/leir/ast.h"

namespace steptp::backend::cpu {

struct IterRange {
  int64_t begin = 0, end = 0;  // [begin, end); empty when begin == end
  bool operator==(const IterRange&) const = default;
};

// The iterations i of [start, start + extent) at which lo <= a*i + b (when lo is given) and
// a*i + b < hi (when hi is given) hold for every b in [b.lo, b.hi] (inclusive: the range of the
// rest of the affine form over the other loops). Exact integer arithmetic (ceil/floor division
// for either sign of a); clamped to the loop's range, begin <= end always, empty where nothing
// holds (an extent smaller than the halo).
IterRange always_inside(int64_t a, analysis::Interval b, std::optional<int64_t> lo, std::optional<int64_t> hi,
                        int64_t start, int64_t extent);

// `p` with its loops partitioned as above; `p` itself when nothing is split (`*split`, when given,
// says how many loops were).
leir::Program partition_loops(const leir::Program& p, int* split = nullptr);

}  // namespace steptp::backend::cpu
