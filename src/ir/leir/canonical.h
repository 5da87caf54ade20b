// The canonical form of a program: what is left of it once edits that cannot change what it
// computes, or how it is lowered, are undone. The reward judges "differs from the parent" on it
// (apps/reward/reward.h), so renaming, commuting or `+0` earns nothing.
//
//   - the program's name and the tensors' aliases are dropped, declarations sorted by name
//     (declaration order and aliases are no part of a program's meaning: verify::signature_difference);
//   - loop variables are renamed in order of binding (_v0, _v1, ...), intermediate tensors (those
//     not in the signature) in order of first appearance (_t0, _t1, ...);
//   - identities that are exact under LEIR's semantics (README "Semantics decisions": arithmetic
//     is float64, stores round) are folded: x+0, 0+x, x-0, x*1, 1*x, x/1 → x. Only these: x*0 is
//     not 0 (NaN, inf), x-x is not 0, and nothing is reassociated (f64 a+(b+c) is not (a+b)+c);
//     x+0 turns -0 into +0, which compares equal everywhere a stored value is compared;
//   - the two operands of each commutative operator are put in a canonical order: +, *, &, |,
//     max, min, and a single ==, != (f64 a+b == b+a exactly; & and | evaluate both sides, max and
//     min propagate NaN from either side), again without flattening chains;
//   - numbers are printed from their value (1 and 1.0 are one literal), source parentheses dropped.
//
// Loop kinds, extents, starts, nest structure, statement order and every other operator stay as
// written: each of them can change the lowering, so every strategy result still differs
// (tests/reward/canonical_sweep_test.cc).
#pragma once

#include <cstdint>

#include "ir/leir/ast.h"

namespace steptp::leir {

// A program's identity as written: FNV-1a 64 (base::kProgramHashBasis) of its signature lines and
// body as printed (the name and aliases are not part of it). Names records, kernels and store
// entries, so its value must never change; canonical_hash below is the one that ignores edits.
uint64_t program_hash(const Program& p);

Program canonical_form(const Program& p);
// FNV-1a 64 of canonical_form's text (signature lines + body): equal for programs that differ
// only by the edits above.
uint64_t canonical_hash(const Program& p);

}  // namespace steptp::leir
