#include "ir/leir/uniform_store.h"

#include "ir/leir/ir_mutator.h"

namespace steptp::leir {

std::set<std::string> tensors_written(const std::vector<Item>& body) {
  std::set<std::string> out;
  for_each_stmt(body, [&](const Stmt& s, const std::vector<const Loop*>&) { out.insert(s.lhs->tensor); });
  return out;
}

bool is_uniform_store(const Stmt& s, const std::string& var, const std::set<std::string>& written_inside) {
  bool uniform = true;
  // Every access of the statement, the written one included, is visited with its subscripts.
  auto check = [&](const Expr& x) {
    if (x.is_var() && x.var_name() == var) uniform = false;
    if (x.is_access() && &x != s.lhs.get() && written_inside.count(x.tensor)) uniform = false;
  };
  for_each_expr(s.lhs, check);
  for_each_expr(s.rhs, check);
  return uniform;
}

}  // namespace steptp::leir
