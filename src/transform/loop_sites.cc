#include "transform/loop_sites.h"

#include <algorithm>

#include "ir/analysis/rewrite.h"
#include "ir/leir/printer.h"

namespace steptp::strategies::loops {

using leir::Loop;
using leir::LoopKind;

std::string path_text(const analysis::Path& p) {
  std::string s;
  for (int i : p) s += (s.empty() ? "" : ".") + std::to_string(i);
  return s;
}

std::string loop_site_text(const analysis::NestRef& n, int loop) {
  return "nest " + path_text(n.path) + ", loop " + n.nest->loops[loop].var + " (" +
         leir::print_loop(n.nest->loops[loop]) + ")";
}

leir::Program with_items(const leir::Program& p, const analysis::Path& path, std::vector<leir::Item> items) {
  leir::Program out = p;
  out.body = analysis::replace_item(p.body, path, std::move(items));
  return out;
}

leir::Nest split_loop(const leir::Nest& n, int k, int64_t outer, analysis::NameAllocator& names) {
  const Loop& l = n.loops[k];
  int64_t inner = l.extent / outer;
  Loop o = l, i = l;
  o.extent = outer;
  o.start = 0;
  i.extent = inner;
  i.start = 0;
  if (l.kind == LoopKind::Bound) {
    o.var = l.var;  // keeps the hardware axis
    i.kind = LoopKind::Serial;
    i.var = names.fresh_var();
  } else if (l.kind == LoopKind::Vectorized) {
    o.kind = LoopKind::Serial;
    o.var = names.fresh_var();
    i.var = names.fresh_var();
  } else {
    o.var = names.fresh_var();
    i.var = names.fresh_var();
    i.kind = LoopKind::Serial;
  }
  analysis::Affine by;
  by.add_term(o.var, inner);
  by.add_term(i.var, 1);
  by.constant = l.start;
  leir::Nest out = n;
  out.loops.erase(out.loops.begin() + k);
  out.loops.insert(out.loops.begin() + k, {o, i});
  // Substituting the original name: when the outer loop kept it (bound axis), rename the
  // original first to a placeholder-free form by substituting directly (o.var == l.var is fine:
  // substitution replaces each occurrence once, it does not re-scan its output).
  out.body = analysis::substitute_var(n.body, l.var, by);
  return out;
}

std::vector<int64_t> split_points(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t k : {n / 2, n / 4, n - n / 4})
    if (k >= 1 && k < n && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  return out;
}

leir::ExprPtr combine_partials(analysis::AccumOp op, leir::ExprPtr a, leir::ExprPtr b) {
  switch (op) {
    case analysis::AccumOp::Add: return leir::make_binary(leir::BinaryOp::Add, a, b);
    case analysis::AccumOp::Mul: return leir::make_binary(leir::BinaryOp::Mul, a, b);
    case analysis::AccumOp::Max: return leir::make_call(leir::Func::Max, {a, b});
    case analysis::AccumOp::Min: return leir::make_call(leir::Func::Min, {a, b});
  }
  return a;
}

std::vector<int64_t> proper_divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t f = 2; f < n && f <= 4096; ++f)
    if (n % f == 0) d.push_back(f);
  return d;
}

leir::Nest make_nest(std::vector<Loop> loops, std::vector<leir::Item> body) {
  leir::Nest n;
  n.loops = std::move(loops);
  n.body = std::move(body);
  return n;
}

leir::Nest make_nest(std::vector<Loop> loops, std::vector<leir::Stmt> stmts) {
  std::vector<leir::Item> body;
  for (auto& s : stmts) body.push_back(leir::Item::of(std::move(s)));
  return make_nest(std::move(loops), std::move(body));
}

Loop make_loop(LoopKind kind, int64_t extent, std::string var, int64_t start) {
  Loop l;
  l.kind = kind;
  l.extent = extent;
  l.var = std::move(var);
  l.start = start;
  return l;
}

}  // namespace steptp::strategies::loops
