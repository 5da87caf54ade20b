// The softmax family (STRATEGIES.md): 36 normal_loop_max_to_prefix_max,
// 40 normal_loop_summation_on_exp_to_prefix_summation_on_exp, 41 online_softmax,
// 42 flashattention_wo_tiling.
//
// Patterns are recognized structurally (operators and subscripts, never tensor names):
//   max:        M_s = max(M_s, x)                 over loops s + k (k the only reduction loop)
//   sum of exp: S_s = S_s + exp(x - M_s)          same loops, same x
//   normalize:  Z_{s,k} = exp(x - M_s) / S_s      same loops
//   P@V:        O_o = O_o + Z_{s,k} * V           k the reduction loop of the product
//
// 36 keeps the running max as an array R_{s,k} over k plus a read of its last element (that is
// how STRATEGIES.md defines it). The one-pass forms of 40-42 keep their running values per output
// element instead, updated in place along k (made serial), so they need less memory than the
// programs they replace, not more (the public array forms held every prefix). Per iteration:
//   P_s = if_then_else(k-1<0, -inf, M_s)          the previous running max (a per-row buffer)
//   M_s = max(M_s, x)                              the max reduction's own statement
//   S_s = if_then_else(P_s == -inf, 0, S_s * exp(P_s - M_s)) + exp(x - M_s)
// M and S are the original statistics: after the last iteration they hold the reductions' values,
// so every later reader (the normalization, a known output, any other reader) reads them as
// before and no copy nest is needed. LEIR's unset rule (LEIR.md §3) holds: M's statement is an
// accumulation (its unset element reads -inf at k = 0); S's is not, and S's unset element is never
// read because P_s = -inf at k = 0 and if_then_else is lazy; P_s reads M_s only from k = 1 on.
//
// Masked rows (x = -inf) are the trap: exp(-inf - -inf) is NaN. The original program yields NaN
// statistics exactly for rows that are masked everywhere (PyTorch gives NaN there too) and exact
// zeros for masked elements of other rows, so the running sum restarts while everything so far is
// masked (P_s == -inf): it is NaN while the row is all -inf (as the original) and recovers at the
// first finite x.
//
// 40 and 41 differ in what they rewrite. 40 fuses the two reductions only: the one pass stands
// where the sum was and the statistics stay global per-row tensors that whatever follows reads.
// 41 rewrites all three nests of the softmax: the normalization (the first later reader of the
// statistics; it must read both, where they are written) moves into the max nest's loops outside
// k, right after their pass, so each row's normalization reads what the fused pass just produced
// for that row (the online softmax kernel: per row, one pass for the statistics, one for the
// output; a softmax over a middle axis shares the loops outside it, over the first axis none).
//
// 42 fuses the P@V product too. Its output O_o itself is the running (normalized) accumulator,
// updated in place after the statistics of the iteration; it carries the previous normalized
// output times the previous sum, so the previous sum needs a per-row buffer T written before S
// moves on:
//   T_s = if_then_else(k-1<0, 0, S_s)
//   O_o = if_then_else(P_s == -inf, 0, O_o * T_s * exp(P_s - M_s)) / S_s + exp(x - M_s) / S_s * V
// O_o is set at every k, so it is read only once set (never at k = 0, where P_s = -inf), and after
// the last k it is the product's value: no accumulator array, no copy nest.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "analysis/accumulation.h"
#include "analysis/names.h"
#include "strategies/dataflow_util.h"
#include "strategies/schedule_state.h"

