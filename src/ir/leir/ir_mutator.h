// Halide-style traversal helpers over LEIR expressions and bodies.
//
// ExprMutator rebuilds only the nodes whose children changed, so untouched subtrees stay shared.
#pragma once

#include <functional>

#include "ir/leir/ast.h"

namespace steptp::leir {

class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  // Dispatches on kind; default implementations rebuild the node from mutated children.
  virtual ExprPtr mutate(const ExprPtr& e);

 protected:
  virtual ExprPtr visit_number(const ExprPtr& e) { return e; }
  virtual ExprPtr visit_var(const ExprPtr& e) { return e; }
  virtual ExprPtr visit_access(const ExprPtr& e) { return mutate_children(e); }
  virtual ExprPtr visit_unary(const ExprPtr& e) { return mutate_children(e); }
  virtual ExprPtr visit_binary(const ExprPtr& e) { return mutate_children(e); }
  virtual ExprPtr visit_compare(const ExprPtr& e) { return mutate_children(e); }
  virtual ExprPtr visit_call(const ExprPtr& e) { return mutate_children(e); }
  // Mutates every child; returns `e` itself when none changed.
  ExprPtr mutate_children(const ExprPtr& e);
};

// Pre-order walk of an expression tree (node before its children).
void for_each_expr(const ExprPtr& e, const std::function<void(const Expr&)>& fn);

// Calls fn(stmt, enclosing loops outermost first) for every statement of a body, in program order.
void for_each_stmt(const std::vector<Item>& body,
                   const std::function<void(const Stmt&, const std::vector<const Loop*>&)>& fn);

// Rewrites every expression (both sides of every statement) of a body with `fn`.
std::vector<Item> map_exprs(const std::vector<Item>& body, const std::function<ExprPtr(const ExprPtr&)>& fn);

}  // namespace steptp::leir
