// Layout changes (STRATEGIES.md 19, 21).
//  * layout_transformation: a read-only known tensor Y gets a new layout through a copy nest
//    placed before its first reader; every read of Y is rewritten to the copy.
//  * set_storage_layout: an intermediate gets a new layout at every occurrence (no copy).
// Layouts: transpose i,j (swap two dimensions), merge i (dims i,i+1 → one of size
// n_i*n_{i+1}), and, for the copy only, split i by f (dim i → (n_i/f, f)). Subscripts stay flat:
// merging `a` and `c` gives `a*16+c`.
#include "ir/analysis/affine.h"
#include "ir/analysis/names.h"
#include "ir/analysis/rewrite.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/tensors.h"
#include "transform/loop_sites.h"
#include "transform/schedule_state.h"

namespace steptp::strategies {
namespace {

using leir::BinaryOp;
using leir::ExprPtr;
using leir::Program;

struct Layout {
  enum Kind { Transpose, Merge, Split } kind = Transpose;
  int i = 0, j = 0;  // Transpose: dims i<j; Merge: i; Split: dim i, inner size j
};

// A layout as typed parameters: {"layout": "transpose", "dims": [i, j]}, {"layout": "merge",
// "dims": [i]} or {"layout": "split", "dims": [i], "factor": f}.
Params to_params(const Layout& l) {
  switch (l.kind) {
    case Layout::Transpose: return {{"layout", std::string("transpose")}, {"dims", std::vector<int64_t>{l.i, l.j}}};
    case Layout::Merge: return {{"layout", std::string("merge")}, {"dims", std::vector<int64_t>{l.i}}};
    case Layout::Split:
      return {{"layout", std::string("split")}, {"dims", std::vector<int64_t>{l.i}}, {"factor", int64_t{l.j}}};
  }
  return {};
}

// The layout the parameters name; nullopt when they name none (wrong kind, arity or types).
std::optional<Layout> layout_of(const Params& params) {
  auto kind = params.find("layout"), dims = params.find("dims");
  if (kind == params.end() || dims == params.end()) return std::nullopt;
  const auto* k = std::get_if<std::string>(&kind->second);
  const auto* d = std::get_if<std::vector<int64_t>>(&dims->second);
  if (!k || !d) return std::nullopt;
  auto factor = params.find("factor");
  const int64_t* f = factor == params.end() ? nullptr : std::get_if<int64_t>(&factor->second);
  Layout l;
  if (*k == "transpose" && d->size() == 2 && !f && params.size() == 2)
    l = {Layout::Transpose, static_cast<int>((*d)[0]), static_cast<int>((*d)[1])};
  else if (*k == "merge" && d->size() == 1 && !f && params.size() == 2)
    l = {Layout::Merge, static_cast<int>((*d)[0]), 0};
  else if (*k == "split" && d->size() == 1 && f && params.size() == 3)
    l = {Layout::Split, static_cast<int>((*d)[0]), static_cast<int>(*f)};
  else
    return std::nullopt;
  return l;
}

std::vector<Layout> layouts_for(const std::vector<int64_t>& shape, bool allow_split) {
  std::vector<Layout> out;
  int r = static_cast<int>(shape.size());
  for (int i = 0; i < r; ++i)
    for (int j = i + 1; j < r; ++j)
      if (shape[i] > 1 || shape[j] > 1) out.push_back({Layout::Transpose, i, j});
  for (int i = 0; i + 1 < r; ++i) out.push_back({Layout::Merge, i, 0});
  if (allow_split)
    for (int i = 0; i < r; ++i) {
      auto d = loops::proper_divisors(shape[i]);
      if (!d.empty()) out.push_back({Layout::Split, i, static_cast<int>(d.front())});
    }
  return out;
}

std::vector<int64_t> new_shape(const std::vector<int64_t>& s, const Layout& l) {
  std::vector<int64_t> out = s;
  switch (l.kind) {
    case Layout::Transpose: std::swap(out[l.i], out[l.j]); break;
    case Layout::Merge:
      out[l.i] = s[l.i] * s[l.i + 1];
      out.erase(out.begin() + l.i + 1);
      break;
    case Layout::Split:
      out[l.i] = s[l.i] / l.j;
      out.insert(out.begin() + l.i + 1, l.j);
      break;
  }
  return out;
}

ExprPtr merged_index(const ExprPtr& a, const ExprPtr& b, int64_t nb) {
  auto fa = analysis::to_affine(a), fb = analysis::to_affine(b);
  if (fa && fb) {
    analysis::Affine r = fa->scaled(nb);
    r += *fb;
    return analysis::to_expr(r);
  }
  return leir::make_binary(BinaryOp::Add, leir::make_binary(BinaryOp::Mul, a, leir::make_int(nb)), b);
}

// Subscripts of an access under the new layout (old shape `shape`).
std::vector<ExprPtr> relayout(const std::vector<ExprPtr>& idx, const std::vector<int64_t>& shape, const Layout& l) {
  std::vector<ExprPtr> out = idx;
  switch (l.kind) {
    case Layout::Transpose: std::swap(out[l.i], out[l.j]); break;
    case Layout::Merge:
      out[l.i] = merged_index(idx[l.i], idx[l.i + 1], shape[l.i + 1]);
      out.erase(out.begin() + l.i + 1);
      break;
    case Layout::Split: {
      ExprPtr f = leir::make_int(l.j);
      out[l.i] = leir::make_binary(BinaryOp::FloorDiv, idx[l.i], f);
      out.insert(out.begin() + l.i + 1, leir::make_binary(BinaryOp::Mod, idx[l.i], f));
      break;
    }
  }
  return out;
}

bool valid(const Layout& l, const std::vector<int64_t>& shape, bool allow_split) {
  int r = static_cast<int>(shape.size());
  switch (l.kind) {
    case Layout::Transpose: return 0 <= l.i && l.i < l.j && l.j < r;
    case Layout::Merge: return 0 <= l.i && l.i + 1 < r;
    case Layout::Split: return allow_split && 0 <= l.i && l.i < r && l.j > 1 && l.j < shape[l.i] && shape[l.i] % l.j == 0;
  }
  return false;
}

bool reads_anywhere(const ScheduleState& st, const std::string& t) {
  for (const auto& ud : st.use_def().items)
    if (ud.reads.count(t)) return true;
  return false;
}

class LayoutTransformation final : public Strategy {
 public:
  std::string_view name() const override { return "layout_transformation"; }
  std::string_view description() const override {
    return "give an input a new layout (transpose, merge or split dimensions) through a copy and rewrite its reads";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey sv;
    for (int i = 0; i < static_cast<int>(p.known.size()); ++i) {
      const auto& d = p.known[i];
      std::string where = "tensor " + d.name;
      if (!leir::is_read_only(d.role)) sv.refusals.push_back({where, "not read-only (outputs keep their layout)"});
      else if (!reads_anywhere(st, d.name)) sv.refusals.push_back({where, "never read"});
      else if (layouts_for(d.shape, true).empty()) sv.refusals.push_back({where, "rank " + std::to_string(d.shape.size()) + " admits no other layout"});
      else sv.sites.push_back({{}, {i}, where});
    }
    return sv;
  }

