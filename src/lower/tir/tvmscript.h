// LEIR -> TVMScript (TVM TIR), LEIR.md §6: one @T.prim_func `main` in an @I.ir_module; known
// tensors as T.Buffer parameters in declaration order; intermediates allocated in the root block
// with their scope; one block per statement with an axis per enclosing loop (spatial when the
// target's subscripts use it, reduce otherwise), reads, writes and T.init for reductions.
//
// Correctness points the public lowering got wrong:
//   * honest loop starts: K^{n}_{i=s} is `range(s, s+n)`; block axes run over [0, n) bound to
//     `i - s`, and the body uses `v_i + s`, so T.init fires at the true first reduce iteration;
//   * T.init only where the element is unset when the nest starts (lower/accumulation.h) and
//     the target subscripts are injective (distinct loop variables plus constants); other
//     first-write cases get an explicit identity nest before the item, already-set elements none;
//   * literals carry the statement's dtype (`T.float32("inf")`, never a float64 inf in f32 code);
//   * a uniform store (ir/leir/uniform_store.h) under a P/V/B loop gets `T.where(loop == start)`:
//     one store, by the first iteration.
// The text depends only on the program: no hash order, pointers or time.
#pragma once

#include <string>

#include "ir/leir/ast.h"

namespace steptp::backend::tir {

enum class TirDialect : uint8_t {
  Current,  // TVM >= 0.22 (PyPI apache-tvm 0.27): T.sblock, T.sblock_alloc_buffer, "tirx.noalias"
  Legacy,   // TVM <= 0.21 (the Step-TP paper): T.block, T.alloc_buffer, "tir.noalias"
};
std::string_view to_string(TirDialect d);  // "sblock", "block"
// Accepts "sblock"/"current"/"new" and "block"/"legacy"/"old".
bool parse_dialect(std::string_view s, TirDialect* out);

struct TirOptions {
  TirDialect dialect = TirDialect::Current;
  // For running on an LLVM (CPU) target: B loops become serial loops and every intermediate is
  // allocated in "global" scope (thread bindings and shared memory need a GPU target).
  bool cpu_compatible = false;
};

// Throws leir::LeirError when the target rejects the program (with the reason).
std::string emit_tvmscript(const leir::Program& p, const TirOptions& o = {});

}  // namespace steptp::backend::tir