namespace steptp::strategies {
namespace {

using namespace dataflow;
using leir::BinaryOp;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Func;
using leir::Loop;
using leir::Nest;
using leir::Program;
using leir::Stmt;

ExprPtr neg_inf() { return leir::make_neg(leir::make_number(std::numeric_limits<double>::infinity(), "inf")); }

bool is_binary(const Expr& e, BinaryOp op) { return e.kind == ExprKind::Binary && e.bop == op; }


// ---- pattern matching -------------------------------------------------------------------------

struct MaxNest {
  int item = -1;
  const Nest* nest = nullptr;
  const Stmt* stmt = nullptr;
  ExprPtr x;     // the reduced value
  size_t k = 0;  // index of the reduction loop in nest->loops
};

std::string match_max(const Program& p, const analysis::UseDef& ud, int i, MaxNest& m) {
  const Nest* n = flat_nest(p, i);
  if (!n || n->body.size() != 1) return "not a single-statement nest";
  const Stmt& s = n->body[0].stmt;
  auto acc = analysis::accumulation_of(s);
  if (!acc || acc->op != analysis::AccumOp::Max || !s.rhs->is_call(Func::Max))
    return "not a max reduction M=max(M,x)";
  const std::string& mt = s.lhs->tensor;
  m.x = s.rhs->args[0] == acc->self ? s.rhs->args[1] : s.rhs->args[0];
  if (reads_tensor(m.x, mt)) return fmt::format("the reduced value reads {} itself", mt);
  auto lhs_vars = vars_in(s.lhs);
  int reductions = 0;
  for (size_t l = 0; l < n->loops.size(); ++l) {
    if (lhs_vars.count(n->loops[l].var) || n->loops[l].extent == 1) continue;
    ++reductions;
    m.k = l;
  }
  if (reductions != 1) return fmt::format("{} reduction loops (exactly one is handled)", reductions);
  const Loop& k = n->loops[m.k];
  if (k.start != 0) return fmt::format("reduction loop {} does not start at 0", k.var);
  if (!plain_injective_lhs(*s.lhs, n->loops, {k.var}))
    return fmt::format("subscripts of {} are not distinct loop variables / constants", mt);
  if (!single_writer(ud, mt, i)) return fmt::format("{} is written elsewhere too", mt);
  if (contains_gather(s.lhs)) return "gather in the reduction target";
  m.item = i;
  m.nest = n;
  m.stmt = &s;
  return "";
}

struct SumNest {
  int item = -1;
  const Stmt* stmt = nullptr;
};

// x - M_s inside exp(): true when `e` is exp(x - M_s) for the max nest `m`.
bool is_exp_of_centered(const ExprPtr& e, const MaxNest& m) {
  if (!e->is_call(Func::Exp)) return false;
  const ExprPtr& d = e->args[0];
  return is_binary(*d, BinaryOp::Sub) && leir::equal(d->args[0], m.x) && leir::equal(d->args[1], m.stmt->lhs);
}

// The first item after the max nest that reads M must be S_s = S_s + exp(x - M_s).
std::string match_sum(const Program& p, const analysis::UseDef& ud, const MaxNest& m, SumNest& out) {
  const std::string& mt = m.stmt->lhs->tensor;
  int j = -1;
  for (int k = m.item + 1; k < static_cast<int>(p.body.size()) && j < 0; ++k)
    if (ud.items[k].reads.count(mt)) j = k;
  if (j < 0) return fmt::format("{} is never read", mt);
  const Nest* n = flat_nest(p, j);
  if (!n || n->body.size() != 1 || !same_headers(*n, *m.nest))
    return fmt::format("the first reader of {} (item {}) is not a nest with the same loops", mt, j);
  const Stmt& s = n->body[0].stmt;
  auto acc = analysis::accumulation_of(s);
  if (!acc || acc->op != analysis::AccumOp::Add || !is_binary(*s.rhs, BinaryOp::Add) || acc->other_self_reads != 0)
    return fmt::format("item {} is not a sum S=S+exp(x-M)", j);
  const ExprPtr& term = s.rhs->args[0] == acc->self ? s.rhs->args[1] : s.rhs->args[0];
  if (!is_exp_of_centered(term, m)) return fmt::format("item {} does not sum exp(x - {}) of the same x", j, mt);
  if (s.lhs->args.size() != m.stmt->lhs->args.size()) return "sum and max have different subscripts";
  for (size_t d = 0; d < s.lhs->args.size(); ++d)
    if (!leir::equal(s.lhs->args[d], m.stmt->lhs->args[d])) return "sum and max have different subscripts";
  if (!single_writer(ud, s.lhs->tensor, j)) return fmt::format("{} is written elsewhere too", s.lhs->tensor);
  if (!can_sink(ud, m.item, j)) return fmt::format("items between {} and {} conflict with the max nest", m.item, j);
  out.item = j;
  out.stmt = &s;
  return "";
}

struct NormNest {
  int item = -1;
  const Stmt* stmt = nullptr;
};

// The first reader of S after the sum: Z_{s,k} = exp(x - M_s) / S_s.
std::string match_norm(const Program& p, const analysis::UseDef& ud, const MaxNest& m, const SumNest& s, NormNest& out) {
  const std::string& st = s.stmt->lhs->tensor;
  int j = -1;
  for (int k = s.item + 1; k < static_cast<int>(p.body.size()) && j < 0; ++k)
    if (ud.items[k].reads.count(st)) j = k;
  if (j < 0) return fmt::format("{} is never read", st);
  const Nest* n = flat_nest(p, j);
  if (!n || n->body.size() != 1 || !same_headers(*n, *m.nest))
    return fmt::format("the first reader of {} (item {}) is not a nest with the same loops", st, j);
  const Stmt& z = n->body[0].stmt;
  if (!is_binary(*z.rhs, BinaryOp::Div) || !is_exp_of_centered(z.rhs->args[0], m) ||
      !leir::equal(z.rhs->args[1], s.stmt->lhs))
    return fmt::format("item {} is not exp(x - M) / S", j);
  // Z_{s,k}: the statistics' subscripts followed by the reduction variable.
  const auto& ms = m.stmt->lhs->args;
  if (z.lhs->args.size() != ms.size() + 1) return "the normalized tensor is not indexed [s..., k]";
  for (size_t d = 0; d < ms.size(); ++d)
    if (!leir::equal(z.lhs->args[d], ms[d])) return "the normalized tensor is not indexed [s..., k]";
  const ExprPtr& last = z.lhs->args.back();
  if (!last->is_var() || last->var_name() != m.nest->loops[m.k].var) return "the normalized tensor is not indexed [s..., k]";
  if (!single_writer(ud, z.lhs->tensor, j)) return fmt::format("{} is written elsewhere too", z.lhs->tensor);
  out.item = j;
  out.stmt = &z;
  return "";
}

// ---- 36: the running-max array -------------------------------------------------------------

struct Prefix {
  std::string r;       // running max
  ExprPtr kv;          // the reduction variable
  int64_t n = 0;       // its extent
  std::vector<ExprPtr> s;  // statistic subscripts
  const Expr* like = nullptr;
};

ExprPtr at(const Prefix& pf, const std::string& t, ExprPtr k) {
  auto idx = pf.s;
  idx.push_back(std::move(k));
  return access_like(*pf.like, t, idx);
}
ExprPtr at_k(const Prefix& pf, const std::string& t) { return at(pf, t, pf.kv); }
ExprPtr at_prev(const Prefix& pf, const std::string& t) { return at(pf, t, plus_const(pf.kv, -1)); }
ExprPtr at_last(const Prefix& pf, const std::string& t) { return at(pf, t, leir::make_int(pf.n - 1)); }
ExprPtr is_first(const ExprPtr& kv) {
  return leir::make_compare({plus_const(kv, -1), leir::make_int(0)}, {leir::CompareOp::Lt});
}
ExprPtr ite(ExprPtr c, ExprPtr a, ExprPtr b) { return leir::make_call(Func::IfThenElse, {c, a, b}); }

// R_{s,k} = max(if_then_else(k-1<0, -inf, R_{s,k-1}), x)
Stmt running_max(const Prefix& pf, const ExprPtr& x) {
  return make_stmt(at_k(pf, pf.r), leir::make_call(Func::Max, {ite(is_first(pf.kv), neg_inf(), at_prev(pf, pf.r)), x}));
}

Prefix make_prefix(const Program& p, const MaxNest& m) {
  Prefix pf;
  pf.r = fresh_tensor_names(p, 1)[0];
  const Loop& k = m.nest->loops[m.k];
  pf.kv = leir::make_var(k.var);
  pf.n = k.extent;
  pf.s = m.stmt->lhs->args;
  pf.like = m.stmt->lhs.get();
  return pf;
}

// The max nest's loops with the reduction loop made serial (the running values carry along it).
std::vector<Loop> scan_loops(const MaxNest& m) {
  auto loops = m.nest->loops;
  if (leir::requires_independence(loops[m.k].kind)) loops[m.k].kind = leir::LoopKind::Serial;
  return loops;
}

std::vector<Loop> loops_without(const std::vector<Loop>& loops, size_t k) {
  auto out = loops;
  out.erase(out.begin() + static_cast<long>(k));
  return out;
}

// `target_s = prefix_{s,n-1}` copies, one statement per pair, in a nest over the loops but k.
Nest copy_last(const MaxNest& m, const Prefix& pf, const std::vector<std::pair<ExprPtr, std::string>>& pairs) {
  std::vector<Stmt> stmts;
  for (const auto& [target, prefix] : pairs) stmts.push_back(make_stmt(target, at_last(pf, prefix)));
  return make_nest(loops_or_scalar(loops_without(m.nest->loops, m.k)), stmts);
}

// ---- 40-42: the one pass, running values per row ---------------------------------------------

// The statistics M_s and S_s updated in place, P_s the running max before this iteration.
struct OnePass {
  ExprPtr kv;      // the reduction variable
  ExprPtr m, s;    // M_s, S_s
  ExprPtr prev;    // P_s
  ExprPtr term;    // exp(x - M_s)
};

OnePass make_one_pass(const MaxNest& m, const SumNest& sum, const std::string& prev) {
  OnePass o;
  o.kv = leir::make_var(m.nest->loops[m.k].var);
  o.m = m.stmt->lhs;
  o.s = sum.stmt->lhs;
  o.prev = access_like(*o.m, prev, o.m->args);
  o.term = leir::make_call(Func::Exp, {leir::make_binary(BinaryOp::Sub, m.x, o.m)});
  return o;
}

// A running value carried to this iteration: 0 while everything so far is masked (P_s == -inf,
// always so at k = 0, where `value` is never evaluated), else rescaled to the new max.
ExprPtr carried(const OnePass& o, const ExprPtr& value) {
  auto scale = leir::make_call(Func::Exp, {leir::make_binary(BinaryOp::Sub, o.prev, o.m)});
  auto all_masked = leir::make_compare({o.prev, neg_inf()}, {leir::CompareOp::Eq});
  return ite(all_masked, leir::make_int(0), leir::make_binary(BinaryOp::Mul, value, scale));
}

// P_s = if_then_else(k-1<0, -inf, M_s); M_s = max(M_s, x); S_s = carried(S_s) + exp(x - M_s).
// `before_max` statements (flash's previous sum) run after P_s, while M_s and S_s still hold the
// previous iteration's values.
std::vector<Stmt> one_pass(const OnePass& o, const MaxNest& m, std::vector<Stmt> before_max = {}) {
  std::vector<Stmt> out{make_stmt(o.prev, ite(is_first(o.kv), neg_inf(), o.m))};
  for (auto& s : before_max) out.push_back(std::move(s));
  out.push_back(*m.stmt);
  out.push_back(make_stmt(o.s, leir::make_binary(BinaryOp::Add, carried(o, o.s), o.term)));
  return out;
}

// Removes `items` (sorted ascending) and inserts `replacement` where the last one was.
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

// Chain items may all move down to `to` past the items that are not part of the chain.
bool chain_can_sink(const analysis::UseDef& ud, const std::vector<int>& chain, int to) {
  for (int c : chain)
    for (int k = c + 1; k < to; ++k) {
      if (std::find(chain.begin(), chain.end(), k) != chain.end()) continue;
      if (conflict(ud.items[c], ud.items[k])) return false;
    }
  return true;
}

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

// ---- 36 normal_loop_max_to_prefix_max ---------------------------------------------------------

class PrefixMax final : public Strategy {
 public:
  std::string_view name() const override { return "normal_loop_max_to_prefix_max"; }
  std::string_view description() const override {
    return "max reduction -> running-max array over the reduction loop + read of its last element";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    const auto& ud = st.use_def();
    MaxNest m;
    if (std::string why = match_max(p, ud, site_item(s), m); !why.empty()) return refuse(s, why);
    Prefix pf = make_prefix(p, m);
    std::vector<leir::Item> block;
    block.push_back(leir::Item::of(make_nest(scan_loops(m), {running_max(pf, m.x)})));
    block.push_back(leir::Item::of(copy_last(m, pf, {{m.stmt->lhs, pf.r}})));
    return candidate(st, s, params, Exactness::Exact, splice(p, {m.item}, std::move(block)));
  }

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    const auto& ud = st.use_def();
    for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
      MaxNest m;
      Considered c;
      c.site.path = {i};
      c.site.description = fmt::format("item {}", i);
      c.refusal = match_max(p, ud, i, m);
      if (c.refusal == "not a single-statement nest" || c.refusal == "not a max reduction M=max(M,x)") continue;
      c.site.description = fmt::format("max reduction into {} (item {})", m.stmt ? m.stmt->lhs->tensor : flat_nest(p, i)->body[0].stmt.lhs->tensor, i);
      out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
    }
    return out;
  }
};

