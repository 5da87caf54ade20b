#include "transform/concat_split/concat_split_util.h"

#include <algorithm>

#include "ir/leir/ir_mutator.h"

namespace steptp::strategies::concat_split {

const Stmt* single_stmt(const Program& p, int i) {
  const Nest* n = flat_nest(p, i);
  return n && n->body.size() == 1 ? &n->body[0].stmt : nullptr;
}

bool iso(const ExprPtr& a, const ExprPtr& b, std::map<std::string, std::string>& names) {
  if (a->kind != b->kind || a->args.size() != b->args.size()) return false;
  switch (a->kind) {
    case ExprKind::Number: if (a->value != b->value) return false; break;
    case ExprKind::IndexVar: if (a->var_name() != b->var_name()) return false; break;
    case ExprKind::Access: {
      if (a->dtype != b->dtype) return false;
      auto [it, fresh] = names.emplace(a->tensor, b->tensor);
      if (!fresh && it->second != b->tensor) return false;
      break;
    }
    case ExprKind::Unary: break;
    case ExprKind::Binary: if (a->bop != b->bop) return false; break;
    case ExprKind::Compare: if (a->cmp_ops != b->cmp_ops) return false; break;
    case ExprKind::Call: if (a->func != b->func) return false; break;
  }
  for (size_t k = 0; k < a->args.size(); ++k)
    if (!iso(a->args[k], b->args[k], names)) return false;
  return true;
}

bool iso_stmt(const Stmt& a, const Stmt& b, std::map<std::string, std::string>& names) {
  return iso(a.lhs, b.lhs, names) && iso(a.rhs, b.rhs, names);
}

bool used_as_value(const ExprPtr& e, const std::string& v) {
  if (e->is_var()) return e->var_name() == v;
  if (e->is_access()) return false;
  for (const auto& a : e->args)
    if (used_as_value(a, v)) return true;
  return false;
}

int plain_dim(const Expr& access, const std::string& v) {
  int dim = -1;
  for (size_t d = 0; d < access.args.size(); ++d) {
    const auto& i = access.args[d];
    if (i->is_var() && i->var_name() == v) {
      if (dim != -1) return -2;
      dim = static_cast<int>(d);
    } else if (vars_in(i).count(v)) {
      return -2;
    }
  }
  return dim;
}

void collect_accesses(const ExprPtr& e, std::vector<ExprPtr>& out) {
  if (e->is_access()) out.push_back(e);
  for (const auto& a : e->args) collect_accesses(a, out);
}

Nest copy_nest(const analysis::Box& box, int dim, int64_t count,
               const std::vector<std::tuple<ExprPtr, std::string, int64_t, ExprPtr, std::string, int64_t>>& copies) {
  std::vector<Loop> loops;
  auto names = analysis::standalone_vars(box.size());
  for (size_t d = 0; d < box.size(); ++d) {
    Loop l;
    l.kind = d == 0 ? leir::LoopKind::Bound : leir::LoopKind::Serial;
    l.var = d == 0 ? "tx" : names[d - 1];
    l.extent = static_cast<int>(d) == dim ? count : box[d].hi - box[d].lo + 1;
    loops.push_back(l);
  }
  std::vector<Stmt> stmts;
  for (const auto& [dst_like, dst, dst_off, src_like, src, src_off] : copies) {
    std::vector<ExprPtr> di, si;
    for (size_t d = 0; d < box.size(); ++d) {
      auto v = leir::make_var(loops[d].var);
      bool here = static_cast<int>(d) == dim;
      di.push_back(plus_const(v, here ? dst_off : box[d].lo));
      si.push_back(plus_const(v, here ? src_off : box[d].lo));
    }
    stmts.push_back(make_stmt(access_like(*dst_like, dst, di), access_like(*src_like, src, si)));
  }
  return make_nest(loops, stmts);
}

analysis::Box whole(const std::vector<int64_t>& shape) {
  analysis::Box box;
  for (int64_t n : shape) box.push_back({0, n - 1});
  return box;
}

std::optional<analysis::Box> copy_box(const Program& p, const leir::TensorTable& table, const std::string& tensor,
                                      const std::vector<ExprPtr>& accesses, const std::vector<Loop>& loops, int at) {
  const auto& info = table.at(tensor);
  analysis::Box all = whole(info.shape);
  if (info.read_only()) return all;
  auto read = analysis::read_footprint(accesses, analysis::loop_ranges(loops));
  analysis::Box box = read ? analysis::intersect(read->box, all) : all;
  if (!analysis::covered(box, analysis::write_footprints(p.body, at, tensor))) return std::nullopt;
  return box;
}

std::vector<ExprPtr> accesses_of(const ExprPtr& e, const std::string& tensor) {
  std::vector<ExprPtr> all, out;
  collect_accesses(e, all);
  for (const auto& a : all)
    if (a->tensor == tensor) out.push_back(a);
  return out;
}

std::vector<Loop> with_extent(std::vector<Loop> loops, const std::string& v, int64_t extent) {
  for (auto& l : loops)
    if (l.var == v) l.extent = extent;
  return loops;
}

const Loop* loop_of(const Nest& n, const std::string& v) {
  for (const auto& l : n.loops)
    if (l.var == v) return &l;
  return nullptr;
}

bool written_in(const analysis::UseDef& ud, const std::string& t, int from, int to) {  // [from, to)
  for (int k = std::max(0, from); k < to && k < static_cast<int>(ud.items.size()); ++k)
    if (ud.items[k].writes.count(t)) return true;
  return false;
}

ExprPtr shifted(const ExprPtr& e, const std::string& v, int64_t shift, const std::map<std::string, std::string>& rename) {
  class Shift : public leir::ExprMutator {
   public:
    Shift(const std::string& v, int64_t s, const std::map<std::string, std::string>& r) : v_(v), s_(s), r_(r) {}
   protected:
    ExprPtr visit_access(const ExprPtr& e) override {
      auto it = r_.find(e->tensor);
      if (it == r_.end()) return mutate_children(e);
      auto copy = std::make_shared<Expr>(*e);
      copy->tensor = it->second;
      return copy;
    }
    ExprPtr visit_var(const ExprPtr& e) override {
      return e->var_name() == v_ && s_ != 0 ? plus_const(e, s_) : e;
    }
   private:
    const std::string& v_;
    int64_t s_;
    const std::map<std::string, std::string>& r_;
  } m(v, shift, rename);
  return m.mutate(e);
}

Stmt shifted_stmt(const Stmt& s, const std::string& v, int64_t shift, const std::map<std::string, std::string>& rename) {
  return make_stmt(shifted(s.lhs, v, shift, rename), shifted(s.rhs, v, shift, rename));
}

std::vector<int64_t> shape_of(const leir::TensorTable& t, const std::string& name) { return t.at(name).shape; }

}  // namespace steptp::strategies::concat_split
