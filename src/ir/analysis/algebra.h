// Algebraic normalization: LEIR expressions <-> GiNaC expressions (STRATEGIES.md, strategies 23-34).
//
// What GiNaC sees:
//  * every DISTINCT tensor access is one opaque symbol, subscripts included (A_{i} and A_{i-1}
//    are different symbols; the public engine merged them);
//  * loop variables used as values are symbols;
//  * + - * /, integer and rational powers, exp, log, sqrt, rsqrt and pow are transparent;
//  * everything whose algebra GiNaC must not touch is one opaque symbol for the whole sub-tree:
//    max/min/if_then_else, comparisons, & |, // and %, floor/ceil, erf/tanh/sigmoid/abs/sin/cos/
//    log1p, the `inf` literal, and calls or powers whose arguments are all numbers (`sqrt(2)` stays
//    `sqrt(2)` instead of becoming 2^(1/2) that GiNaC would rationalize);
//  * decimal literals become exact rationals (0.044715 = 8943/200000), so the algebra is exact
//    and converting back gives the same double.
// Symbols are complex GiNaC symbols on purpose: GiNaC then applies no real-only simplification
// (it keeps log(exp(x)) and (x^2)^(1/2)).
//
// Converting back prints in the public sympy-like style through the shared LEIR printer: minimal
// parentheses, `-x` and `a-b` forms, `**` for powers, `sqrt(...)`, `x/(a*b)` for denominators.
// The output does not depend on GiNaC's internal term order (which follows symbol serial numbers
// and hashes, i.e. process history): terms and factors are sorted by their printed form and sums
// that are factors of a product are sign-normalized, so equal inputs give equal bytes.
#pragma once

#include <ginac/ginac.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ir/leir/ast.h"

namespace steptp::analysis {

// One conversion session. GiNaC is not thread-safe: every GiNaC::ex, including the library's
// shared flyweights (_ex0, _ex1, the numeric constants) that every expression touches, is
// reference-counted without atomics, and symbol serial numbers are a global counter. Two
// threads doing any algebra at once would race even on unrelated expressions, so there is no
// finer lock to take: a session holds a process-wide recursive lock for its whole lifetime
// (create every GiNaC::ex inside a session and destroy it before the session ends). Parallel
// algebra runs in processes, one GiNaC context each: `generate --jobs` forks its workers
// (apps/dataset/workers.h), `serve` runs jobs in worker processes, MPI ranks are processes; the lock
// only orders threads of one process (a schedule state shared by threads, the Python module).
// A session covers only the computer-algebra part of a rewrite: the numeric probes and the
// guards run outside it.
class AlgebraSession {
 public:
  AlgebraSession();
  ~AlgebraSession();
  AlgebraSession(const AlgebraSession&) = delete;
  AlgebraSession& operator=(const AlgebraSession&) = delete;

  // LEIR -> GiNaC. Throws std::runtime_error only on inputs GiNaC itself rejects (e.g. a
  // literal division by zero is kept opaque instead, so in practice it does not throw).
  GiNaC::ex to_ginac(const leir::ExprPtr& e);
  // GiNaC -> LEIR. Throws base::Error (Failed) on a construct LEIR cannot express (a symbol of
  // another session, a GiNaC constant such as Pi).
  leir::ExprPtr to_leir(const GiNaC::ex& e) const;

  // The symbol standing for an opaque LEIR sub-tree (the same symbol for structurally equal trees).
  GiNaC::symbol atom(const leir::ExprPtr& e);
  // The LEIR sub-tree behind an atom symbol, or nullptr if `e` is not one.
  leir::ExprPtr atom_expr(const GiNaC::ex& e) const;
  // All atom symbols, in creation (= first occurrence) order.
  std::vector<GiNaC::symbol> atom_symbols() const;

 private:
  struct Atom {
    GiNaC::symbol sym;
    leir::ExprPtr expr;
  };
  std::unique_lock<std::recursive_mutex> lock_;  // declared first: released last
  std::vector<Atom> atoms_;
  std::map<std::string, size_t> by_key_;  // structural key -> index in atoms_
};

// A rational view of a GiNaC expression for normal/numer_denom/factor/quo: every function call
// and every power with a non-integer or symbolic exponent is replaced by a temporary symbol, a
// negative exponent by the reciprocal of one (b^(-1/2) -> 1/T with T = b^(1/2)), so GiNaC's
// rational algorithms never rewrite inside them (normal() would turn sqrt(R+1e-05) into
// sqrt(100000*R+1)/sqrt(100000)). `back` maps the temporaries to what they stand for.
GiNaC::ex rational_view(const GiNaC::ex& e, GiNaC::exmap& back);

// Structural key of an expression: equal for structurally equal trees (source parentheses and
// number spellings ignored; 1e-05 and 1.0e-5 give the same key).
std::string structural_key(const leir::ExprPtr& e);

// Canonical key modulo commutativity and spelling: + and - chains and * and / chains are
// flattened and their operands sorted, x**(1/2) = x**0.5 = sqrt(x), numbers by value. Two
// expressions with the same canonical key are the same computation written differently; a
// rewrite whose result has the input's canonical key only reprints it.
std::string canonical_key(const leir::ExprPtr& e);

// Number of nodes of an expression tree.
size_t expr_size(const leir::ExprPtr& e);

}  // namespace steptp::analysis