// ---- 40 / 41: max + sum-of-exp (+ normalize) --------------------------------------------------

enum class Mode { SumOnly, OnlineSoftmax };

class PrefixSoftmax : public Strategy {
 public:
  explicit PrefixSoftmax(Mode mode) : mode_(mode) {}
  std::string_view name() const override {
    return mode_ == Mode::SumOnly ? "normal_loop_summation_on_exp_to_prefix_summation_on_exp" : "online_softmax";
  }
  std::string_view description() const override {
    return mode_ == Mode::SumOnly
               ? "max + sum-of-exp reductions -> one pass with running max and rescaled running sum"
               : "softmax's max, sum-of-exp and normalize -> per row, one statistics pass then the normalization";
  }
  Exactness exactness() const override { return Exactness::Reassoc; }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
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

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    const auto& ud = st.use_def();
    for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
      // Sites are max reductions; other items are not worth listing.
      const Nest* n = flat_nest(p, i);
      if (!n || n->body.size() != 1 || !n->body[0].stmt.rhs->is_call(Func::Max)) continue;
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

 private:
  std::string match(const Program& p, const analysis::UseDef& ud, int i, MaxNest& m, SumNest& sum) const {
    if (auto r = match_max(p, ud, i, m); !r.empty()) return r;
    if (auto r = match_sum(p, ud, m, sum); !r.empty()) return r;
    if (mode_ == Mode::OnlineSoftmax) {
      RowNorm norm;
      if (auto r = match_row_norm(p, ud, m, sum, norm); !r.empty()) return r;
    }
    return "";
  }

