#include "transform/dataflow_util.h"

#include <algorithm>

#include "ir/analysis/affine.h"
#include "ir/analysis/names.h"
#include "ir/leir/ir_mutator.h"
#include "transform/loop_sites.h"

namespace steptp::strategies::dataflow {

using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Item;
using leir::Loop;
using leir::Nest;
using leir::Program;
using leir::Stmt;

const Nest* flat_nest(const Program& p, int i) {
  if (i < 0 || i >= static_cast<int>(p.body.size()) || !p.body[i].is_nest()) return nullptr;
  const Nest& n = p.body[i].nest;
  if (n.body.empty()) return nullptr;
  for (const auto& it : n.body)
    if (!it.is_stmt()) return nullptr;
  return &n;
}

std::vector<const Stmt*> stmts_of(const Nest& n) {
  std::vector<const Stmt*> out;
  for (const auto& it : n.body)
    if (it.is_stmt()) out.push_back(&it.stmt);
  return out;
}

bool same_loop(const Loop& a, const Loop& b) {
  return a.kind == b.kind && a.extent == b.extent && a.var == b.var && a.start == b.start;
}

bool same_headers(const Nest& a, const Nest& b) {
  if (a.loops.size() != b.loops.size()) return false;
  for (size_t i = 0; i < a.loops.size(); ++i)
    if (!same_loop(a.loops[i], b.loops[i])) return false;
  return true;
}

namespace {
bool intersects(const std::set<std::string>& a, const std::set<std::string>& b) {
  for (const auto& x : a)
    if (b.count(x)) return true;
  return false;
}
}  // namespace

bool conflict(const analysis::ReadWrite& a, const analysis::ReadWrite& b) {
  return intersects(a.writes, b.reads) || intersects(a.writes, b.writes) || intersects(a.reads, b.writes);
}

bool can_sink(const analysis::UseDef& ud, int from, int to) {
  for (int k = from + 1; k < to; ++k)
    if (conflict(ud.items[from], ud.items[k])) return false;
  return true;
}

bool is_output(const Program& p, const std::string& tensor) {
  const auto* d = p.find_known(tensor);
  return d && d->role == leir::Role::Output;
}

bool is_known(const Program& p, const std::string& tensor) { return p.find_known(tensor) != nullptr; }

std::vector<std::string> fresh_tensor_names(const Program& p, int count) {
  analysis::NameAllocator names(p);
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) out.push_back(names.fresh_tensor());
  return out;
}

bool single_writer(const analysis::UseDef& ud, const std::string& t, int item) {
  auto w = ud.writers(t);
  return w.size() == 1 && w[0] == item;
}

namespace {
class VarSubst : public leir::ExprMutator {
 public:
  explicit VarSubst(const std::map<std::string, ExprPtr>& by) : by_(by) {}
 protected:
  ExprPtr visit_var(const ExprPtr& e) override {
    auto it = by_.find(e->var_name());
    return it == by_.end() ? e : it->second;
  }
 private:
  const std::map<std::string, ExprPtr>& by_;
};

class ReadMapper : public leir::ExprMutator {
 public:
  ReadMapper(const std::string& t, const std::function<ExprPtr(const ExprPtr&)>& fn) : t_(t), fn_(fn) {}
 protected:
  ExprPtr visit_access(const ExprPtr& e) override {
    ExprPtr inner = mutate_children(e);
    return e->tensor == t_ ? fn_(inner) : inner;
  }
 private:
  const std::string& t_;
  const std::function<ExprPtr(const ExprPtr&)>& fn_;
};
}  // namespace

ExprPtr substitute_vars(const ExprPtr& e, const std::map<std::string, ExprPtr>& by) {
  VarSubst m(by);
  return m.mutate(e);
}

ExprPtr rename_tensors(const ExprPtr& e, const std::map<std::string, std::string>& names) {
  class Renamer : public leir::ExprMutator {
   public:
    explicit Renamer(const std::map<std::string, std::string>& n) : n_(n) {}
   protected:
    ExprPtr visit_access(const ExprPtr& e) override {
      ExprPtr inner = mutate_children(e);
      auto it = n_.find(e->tensor);
      if (it == n_.end()) return inner;
      auto copy = std::make_shared<Expr>(*inner);
      copy->tensor = it->second;
      return copy;
    }
   private:
    const std::map<std::string, std::string>& n_;
  } r(names);
  return r.mutate(e);
}

