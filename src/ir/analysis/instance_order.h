// Which iteration orders can make two accesses of one tensor touch the same element.
//
// Fusion and fission of nests with identical loop headers interleave or separate statement
// instances; they are legal when no conflicting pair of instances changes order. For accesses
// `a` (executed at iteration I) and `b` (at iteration J) over the same loops, this answers which
// signs of J - I (lexicographic, outermost loop first) are possible for a common element.
//
// Uniform subscripts (each dimension a constant or `k*v + c` with the same v and k on both
// sides) give exact distances; anything else (coupled variables, gathers, `//`) is treated
// conservatively as "any distance" for the variables it involves.
#pragma once

#include <vector>

#include "ir/leir/ast.h"

namespace steptp::analysis {

struct Directions {
  bool before = false;  // some common element with J < I
  bool same = false;    // ... with J == I
  bool after = false;   // ... with J > I
  bool any() const { return before || same || after; }
};

// `loops` enclose both accesses (outermost first); `a` and `b` access the same tensor.
Directions conflict_directions(const leir::Expr& a, const leir::Expr& b, const std::vector<leir::Loop>& loops);

}  // namespace steptp::analysis