  Mode mode_;
};

struct SumOnlySoftmax final : PrefixSoftmax {
  SumOnlySoftmax() : PrefixSoftmax(Mode::SumOnly) {}
};
struct OnlineSoftmax final : PrefixSoftmax {
  OnlineSoftmax() : PrefixSoftmax(Mode::OnlineSoftmax) {}
};

// ---- 42 flashattention_wo_tiling --------------------------------------------------------------

struct Attention {
  MaxNest m;
  SumNest sum;
  NormNest norm;
  int pv = -1;
  const Nest* pv_nest = nullptr;
  const Stmt* pv_stmt = nullptr;
  ExprPtr v;                                 // the factor multiplied with Z
  std::map<std::string, ExprPtr> var_map;    // P@V loop variables -> fused-nest expressions
  std::vector<Loop> inner;                   // output-column loops (renamed)
  std::string kk;                            // the product's reduction variable
};

std::string match_attention(const Program& p, const analysis::UseDef& ud, int i, Attention& a) {
  if (auto r = match_max(p, ud, i, a.m); !r.empty()) return r;
  if (auto r = match_sum(p, ud, a.m, a.sum); !r.empty()) return r;
  if (auto r = match_norm(p, ud, a.m, a.sum, a.norm); !r.empty()) return r;
  const std::string& z = a.norm.stmt->lhs->tensor;
  if (is_known(p, z)) return fmt::format("the softmax result {} is a known tensor", z);
  auto readers = ud.readers(z);
  if (readers.size() != 1) return fmt::format("{} has {} readers (the P@V product must be the only one)", z, readers.size());
  a.pv = readers[0];
  const Nest* n = flat_nest(p, a.pv);
  if (!n || n->body.size() != 1) return "the reader of the softmax is not a single-statement nest";
  const Stmt& s = n->body[0].stmt;
  auto acc = analysis::accumulation_of(s);
  if (!acc || acc->op != analysis::AccumOp::Add || !is_binary(*s.rhs, BinaryOp::Add) || acc->other_self_reads != 0)
    return "the reader of the softmax is not a sum of products O=O+Z*V";
  const ExprPtr& term = s.rhs->args[0] == acc->self ? s.rhs->args[1] : s.rhs->args[0];
  if (!is_binary(*term, BinaryOp::Mul)) return "the reader of the softmax is not a sum of products O=O+Z*V";
  ExprPtr zr;
  if (term->args[0]->is_access() && term->args[0]->tensor == z) zr = term->args[0], a.v = term->args[1];
  else if (term->args[1]->is_access() && term->args[1]->tensor == z) zr = term->args[1], a.v = term->args[0];
  else return "the product does not multiply the softmax result directly";
  if (reads_tensor(a.v, z) || reads_tensor(a.v, s.lhs->tensor)) return "the other factor reads Z or O";
  // In the fused pass the statistics are running values: the other factor must not read them.
  if (reads_tensor(a.v, a.m.stmt->lhs->tensor) || reads_tensor(a.v, a.sum.stmt->lhs->tensor))
    return "the other factor reads the softmax statistics";
  // Z_{u..., kk}: u map onto the statistics' subscripts, kk is the product's reduction variable.
  const auto& zl = a.norm.stmt->lhs->args;
  std::set<std::string> mapped;
  for (size_t d = 0; d < zl.size(); ++d) {
    const ExprPtr& r = zr->args[d];
    if (zl[d]->is_number()) {
      if (!r->is_number() || r->value != zl[d]->value) return "the product reads Z at other constant subscripts";
      continue;
    }
    if (!r->is_var() || mapped.count(r->var_name())) return "the product reads Z through non-plain subscripts";
    // Ranges must agree: the product's loop of this variable equals the softmax loop.
    const Loop* pl = nullptr;
    const Loop* ml = nullptr;
    for (const auto& l : n->loops) if (l.var == r->var_name()) pl = &l;
    for (const auto& l : a.m.nest->loops) if (l.var == zl[d]->var_name()) ml = &l;
    if (!pl || !ml || pl->extent != ml->extent || pl->start != ml->start) return "loop ranges of Z's dimensions differ";
    a.var_map[r->var_name()] = zl[d];
    mapped.insert(r->var_name());
  }
  if (!zr->args.back()->is_var()) return "Z's last subscript is not a loop variable";
  const std::string kk = a.kk = zr->args.back()->var_name();
  if (vars_in(s.lhs).count(kk)) return "Z's last dimension is not the product's reduction";
  for (const auto& l : n->loops)
    if (l.var == kk && (l.extent != a.m.nest->loops[a.m.k].extent || l.start != 0))
      return "the product's reduction loop does not cover the softmax axis";
  if (!plain_injective_lhs(*s.lhs, n->loops, {kk})) return "the product's output subscripts are not plain loop variables";
  if (!single_writer(ud, s.lhs->tensor, a.pv)) return fmt::format("{} is written elsewhere too", s.lhs->tensor);
  if (!chain_can_sink(ud, {a.m.item, a.sum.item, a.norm.item}, a.pv))
    return "items between the softmax and the product conflict with it";
  // Output-column loops run inside the fused nest under names fresh in the whole program.
  analysis::NameAllocator names(p);
  for (const auto& l : n->loops) {
    if (l.var == kk) { a.var_map[l.var] = leir::make_var(a.m.nest->loops[a.m.k].var); continue; }
    if (mapped.count(l.var)) continue;
    Loop inner = l;
    inner.var = names.fresh_var();
    a.var_map[l.var] = leir::make_var(inner.var);
    a.inner.push_back(inner);
  }
  a.pv_nest = n;
  a.pv_stmt = &s;
  return "";
}

