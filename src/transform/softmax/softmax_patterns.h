// The softmax family (STRATEGIES.md): 36 normal_loop_max_to_prefix_max,
// 40 normal_loop_summation_on_exp_to_prefix_summation_on_exp, 41 online_softmax,
// 42 flashattention_wo_tiling.
//
// Patterns are recognized structurally (operators and subscripts, never tensor names):
//   max:        M_s = max(M_s, x)                 over loops s + k (k the only reduction loop)
//   sum of exp: S_s = S_s + exp(x - M_s)          same loops, same x
//   normalize:  Z_{s,k} = exp(x - M_s) / S_s      same loops
//   P@V:        O_o = O_o + Z_{s,k} * V           k the reduction loop of the product
//
// The running values the rewrites build and the masked-row reasoning: running_values.h. One file
// per strategy: prefix_max.cc (36), prefix_sum_on_exp.cc (40), online_softmax.cc (41),
// flash_attention.cc (42); 40 and 41 share one class (prefix_softmax.h).
#pragma once

#include <string>
#include <vector>

#include "ir/analysis/structure.h"
#include "ir/leir/ast.h"
#include "transform/dataflow_util.h"

namespace steptp::strategies::softmax {

// The family's files name these unqualified (this namespace is the family's own).
using namespace dataflow;
using leir::BinaryOp;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Func;
using leir::Loop;
using leir::Nest;
using leir::Program;
using leir::Stmt;

bool is_binary(const Expr& e, BinaryOp op);

// ---- pattern matching -------------------------------------------------------------------------

struct MaxNest {
  int item = -1;
  const Nest* nest = nullptr;
  const Stmt* stmt = nullptr;
  ExprPtr x;     // the reduced value
  size_t k = 0;  // index of the reduction loop in nest->loops
};

// Item `i` as a max reduction M_s = max(M_s, x) over loops s + k: "" when it is, else why not.
// Whether top-level item `i` is a nest of one `max` statement: where the softmax strategies look
// for sites (other items are not worth listing as refused).
bool is_max_nest(const Program& p, int i);

std::string match_max(const Program& p, const analysis::UseDef& ud, int i, MaxNest& m);

struct SumNest {
  int item = -1;
  const Stmt* stmt = nullptr;
};

// The first item after the max nest that reads M must be S_s = S_s + exp(x - M_s).
std::string match_sum(const Program& p, const analysis::UseDef& ud, const MaxNest& m, SumNest& out);

struct NormNest {
  int item = -1;
  const Stmt* stmt = nullptr;
};

// The first reader of S after the sum: Z_{s,k} = exp(x - M_s) / S_s.
std::string match_norm(const Program& p, const analysis::UseDef& ud, const MaxNest& m, const SumNest& s, NormNest& out);

// Chain items may all move down to `to` past the items that are not part of the chain.
bool chain_can_sink(const analysis::UseDef& ud, const std::vector<int>& chain, int to);

}  // namespace steptp::strategies::softmax
