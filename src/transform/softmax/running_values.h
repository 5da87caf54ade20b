// The running values of the softmax family (softmax_patterns.h) and the splice that puts a
// rewritten block in place.
//
// 36 keeps the running max as an array R_{s,k} over k plus a read of its last element (that is
// how STRATEGIES.md defines it). The one-pass forms of 40-42 keep their running values per output
// element instead, updated in place along k (made serial), so they need less memory than the
// programs they replace, not more (the public array forms held every prefix). Per iteration:
//   P_s = if_then_else(k-1<0, -inf, M_s)          the previous running max (a per-row buffer)
//   M_s = max(M_s, x)                              the max reduction's own statement
//   S_s = if_then_else(P_s == -inf, 0, S_s * exp(P_s - M_s)) + exp(x - M_s)
// M and S are the original statistics: after the last iteration they hold the reductions' values,
// so every later reader (the normalization, a known output, any other reader) reads them as
// before and no copy nest is needed. LEIR's unset rule (LEIR.md §3) holds: M's statement is an
// accumulation (its unset element reads -inf at k = 0); S's is not, and S's unset element is never
// read because P_s = -inf at k = 0 and if_then_else is lazy; P_s reads M_s only from k = 1 on.
//
// Masked rows (x = -inf) are the trap: exp(-inf - -inf) is NaN. The original program yields NaN
// statistics exactly for rows that are masked everywhere (PyTorch gives NaN there too) and exact
// zeros for masked elements of other rows, so the running sum restarts while everything so far is
// masked (P_s == -inf): it is NaN while the row is all -inf (as the original) and recovers at the
// first finite x.
#pragma once

#include <string>
#include <vector>

#include "transform/softmax/softmax_patterns.h"

namespace steptp::strategies::softmax {

ExprPtr neg_inf();
ExprPtr is_first(const ExprPtr& kv);           // k-1 < 0
ExprPtr ite(ExprPtr c, ExprPtr a, ExprPtr b);  // if_then_else(c, a, b)

// The max nest's loops with the reduction loop made serial (the running values carry along it).
std::vector<Loop> scan_loops(const MaxNest& m);

// Removes `items` (sorted ascending) and inserts `replacement` where the last one was.
Program splice(const Program& p, const std::vector<int>& items, std::vector<leir::Item> replacement);

// ---- 40-42: the one pass, running values per row ---------------------------------------------

// The statistics M_s and S_s updated in place, P_s the running max before this iteration.
struct OnePass {
  ExprPtr kv;      // the reduction variable
  ExprPtr m, s;    // M_s, S_s
  ExprPtr prev;    // P_s
  ExprPtr term;    // exp(x - M_s)
};

OnePass make_one_pass(const MaxNest& m, const SumNest& sum, const std::string& prev);

// A running value carried to this iteration: 0 while everything so far is masked (P_s == -inf,
// always so at k = 0, where `value` is never evaluated), else rescaled to the new max.
ExprPtr carried(const OnePass& o, const ExprPtr& value);

// P_s = if_then_else(k-1<0, -inf, M_s); M_s = max(M_s, x); S_s = carried(S_s) + exp(x - M_s).
// `before_max` statements (flash's previous sum) run after P_s, while M_s and S_s still hold the
// previous iteration's values.
std::vector<Stmt> one_pass(const OnePass& o, const MaxNest& m, std::vector<Stmt> before_max = {});

}  // namespace steptp::strategies::softmax