class FlashAttention final : public Strategy {
 public:
  std::string_view name() const override { return "flashattention_wo_tiling"; }
  std::string_view description() const override {
    return "softmax followed by its P@V product -> one fused online pass (flash attention without tiling)";
  }
  Exactness exactness() const override { return Exactness::Reassoc; }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    const auto& ud = st.use_def();
    Attention a;
    if (std::string why = match_attention(p, ud, site_item(s), a); !why.empty()) return refuse(s, why);
    auto names = fresh_tensor_names(p, 2);
    const MaxNest& m = a.m;
    OnePass op = make_one_pass(m, a.sum, names[0]);
    // T_s: the previous sum, read by the output's update after S_s has moved on.
    ExprPtr prev_sum = access_like(*op.s, names[1], op.s->args);
    auto pass = one_pass(op, m, {make_stmt(prev_sum, ite(is_first(op.kv), leir::make_int(0), op.s))});
    // O_o in fused-nest variables, updated in place.
    std::vector<ExprPtr> o;
    for (const auto& idx : a.pv_stmt->lhs->args) o.push_back(substitute_vars(idx, a.var_map));
    ExprPtr out = access_like(*a.pv_stmt->lhs, a.pv_stmt->lhs->tensor, o);
    ExprPtr carried_out = carried(op, leir::make_binary(BinaryOp::Mul, out, prev_sum));
    ExprPtr weight = leir::make_binary(BinaryOp::Div, op.term, op.s);
    ExprPtr rhs = leir::make_binary(BinaryOp::Add, leir::make_binary(BinaryOp::Div, carried_out, op.s),
                                    leir::make_binary(BinaryOp::Mul, weight, substitute_vars(a.v, a.var_map)));
    Nest inner = make_nest(a.inner, {make_stmt(out, rhs)});
    Nest fused = make_nest(scan_loops(m), std::move(pass));
    if (a.inner.empty()) fused.body.push_back(inner.body[0]);
    else fused.body.push_back(leir::Item::of(std::move(inner)));
    std::vector<leir::Item> block;
    block.push_back(leir::Item::of(std::move(fused)));
    return candidate(st, s, params, Exactness::Reassoc, splice(p, {m.item, a.sum.item, a.norm.item, a.pv}, std::move(block)));
  }

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    const auto& ud = st.use_def();
    for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
      const Nest* n = flat_nest(p, i);
      if (!n || n->body.size() != 1 || !n->body[0].stmt.rhs->is_call(Func::Max)) continue;
      Attention a;
      Considered c;
      c.refusal = match_attention(p, ud, i, a);
      c.site.path = {i};
      for (int k : {a.sum.item, a.norm.item, a.pv})
        if (k >= 0) c.site.path.push_back(k);
      c.site.description = fmt::format("softmax whose max reduction is item {}", i);
      out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
    }
    return out;
  }
};

RegisterStrategy<PrefixMax> reg_prefix_max(36);
RegisterStrategy<SumOnlySoftmax> reg_prefix_sum(40);
RegisterStrategy<OnlineSoftmax> reg_online(41);
RegisterStrategy<FlashAttention> reg_flash(42);

}  // namespace
}  // namespace steptp::strategies
