// Layout changes (STRATEGIES.md 19, 21).
//  * layout_transformation: a read-only known tensor Y gets a new layout through a copy nest
//    placed before its first reader; every read of Y is rewritten to the copy.
//  * set_storage_layout: an intermediate gets a new layout at every occurrence (no copy).
// Layouts: "transpose:i,j" (swap two dimensions), "merge:i" (dims i,i+1 → one of size
// n_i*n_{i+1}), and, for the copy only, "split:i,f" (dim i → (n_i/f, f)). Subscripts stay flat:
// merging `a` and `c` gives `a*16+c`.
#include <sstream>

#include "analysis/affine.h"
#include "analysis/names.h"
#include "analysis/rewrite.h"
#include "leir/ir_mutator.h"
#include "leir/tensors.h"
#include "strategies/loop_sites.h"
#include "strategies/strategy.h"

namespace steptp::strategies {
namespace {

using leir::BinaryOp;
using leir::ExprPtr;
using leir::Program;

struct Layout {
  enum Kind { Transpose, Merge, Split } kind = Transpose;
  int i = 0, j = 0;  // Transpose: dims i<j; Merge: i; Split: dim i, inner size j
};

std::string to_text(const Layout& l) {
  switch (l.kind) {
    case Layout::Transpose: return "transpose:" + std::to_string(l.i) + "," + std::to_string(l.j);
    case Layout::Merge: return "merge:" + std::to_string(l.i);
    case Layout::Split: return "split:" + std::to_string(l.i) + "," + std::to_string(l.j);
  }
  return {};
}

std::optional<Layout> parse_layout(const std::string& s) {
  Layout l;
  auto colon = s.find(':');
  if (colon == std::string::npos) return std::nullopt;
  std::string kind = s.substr(0, colon), rest = s.substr(colon + 1);
  char comma = 0;
  std::istringstream in(rest);
  if (kind == "merge") {
    l.kind = Layout::Merge;
    if (!(in >> l.i)) return std::nullopt;
    return l;
  }
  l.kind = kind == "transpose" ? Layout::Transpose : kind == "split" ? Layout::Split : Layout::Merge;
  if (kind != "transpose" && kind != "split") return std::nullopt;
  if (!(in >> l.i >> comma >> l.j) || comma != ',') return std::nullopt;
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

bool reads_anywhere(const Program& p, const std::string& t) {
  for (const auto& ud : analysis::use_def(p).items)
    if (ud.reads.count(t)) return true;
  return false;
}

class LayoutTransformation final : public SurveyStrategy {
 public:
  std::string_view name() const override { return "layout_transformation"; }
  std::string_view description() const override {
    return "give an input a new layout (transpose, merge or split dimensions) through a copy and rewrite its reads";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  Survey survey(const Program& p) const override {
    Survey sv;
    for (int i = 0; i < static_cast<int>(p.known.size()); ++i) {
      const auto& d = p.known[i];
      std::string where = "tensor " + d.name;
      if (!leir::is_read_only(d.role)) sv.refusals.push_back({where, "not read-only (outputs keep their layout)"});
      else if (!reads_anywhere(p, d.name)) sv.refusals.push_back({where, "never read"});
      else if (layouts_for(d.shape, true).empty()) sv.refusals.push_back({where, "rank " + std::to_string(d.shape.size()) + " admits no other layout"});
      else sv.sites.push_back({{}, {i}, where});
    }
    return sv;
  }

  std::vector<Params> param_space(const Program& p, const Site& s) const override {
    std::vector<Params> out;
    for (const auto& l : layouts_for(p.known.at(s.detail.at(0)).shape, true)) out.push_back({{"layout", to_text(l)}});
    return out;
  }

  std::optional<Candidate> apply(const Program& p, const Site& site, const Params& params) const override {
    const auto& d = p.known.at(site.detail.at(0));
    auto l = parse_layout(std::get<std::string>(params.at("layout")));
    if (!l || !valid(*l, d.shape, true) || !leir::is_read_only(d.role)) return std::nullopt;
    auto ud = analysis::use_def(p);
    auto readers = ud.readers(d.name);
    if (readers.empty()) return std::nullopt;
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
    return loops::make_candidate(name(), params, Exactness::Exact, std::move(out));
  }
};

class SetStorageLayout final : public SurveyStrategy {
 public:
  std::string_view name() const override { return "set_storage_layout"; }
  std::string_view description() const override {
    return "store an intermediate in a new layout (transpose or merge dimensions) at every occurrence";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  Survey survey(const Program& p) const override {
    Survey sv;
    auto table = leir::build_tensor_table(p);
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

  std::vector<Params> param_space(const Program& p, const Site& s) const override {
    std::vector<Params> out;
    auto table = leir::build_tensor_table(p);
    auto name = intermediate(table, s.detail.at(0));
    if (name.empty()) return out;
    for (const auto& l : layouts_for(table.at(name).shape, false)) out.push_back({{"layout", to_text(l)}});
    return out;
  }

  std::optional<Candidate> apply(const Program& p, const Site& site, const Params& params) const override {
    auto table = leir::build_tensor_table(p);
    auto name_ = intermediate(table, site.detail.at(0));
    if (name_.empty()) return std::nullopt;
    const auto& shape = table.at(name_).shape;
    auto l = parse_layout(std::get<std::string>(params.at("layout")));
    if (!l || !valid(*l, shape, false)) return std::nullopt;
    Program out = p;
    out.body = analysis::rewrite_accesses(p.body, name_, [&](const ExprPtr& a) {
      return analysis::with_indices(a, relayout(a->args, shape, *l));
    });
    return loops::make_candidate(name(), params, Exactness::Exact, std::move(out));
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

RegisterStrategy<LayoutTransformation> reg_layout(19);
RegisterStrategy<SetStorageLayout> reg_storage_layout(21);

}  // namespace
}  // namespace steptp::strategies