ExprPtr map_reads(const ExprPtr& e, const std::string& tensor, const std::function<ExprPtr(const ExprPtr&)>& fn) {
  ReadMapper m(tensor, fn);
  return m.mutate(e);
}

Stmt map_stmt_reads(const Stmt& s, const std::string& tensor, const std::function<ExprPtr(const ExprPtr&)>& fn) {
  Stmt out = s;
  out.rhs = map_reads(s.rhs, tensor, fn);
  // Gathers inside the lhs subscripts are reads too; the lhs element itself is not.
  std::vector<ExprPtr> idx;
  bool changed = false;
  for (const auto& i : s.lhs->args) {
    idx.push_back(map_reads(i, tensor, fn));
    changed |= idx.back() != i;
  }
  if (changed) out.lhs = access_like(*s.lhs, s.lhs->tensor, idx);
  return out;
}

std::vector<Item> set_scope(const std::vector<Item>& body, const std::string& tensor, leir::Scope scope) {
  class Scoper : public leir::ExprMutator {
   public:
    Scoper(const std::string& t, leir::Scope s) : t_(t), s_(s) {}
   protected:
    ExprPtr visit_access(const ExprPtr& e) override {
      ExprPtr inner = mutate_children(e);
      if (e->tensor != t_ || e->scope == s_) return inner;
      auto copy = std::make_shared<Expr>(*inner);
      copy->scope = s_;
      return copy;
    }
   private:
    const std::string& t_;
    leir::Scope s_;
  } sc(tensor, scope);
  return leir::map_exprs(body, [&](const ExprPtr& e) { return sc.mutate(e); });
}

bool reads_tensor(const ExprPtr& e, const std::string& tensor) {
  bool found = false;
  leir::for_each_expr(e, [&](const Expr& x) {
    if (x.is_access() && x.tensor == tensor) found = true;
  });
  return found;
}

bool contains_gather(const ExprPtr& access) {
  for (const auto& i : access->args) {
    bool g = false;
    leir::for_each_expr(i, [&](const Expr& x) { g |= x.is_access(); });
    if (g) return true;
  }
  return false;
}

bool contains(const ExprPtr& e, const Expr& sub) {
  if (leir::equal(*e, sub)) return true;
  for (const auto& a : e->args)
    if (contains(a, sub)) return true;
  return false;
}

ExprPtr access_like(const Expr& like, const std::string& tensor, std::vector<ExprPtr> idx) {
  return leir::make_access(tensor, like.dtype, like.scope, std::move(idx));
}

ExprPtr plus_const(const ExprPtr& idx, int64_t c) {
  if (c == 0) return idx;
  if (auto a = analysis::to_affine(idx)) {
    a->constant += c;
    return analysis::to_expr(*a);
  }
  return c > 0 ? leir::make_binary(leir::BinaryOp::Add, idx, leir::make_int(c))
               : leir::make_binary(leir::BinaryOp::Sub, idx, leir::make_int(-c));
}

std::vector<ExprPtr> var_exprs(const std::vector<std::string>& vars) {
  std::vector<ExprPtr> out;
  for (const auto& v : vars) out.push_back(leir::make_var(v));
  return out;
}

std::vector<Loop> loops_or_scalar(std::vector<Loop> loops) {
  if (loops.empty()) loops.push_back(loops::make_loop(leir::LoopKind::Bound, 1, "tx"));
  return loops;
}

Stmt make_stmt(ExprPtr lhs, ExprPtr rhs) {
  Stmt s;
  s.lhs = std::move(lhs);
  s.rhs = std::move(rhs);
  return s;
}

bool plain_injective_lhs(const Expr& lhs, const std::vector<Loop>& loops, const std::set<std::string>& except) {
  std::set<std::string> seen;
  for (const auto& i : lhs.args) {
    if (i->is_var()) {
      if (!seen.insert(i->var_name()).second) return false;
    } else if (!i->is_number()) {
      return false;
    }
  }
  for (const auto& l : loops)
    if (l.extent > 1 && !except.count(l.var) && !seen.count(l.var)) return false;
  for (const auto& v : seen) {
    bool bound = false;
    for (const auto& l : loops) bound |= l.var == v;
    if (!bound) return false;
  }
  return true;
}

std::set<std::string> vars_in(const ExprPtr& e) {
  std::set<std::string> out;
  leir::for_each_expr(e, [&](const Expr& x) {
    if (x.is_var()) out.insert(x.var_name());
  });
  return out;
}

int site_item(const Site& s, size_t k) { return k < s.path.size() ? s.path[k] : -1; }

}  // namespace steptp::strategies::dataflow
