// Rewrites shared by loop transformations: substituting a loop variable by an affine form while
// keeping subscripts flat (`tx` -> `o*16+i` turns `tx*4+f` into `o*64+i*4+f`, never
// `(o*16+i)*4+f`), and retargeting accesses of a tensor.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/analysis/affine.h"
#include "ir/leir/ast.h"

namespace steptp::analysis {

// Replaces variable `var` by `by` everywhere in `e`. Affine subscripts that use `var` are
// re-emitted flat; other uses (values, non-affine subscripts) get `to_expr(by)`.
leir::ExprPtr substitute_var(const leir::ExprPtr& e, const std::string& var, const Affine& by);
std::vector<leir::Item> substitute_var(const std::vector<leir::Item>& body, const std::string& var,
                                       const Affine& by);

// Rewrites every access of `tensor` (reads and writes, including inside subscripts) with `fn`,
// whose argument already has rewritten subscripts.
std::vector<leir::Item> rewrite_accesses(const std::vector<leir::Item>& body, const std::string& tensor,
                                         const std::function<leir::ExprPtr(const leir::ExprPtr&)>& fn);
leir::ExprPtr rewrite_accesses(const leir::ExprPtr& e, const std::string& tensor,
                               const std::function<leir::ExprPtr(const leir::ExprPtr&)>& fn);

// Same access with other name/scope/indices.
leir::ExprPtr with_indices(const leir::ExprPtr& access, std::vector<leir::ExprPtr> indices);
leir::ExprPtr renamed(const leir::ExprPtr& access, const std::string& tensor, leir::Scope scope);

// Whether `var` occurs in the expression / body.
bool uses_var(const leir::ExprPtr& e, const std::string& var);
bool uses_var(const std::vector<leir::Item>& body, const std::string& var);

}  // namespace steptp::analysis
