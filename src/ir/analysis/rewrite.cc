#include "ir/analysis/rewrite.h"

#include "ir/leir/ir_mutator.h"

namespace steptp::analysis {

using leir::ExprKind;
using leir::ExprPtr;

namespace {

struct VarSubst : leir::ExprMutator {
  const std::string* var;
  const Affine* by;
  ExprPtr visit_var(const ExprPtr& e) override {
    if (e->var_name() != *var) return e;
    return to_expr(*by);
  }
  ExprPtr visit_access(const ExprPtr& e) override {
    std::vector<ExprPtr> idx;
    bool changed = false;
    for (const auto& s : e->args) {
      if (!uses_var(s, *var)) {
        idx.push_back(s);
        continue;
      }
      changed = true;
      if (auto a = to_affine(s)) idx.push_back(to_expr(substitute(*a, *var, *by)));
      else idx.push_back(mutate(s));
    }
    if (!changed) return e;
    return with_indices(e, std::move(idx));
  }
};

struct AccessRewriter : leir::ExprMutator {
  const std::string* tensor;
  const std::function<ExprPtr(const ExprPtr&)>* fn;
  ExprPtr visit_access(const ExprPtr& e) override {
    ExprPtr inner = mutate_children(e);
    return inner->tensor == *tensor ? (*fn)(inner) : inner;
  }
};

}  // namespace

ExprPtr substitute_var(const ExprPtr& e, const std::string& var, const Affine& by) {
  VarSubst m;
  m.var = &var;
  m.by = &by;
  return m.mutate(e);
}

std::vector<leir::Item> substitute_var(const std::vector<leir::Item>& body, const std::string& var, const Affine& by) {
  return leir::map_exprs(body, [&](const ExprPtr& e) { return substitute_var(e, var, by); });
}

ExprPtr rewrite_accesses(const ExprPtr& e, const std::string& tensor, const std::function<ExprPtr(const ExprPtr&)>& fn) {
  AccessRewriter m;
  m.tensor = &tensor;
  m.fn = &fn;
  return m.mutate(e);
}

std::vector<leir::Item> rewrite_accesses(const std::vector<leir::Item>& body, const std::string& tensor,
                                         const std::function<ExprPtr(const ExprPtr&)>& fn) {
  return leir::map_exprs(body, [&](const ExprPtr& e) { return rewrite_accesses(e, tensor, fn); });
}

ExprPtr with_indices(const ExprPtr& access, std::vector<ExprPtr> indices) {
  return leir::make_access(access->tensor, access->dtype, access->scope, std::move(indices), access->loc);
}

ExprPtr renamed(const ExprPtr& access, const std::string& tensor, leir::Scope scope) {
  return leir::make_access(tensor, access->dtype, scope, access->args, access->loc);
}

bool uses_var(const ExprPtr& e, const std::string& var) {
  if (e->kind == ExprKind::IndexVar) return e->var_name() == var;
  for (const auto& a : e->args)
    if (uses_var(a, var)) return true;
  return false;
}

bool uses_var(const std::vector<leir::Item>& body, const std::string& var) {
  bool found = false;
  leir::for_each_stmt(body, [&](const leir::Stmt& s, const auto&) {
    found = found || uses_var(s.lhs, var) || uses_var(s.rhs, var);
  });
  return found;
}

}  // namespace steptp::analysis
