#include "transform/softmax/prefix_softmax.h"

#include <fmt/format.h>

#include "transform/schedule_state.h"
#include "transform/softmax/running_values.h"

namespace steptp::strategies::softmax {
namespace {

// ---- 41: the normalization inside the statistics' row loops ----------------------------------

struct RowNorm {
  int item = -1;
  const Nest* nest = nullptr;
};

bool same_args(const std::vector<ExprPtr>& a, const std::vector<ExprPtr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (!leir::equal(a[d], b[d])) return false;
  return true;
}

// The normalization is the first item after the sum that reads a statistic. It moves into the
// max nest's loops outside k (the row loops when k is innermost, as in a softmax over the last
// axis; the outer ones of the rows otherwise), after their pass over the remaining loops: so it
// must start with those loops, read the statistics only at the subscripts they are written at
// (final once the enclosing iteration's pass is done), write nothing the pass reads or writes, and
// the pass must be able to move down to it.
std::string match_row_norm(const Program& p, const analysis::UseDef& ud, const MaxNest& m, const SumNest& sum,
                           RowNorm& out) {
  const std::string& mt = m.stmt->lhs->tensor;
  const std::string& st = sum.stmt->lhs->tensor;
  int j = -1;
  for (int k = sum.item + 1; k < static_cast<int>(p.body.size()) && j < 0; ++k)
    if (ud.items[k].reads.count(mt) || ud.items[k].reads.count(st)) j = k;
  if (j < 0 || !ud.items[j].reads.count(mt) || !ud.items[j].reads.count(st))
    return "the first later reader of the statistics does not read both (no normalization to feed)";
  const Nest* n = flat_nest(p, j);
  if (!n) return fmt::format("the normalization (item {}) is not a nest of statements", j);
  bool enclosed = n->loops.size() >= m.k;
  for (size_t l = 0; enclosed && l < m.k; ++l) enclosed = same_loop(n->loops[l], m.nest->loops[l]);
  if (!enclosed) return fmt::format("the normalization (item {}) does not start with the loops around the reduction loop", j);
  bool own_row = true;
  auto check = [&](const ExprPtr& r) {
    own_row &= same_args(r->args, m.stmt->lhs->args);
    return r;
  };
  for (const Stmt* s : stmts_of(*n)) map_stmt_reads(map_stmt_reads(*s, mt, check), st, check);
  if (!own_row) return fmt::format("the normalization (item {}) reads the statistics of other rows", j);
  for (int c : {m.item, sum.item})
    for (const auto& t : ud.items[j].writes)
      if (ud.items[c].reads.count(t) || ud.items[c].writes.count(t))
        return fmt::format("the normalization (item {}) writes {}, which the statistics read or write", j, t);
  if (!chain_can_sink(ud, {m.item, sum.item}, j)) return fmt::format("items before the normalization (item {}) conflict with the statistics", j);
  out.item = j;
  out.nest = n;
  return "";
}

// outer[ k and the loops inside it[pass]; the normalization's other loops[its body] ], outer being
// the max nest's loops outside k (none when k is outermost: the pass, then the normalization).
std::vector<leir::Item> rows_then_norm(const MaxNest& m, std::vector<Stmt> pass, const Nest& norm) {
  auto loops = scan_loops(m);
  std::vector<leir::Item> inner{
      leir::Item::of(make_nest({loops.begin() + static_cast<long>(m.k), loops.end()}, std::move(pass)))};
  Nest rest;
  rest.loops.assign(norm.loops.begin() + static_cast<long>(m.k), norm.loops.end());
  rest.body = norm.body;
  if (rest.loops.empty()) inner.insert(inner.end(), rest.body.begin(), rest.body.end());
  else inner.push_back(leir::Item::of(std::move(rest)));
  if (m.k == 0) return inner;
  Nest outer;
  outer.loops.assign(loops.begin(), loops.begin() + static_cast<long>(m.k));
  outer.body = std::move(inner);
  return {leir::Item::of(std::move(outer))};
}

}  // namespace

Applied PrefixSoftmax::apply(const ScheduleState& st, const Site& s, const Params& params) const {
  const Program& p = st.program();
  const auto& ud = st.use_def();
  MaxNest m;
  SumNest sum;
  if (std::string why = match(p, ud, site_item(s), m, sum); !why.empty()) return refuse(s, why);
  auto pass = one_pass(make_one_pass(m, sum, fresh_tensor_names(p, 1)[0]), m);
  if (mode_ == Mode::SumOnly) {
    Program out = splice(p, {m.item, sum.item}, {leir::Item::of(make_nest(scan_loops(m), std::move(pass)))});
    return candidate(st, s, params, Exactness::Reassoc, std::move(out));
  }
  RowNorm norm;
  match_row_norm(p, ud, m, sum, norm);
  Program out = splice(p, {m.item, sum.item, norm.item}, rows_then_norm(m, std::move(pass), *norm.nest));
  return candidate(st, s, params, Exactness::Reassoc, std::move(out));
}

Survey PrefixSoftmax::survey(const ScheduleState& st) const {
  const Program& p = st.program();
  Survey out;
  const auto& ud = st.use_def();
  for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
    if (!is_max_nest(p, i)) continue;
    MaxNest m;
    Considered c;
    c.site.path = {i};
    SumNest sum;
    c.refusal = match(p, ud, i, m, sum);
    c.site.description = fmt::format("max reduction at item {}", i);
    if (sum.item >= 0) c.site.path.push_back(sum.item);
    out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
  }
  return out;
}

std::string PrefixSoftmax::match(const Program& p, const analysis::UseDef& ud, int i, MaxNest& m, SumNest& sum) const {
  if (auto r = match_max(p, ud, i, m); !r.empty()) return r;
  if (auto r = match_sum(p, ud, m, sum); !r.empty()) return r;
  if (mode_ == Mode::OnlineSoftmax) {
    RowNorm norm;
    if (auto r = match_row_norm(p, ud, m, sum, norm); !r.empty()) return r;
  }
  return "";
}

}  // namespace steptp::strategies::softmax