  std::vector<Params> param_space(const ScheduleState& st, const Site& s) const override {
    const Program& p = st.program();
    std::vector<Params> out;
    for (const auto& l : layouts_for(p.known.at(s.detail.at(0)).shape, true)) out.push_back(to_params(l));
    return out;
  }

  Applied apply(const ScheduleState& st, const Site& site, const Params& params) const override {
    const Program& p = st.program();
    const auto& d = p.known.at(site.detail.at(0));
    auto l = layout_of(params);
    if (!l || !valid(*l, d.shape, true)) return refuse(site, "not a layout of " + d.name + "'s shape");
    if (!leir::is_read_only(d.role)) return refuse(site, "not read-only (outputs keep their layout)");
    auto readers = st.use_def().readers(d.name);
    if (readers.empty()) return refuse(site, "never read");
    analysis::NameAllocator names(p);
    std::string t = names.fresh_tensor();
    // Copy nest: loops over the shape the affine side needs (old shape for transpose/merge, new
    // shape for split), so the write subscripts stay affine.
    bool over_new = l->kind == Layout::Split;
    auto loop_shape = over_new ? new_shape(d.shape, *l) : d.shape;
    auto vars = analysis::standalone_vars(loop_shape.size());
    std::vector<leir::Loop> ls;
    std::vector<ExprPtr> v;
    for (size_t k = 0; k < loop_shape.size(); ++k) {
      ls.push_back(loops::make_loop(leir::LoopKind::Serial, loop_shape[k], vars[k]));
      v.push_back(leir::make_var(vars[k]));
    }
    ExprPtr src, dst;
    if (over_new) {
      std::vector<ExprPtr> old = v;
      analysis::Affine a;
      a.add_term(vars[l->i], l->j);
      a.add_term(vars[l->i + 1], 1);
      old[l->i] = analysis::to_expr(a);
      old.erase(old.begin() + l->i + 1);
      src = leir::make_access(d.name, d.dtype, leir::Scope::Global, old);
      dst = leir::make_access(t, d.dtype, leir::Scope::Global, v);
    } else {
      src = leir::make_access(d.name, d.dtype, leir::Scope::Global, v);
      dst = leir::make_access(t, d.dtype, leir::Scope::Global, relayout(v, d.shape, *l));
    }
    leir::Stmt copy{dst, src, {}};
    leir::Item copy_item = ls.empty() ? leir::Item::of(copy) : leir::Item::of(loops::make_nest(ls, {leir::Item::of(copy)}));
    Program out = p;
    out.body = analysis::rewrite_accesses(p.body, d.name, [&](const ExprPtr& a) {
      return leir::make_access(t, a->dtype, leir::Scope::Global, relayout(a->args, d.shape, *l), a->loc);
    });
    out.body.insert(out.body.begin() + readers.front(), std::move(copy_item));
    return candidate(st, site, params, Exactness::Exact, std::move(out));
  }
};

class SetStorageLayout final : public Strategy {
 public:
  std::string_view name() const override { return "set_storage_layout"; }
  std::string_view description() const override {
    return "store an intermediate in a new layout (transpose or merge dimensions) at every occurrence";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey sv;
    const auto& table = st.tensors();
    int i = 0;
    for (const auto& name : table.order) {
      const auto& info = table.at(name);
      if (info.known) continue;
      std::string where = "tensor " + name;
      if (layouts_for(info.shape, false).empty()) sv.refusals.push_back({where, "rank " + std::to_string(info.shape.size()) + " admits no other layout"});
      else if (!gather_free(p, name)) sv.refusals.push_back({where, "written at a data-dependent subscript"});
      else sv.sites.push_back({{}, {i}, where});
      ++i;
    }
    return sv;
  }

