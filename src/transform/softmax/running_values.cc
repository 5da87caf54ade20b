#include "transform/softmax/running_values.h"

#include <algorithm>
#include <limits>

namespace steptp::strategies::softmax {

ExprPtr neg_inf() { return leir::make_neg(leir::make_number(std::numeric_limits<double>::infinity(), "inf")); }

ExprPtr is_first(const ExprPtr& kv) {
  return leir::make_compare({plus_const(kv, -1), leir::make_int(0)}, {leir::CompareOp::Lt});
}
ExprPtr ite(ExprPtr c, ExprPtr a, ExprPtr b) { return leir::make_call(Func::IfThenElse, {c, a, b}); }

std::vector<Loop> scan_loops(const MaxNest& m) {
  auto loops = m.nest->loops;
  if (leir::requires_independence(loops[m.k].kind)) loops[m.k].kind = leir::LoopKind::Serial;
  return loops;
}

Program splice(const Program& p, const std::vector<int>& items, std::vector<leir::Item> replacement) {
  Program out = p;
  std::vector<leir::Item> body;
  for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
    bool removed = std::find(items.begin(), items.end(), i) != items.end();
    if (!removed) body.push_back(p.body[i]);
    if (i == items.back())
      for (auto& r : replacement) body.push_back(std::move(r));
  }
  out.body = std::move(body);
  return out;
}

OnePass make_one_pass(const MaxNest& m, const SumNest& sum, const std::string& prev) {
  OnePass o;
  o.kv = leir::make_var(m.nest->loops[m.k].var);
  o.m = m.stmt->lhs;
  o.s = sum.stmt->lhs;
  o.prev = access_like(*o.m, prev, o.m->args);
  o.term = leir::make_call(Func::Exp, {leir::make_binary(BinaryOp::Sub, m.x, o.m)});
  return o;
}

ExprPtr carried(const OnePass& o, const ExprPtr& value) {
  auto scale = leir::make_call(Func::Exp, {leir::make_binary(BinaryOp::Sub, o.prev, o.m)});
  auto all_masked = leir::make_compare({o.prev, neg_inf()}, {leir::CompareOp::Eq});
  return ite(all_masked, leir::make_int(0), leir::make_binary(BinaryOp::Mul, value, scale));
}

std::vector<Stmt> one_pass(const OnePass& o, const MaxNest& m, std::vector<Stmt> before_max) {
  std::vector<Stmt> out{make_stmt(o.prev, ite(is_first(o.kv), neg_inf(), o.m))};
  for (auto& s : before_max) out.push_back(std::move(s));
  out.push_back(*m.stmt);
  out.push_back(make_stmt(o.s, leir::make_binary(BinaryOp::Add, carried(o, o.s), o.term)));
  return out;
}

}  // namespace steptp::strategies::softmax
