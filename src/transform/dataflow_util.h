// Building blocks shared by the dataflow and softmax strategies (operator_fusion ... flash
// attention): recognizing flat top-level nests, comparing loop headers, checking that moving an
// item past others keeps every dependence, substituting loop variables and tensors, and minting
// public-style names. Pure helpers over the AST; the analyses themselves live in src/ir/analysis.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/analysis/structure.h"
#include "ir/leir/ast.h"
#include "transform/loop_sites.h"
#include "transform/strategy.h"

namespace steptp::strategies::dataflow {

// Top-level item `i` as a nest whose body holds statements only; nullptr otherwise.
const leir::Nest* flat_nest(const leir::Program& p, int i);
std::vector<const leir::Stmt*> stmts_of(const leir::Nest& n);

bool same_loop(const leir::Loop& a, const leir::Loop& b);     // kind, extent, var, start
bool same_headers(const leir::Nest& a, const leir::Nest& b);

// Two items conflict when one writes a tensor the other reads or writes (RAW, WAR, WAW).
bool conflict(const analysis::ReadWrite& a, const analysis::ReadWrite& b);
// Item `from` can move to just before item `to` (from < to) without crossing a conflicting item.
bool can_sink(const analysis::UseDef& ud, int from, int to);
// Whether top-level item `item` is the only writer of tensor `t`.
bool single_writer(const analysis::UseDef& ud, const std::string& t, int item);

bool is_output(const leir::Program& p, const std::string& tensor);
bool is_known(const leir::Program& p, const std::string& tensor);

// `count` distinct fresh tensor names in the public order (analysis::NameAllocator).
std::vector<std::string> fresh_tensor_names(const leir::Program& p, int count);

// Simultaneous substitution of loop variables (used as values or in subscripts).
leir::ExprPtr substitute_vars(const leir::ExprPtr& e, const std::map<std::string, leir::ExprPtr>& by);
// Renames tensors in accesses (annotations kept unless `scopes` gives a new scope).
leir::ExprPtr rename_tensors(const leir::ExprPtr& e, const std::map<std::string, std::string>& names);
// Rewrites every read of `tensor` (in rhs and gathers) with fn(access) -> replacement.
leir::ExprPtr map_reads(const leir::ExprPtr& e, const std::string& tensor,
                        const std::function<leir::ExprPtr(const leir::ExprPtr&)>& fn);
leir::Stmt map_stmt_reads(const leir::Stmt& s, const std::string& tensor,
                          const std::function<leir::ExprPtr(const leir::ExprPtr&)>& fn);
// Sets the scope of every occurrence of `tensor` in a body.
std::vector<leir::Item> set_scope(const std::vector<leir::Item>& body, const std::string& tensor, leir::Scope scope);

bool reads_tensor(const leir::ExprPtr& e, const std::string& tensor);
bool contains_gather(const leir::ExprPtr& access);  // an access in one of its subscripts
bool contains(const leir::ExprPtr& e, const leir::Expr& sub);  // structural occurrence

// Access of `tensor` with the dtype/scope of `like`.
leir::ExprPtr access_like(const leir::Expr& like, const std::string& tensor, std::vector<leir::ExprPtr> idx);
leir::ExprPtr plus_const(const leir::ExprPtr& idx, int64_t c);  // flat `v+c` (affine when possible)
std::vector<leir::ExprPtr> var_exprs(const std::vector<std::string>& vars);

// The loops of a nest that must hold statements: `loops`, or the one-iteration bound loop
// B^{1}_{tx} when there are none (a scalar statement is written as such a nest, as the public
// translator does).
std::vector<leir::Loop> loops_or_scalar(std::vector<leir::Loop> loops);
using loops::make_nest;
leir::Stmt make_stmt(leir::ExprPtr lhs, leir::ExprPtr rhs);

// Subscript of a write that visits every element once: each dimension a plain loop variable
// (distinct) or a constant; every loop of extent > 1 among `loops` except `except` appears.
bool plain_injective_lhs(const leir::Expr& lhs, const std::vector<leir::Loop>& loops,
                         const std::set<std::string>& except = {});
// Loop variables used anywhere in `e`.
std::set<std::string> vars_in(const leir::ExprPtr& e);

// Index of site path's first element, with a bounds check.
int site_item(const Site& s, size_t k = 0);

// A site as a dataflow strategy considers it; `refusal` collects why it does not apply while the
// strategy's matchers run (each returns the reason it stops at, "" when it finds nothing wrong).
struct Considered {
  Site site;
  std::string refusal;
};
// A matcher's reason as a survey refusal: none when the matcher found nothing wrong.
inline std::optional<std::string> as_refusal(std::string why) {
  if (why.empty()) return std::nullopt;
  return why;
}

}  // namespace steptp::strategies::dataflow