  std::vector<Params> param_space(const ScheduleState& st, const Site& s) const override {
    std::vector<Params> out;
    const auto& table = st.tensors();
    auto name = intermediate(table, s.detail.at(0));
    if (name.empty()) return out;
    for (const auto& l : layouts_for(table.at(name).shape, false)) out.push_back(to_params(l));
    return out;
  }

  Applied apply(const ScheduleState& st, const Site& site, const Params& params) const override {
    const Program& p = st.program();
    const auto& table = st.tensors();
    auto name_ = intermediate(table, site.detail.at(0));
    if (name_.empty()) return refuse(site, "no such intermediate");
    const auto& shape = table.at(name_).shape;
    auto l = layout_of(params);
    if (!l || !valid(*l, shape, false)) return refuse(site, "not a storage layout of " + name_ + "'s shape");
    Program out = p;
    out.body = analysis::rewrite_accesses(p.body, name_, [&](const ExprPtr& a) {
      return analysis::with_indices(a, relayout(a->args, shape, *l));
    });
    return candidate(st, site, params, Exactness::Exact, std::move(out));
  }

 private:
  static std::string intermediate(const leir::TensorTable& t, int k) {
    int i = 0;
    for (const auto& name : t.order) {
      if (t.at(name).known) continue;
      if (i++ == k) return name;
    }
    return {};
  }
  static bool gather_free(const Program& p, const std::string& t) {
    bool ok = true;
    leir::for_each_stmt(p.body, [&](const leir::Stmt& s, const auto&) {
      if (s.lhs->tensor == t)
        for (const auto& sub : s.lhs->args) ok = ok && analysis::to_affine(sub).has_value();
    });
    return ok;
  }
};

RegisterStrategy<LayoutTransformation> layout_transformation_registrar(19);
RegisterStrategy<SetStorageLayout> set_storage_layout_registrar(21);

}  // namespace
}  // namespace steptp::strategies
