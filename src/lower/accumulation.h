// Accumulations and where their identity comes from (LEIR.md §3), shared by every backend.
//
// LEIR reads an unset element of an accumulation (`X=X+e`, `X=max(X,e)`, ...) as the identity of
// its operator. Compiled code has no per-element "unset" state, so each backend needs to know,
// per accumulation statement, whether the elements it writes can be unset when the enclosing
// top-level item starts:
//   * Set:       every element was fully written by an earlier top-level item (`C=C+bias` after
//                the GEMM that wrote all of C): read the element as is.
//   * InitPass:  nothing wrote the tensor before this item: write the identity over exactly the
//                region the statement writes, before the item runs. Plain writes inside the item
//                then overwrite it, accumulations combine with it — the element-wise rule holds.
//   * Tracked:   anything else (partial earlier writes, mixed identities in one item): keep a
//                per-element "set" mask at run time. Always correct, slower; CPU only.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/leir/ast.h"
#include "ir/leir/tensors.h"

namespace steptp::backend {

enum class AccumOp : uint8_t { Add, Mul, Max, Min };

// The operator if `s` is an accumulation (LEIR.md §3 definition), else nullopt.
std::optional<AccumOp> accumulation_op(const leir::Stmt& s);
// 0, 1, -inf, +inf.
double identity_value(AccumOp op);

// `rhs` without the self-read: for Add the signed sum of the other terms, for Mul the product of
// the other factors, for Max/Min the other argument. (Used by atomic lowerings.)
leir::ExprPtr accumulation_rest(const leir::Stmt& s, AccumOp op);

enum class InitMode : uint8_t { Set, InitPass, Tracked };

struct StmtSite {
  const leir::Stmt* stmt = nullptr;
  std::vector<const leir::Loop*> loops;  // enclosing loops, outermost first
  int item = 0;                          // index of the top-level item holding it
};

struct InitPlan {
  std::map<const leir::Stmt*, AccumOp> accum;   // every accumulation statement
  std::map<const leir::Stmt*, InitMode> mode;    // for every accumulation statement
  std::set<std::string> tracked;                 // tensors that need a run-time set mask
  // Per top-level item: accumulation statements whose written region gets the identity before
  // the item runs (program order).
  std::vector<std::vector<StmtSite>> init_before;
  std::vector<StmtSite> stmts;  // every statement in program order
};

// Pointers refer into `p`, which must outlive the plan and stay unmodified.
InitPlan plan_inits(const leir::Program& p, const leir::TensorTable& table);

// The loops an identity-init pass for the accumulation at `site` runs over (outermost first): the
// enclosing loops its subscripts mention, or every enclosing loop when a subscript gathers (reads
// a tensor), since then any loop may move the written element. Every emitter (CPU, CUDA, TIR)
// initialises over exactly these loops, run serially, so each written element gets the identity
// once whatever the original schedule.
struct InitLoops {
  std::vector<const leir::Loop*> loops;
  bool gather = false;  // a subscript reads a tensor
};
InitLoops init_loops(const StmtSite& site);

// Whether the subscripts of `lhs` mention loop variable `var` (syntactically).
bool mentions_var(const leir::ExprPtr& e, const std::string& var);
// Whether the expression reads any tensor (a data-dependent gather when inside a subscript).
bool reads_tensor(const leir::ExprPtr& e);

}  // namespace steptp::backend
