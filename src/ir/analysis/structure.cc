#include "ir/analysis/structure.h"

#include <algorithm>
#include <functional>

#include "ir/leir/ir_mutator.h"

namespace steptp::analysis {

using leir::ExprKind;
using leir::ExprPtr;
using leir::Item;

namespace {

void walk_nests(const std::vector<Item>& body, Path& path, std::vector<const leir::Loop*>& outer,
                std::vector<NestRef>& out) {
  for (size_t i = 0; i < body.size(); ++i) {
    if (!body[i].is_nest()) continue;
    path.push_back(static_cast<int>(i));
    const auto& n = body[i].nest;
    out.push_back({path, &n, outer});
    for (const auto& l : n.loops) outer.push_back(&l);
    walk_nests(n.body, path, outer, out);
    outer.resize(outer.size() - n.loops.size());
    path.pop_back();
  }
}

void walk_stmts(const std::vector<Item>& body, Path& path, std::vector<const leir::Loop*>& loops,
                std::vector<StmtRef>& out) {
  for (size_t i = 0; i < body.size(); ++i) {
    path.push_back(static_cast<int>(i));
    if (body[i].is_stmt()) {
      out.push_back({path, &body[i].stmt, loops});
    } else {
      const auto& n = body[i].nest;
      for (const auto& l : n.loops) loops.push_back(&l);
      walk_stmts(n.body, path, loops, out);
      loops.resize(loops.size() - n.loops.size());
    }
    path.pop_back();
  }
}

void collect_accesses(const ExprPtr& e, std::vector<ExprPtr>& out) {
  if (e->kind == ExprKind::Access) out.push_back(e);
  for (const auto& a : e->args) collect_accesses(a, out);
}

void collect_stmt_rw(const leir::Stmt& s, ReadWrite& rw) {
  rw.writes.insert(s.lhs->tensor);
  for (const auto& r : reads_of(s)) rw.reads.insert(r->tensor);
}

}  // namespace

std::vector<NestRef> all_nests(const std::vector<Item>& body) {
  std::vector<NestRef> out;
  Path path;
  std::vector<const leir::Loop*> outer;
  walk_nests(body, path, outer, out);
  return out;
}

std::vector<StmtRef> all_stmts(const std::vector<Item>& body) {
  std::vector<StmtRef> out;
  Path path;
  std::vector<const leir::Loop*> loops;
  walk_stmts(body, path, loops, out);
  return out;
}

std::vector<StmtRef> stmts_in(const NestRef& n) {
  std::vector<StmtRef> out;
  Path path = n.path;
  std::vector<const leir::Loop*> loops = n.outer;
  for (const auto& l : n.nest->loops) loops.push_back(&l);
  walk_stmts(n.nest->body, path, loops, out);
  return out;
}

std::vector<ExprPtr> reads_of(const leir::Stmt& s) {
  std::vector<ExprPtr> out;
  for (const auto& idx : s.lhs->args) collect_accesses(idx, out);
  collect_accesses(s.rhs, out);
  return out;
}

ReadWrite read_write(const leir::Stmt& s) {
  ReadWrite rw;
  collect_stmt_rw(s, rw);
  return rw;
}

ReadWrite read_write(const Item& item) {
  ReadWrite rw;
  if (item.is_stmt()) {
    collect_stmt_rw(item.stmt, rw);
  } else {
    leir::for_each_stmt(item.nest.body, [&](const leir::Stmt& s, const auto&) { collect_stmt_rw(s, rw); });
  }
  return rw;
}

bool UseDef::read_after(int item, const std::string& t) const {
  for (size_t j = item + 1; j < items.size(); ++j)
    if (items[j].reads.count(t)) return true;
  return false;
}
bool UseDef::written_before(int item, const std::string& t) const {
  for (int j = 0; j < item && j < static_cast<int>(items.size()); ++j)
    if (items[j].writes.count(t)) return true;
  return false;
}
bool UseDef::read_before(int item, const std::string& t) const {
  for (int j = 0; j < item && j < static_cast<int>(items.size()); ++j)
    if (items[j].reads.count(t)) return true;
  return false;
}
std::vector<int> UseDef::readers(const std::string& t) const {
  std::vector<int> r;
  for (size_t j = 0; j < items.size(); ++j)
    if (items[j].reads.count(t)) r.push_back(static_cast<int>(j));
  return r;
}
std::vector<int> UseDef::writers(const std::string& t) const {
  std::vector<int> r;
  for (size_t j = 0; j < items.size(); ++j)
    if (items[j].writes.count(t)) r.push_back(static_cast<int>(j));
  return r;
}

UseDef use_def(const leir::Program& p) {
  UseDef u;
  for (const auto& item : p.body) u.items.push_back(read_write(item));
  return u;
}

std::set<std::string> tensor_names(const leir::Program& p) {
  std::set<std::string> names;
  for (const auto& d : p.known) names.insert(d.name);
  leir::for_each_stmt(p.body, [&](const leir::Stmt& s, const auto&) {
    for (const auto* e : {&s.lhs, &s.rhs})
      leir::for_each_expr(*e, [&](const leir::Expr& x) {
        if (x.kind == ExprKind::Access) names.insert(x.tensor);
      });
  });
  return names;
}

std::set<std::string> loop_vars(const std::vector<Item>& body) {
  std::set<std::string> vars;
  for (const auto& n : all_nests(body))
    for (const auto& l : n.nest->loops) vars.insert(l.var);
  leir::for_each_stmt(body, [&](const leir::Stmt& s, const auto&) {
    for (const auto* e : {&s.lhs, &s.rhs})
      leir::for_each_expr(*e, [&](const leir::Expr& x) {
        if (x.kind == ExprKind::IndexVar) vars.insert(x.var_name());
      });
  });
  return vars;
}

const Item& item_at(const std::vector<Item>& body, const Path& path) {
  const std::vector<Item>* b = &body;
  const Item* it = nullptr;
  for (size_t k = 0; k < path.size(); ++k) {
    it = &b->at(path[k]);
    if (k + 1 < path.size()) b = &it->nest.body;
  }
  return *it;
}

namespace {
std::vector<Item> splice(const std::vector<Item>& body, const Path& path, size_t depth,
                         std::vector<Item>& replacement) {
  std::vector<Item> out;
  out.reserve(body.size() + replacement.size());
  for (size_t i = 0; i < body.size(); ++i) {
    if (static_cast<int>(i) != path[depth]) {
      out.push_back(body[i]);
      continue;
    }
    if (depth + 1 == path.size()) {
      for (auto& r : replacement) out.push_back(std::move(r));
    } else {
      Item copy = body[i];
      copy.nest.body = splice(body[i].nest.body, path, depth + 1, replacement);
      out.push_back(std::move(copy));
    }
  }
  return out;
}
}  // namespace

std::vector<Item> replace_item(const std::vector<Item>& body, const Path& path, std::vector<Item> replacement) {
  return splice(body, path, 0, replacement);
}

}  // namespace steptp::analysis
