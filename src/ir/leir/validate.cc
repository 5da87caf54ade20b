// Static validation (LEIR.md §3-4). Every check reports only what is certain (no false alarms on
// valid programs); what cannot be decided statically is left to the interpreter's dynamic checks.
//
// Index analysis. A subscript is analysed as an affine form (ir/leir/affine.h) over loop variables (integer
// coefficients) when it is built from loop variables, integer literals, + - unary - and * by a
// constant; otherwise by interval arithmetic (// and % by constants); subscripts reading tensors
// (gathers) have no static range. Ranges of loop variables come from the loop headers, narrowed
// inside if_then_else branches by conditions that bound one loop variable against constants
// (`1<=c<11&1<=d<11`, `a-1<0` in the else branch). A branch whose narrowed range is empty never
// runs and is not checked.
//
// Unset reads (decided only for reads that run unconditionally — outside if_then_else branches —
// and are not the accumulator of an accumulation): (a) a non-read-only tensor read by a statement
// that no write can precede (no write earlier in program order, none in a loop shared with the
// reader); (b) a read whose subscript in some dimension is a single loop variable plus a constant
// (so every value of its range is reached) and goes outside the hull of every write that can
// precede it.
//
// Independence of a P/V/B loop over v: for every pair (write, access) of one tensor inside the
// loop, two iterations i != j of v are looked for in which both touch the same element; the other
// loop variables inside the loop take values independently per iteration, those outside are
// shared. Subscript pairs `x+k1` vs `y+k2` give exact equalities solved with a union-find over
// offsets; identical v-free subscripts are satisfied by equal values; anything else is used only
// to prove independence. Pairs where both statements are accumulations of the tensor are the
// parallel-reduction exception. Reads inside if_then_else count only under exactly understood
// guards. A uniform store (ir/leir/uniform_store.h) does not conflict with itself.
#include "ir/leir/validate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "ir/leir/affine.h"
#include "ir/leir/identifiers.h"
#include "ir/leir/int_math.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/printer.h"
#include "ir/leir/uniform_store.h"

namespace steptp::leir {

std::string Diagnostic::format() const { return format_diagnostic(file, loc, message); }
LeirError Diagnostic::to_error() const { return LeirError(file, loc, message); }

namespace {

struct Range {
  int64_t lo = 0;
  int64_t hi = -1;
  bool empty() const { return lo > hi; }
};

// One loop variable in scope: its loop, its range (possibly narrowed by guards).
struct Binding {
  const Loop* loop;
  Range range;
};
using Env = std::vector<Binding>;  // innermost last

const Binding* lookup(const Env& env, const std::string& name) {
  for (auto it = env.rbegin(); it != env.rend(); ++it)
    if (it->loop->var == name) return &*it;
  return nullptr;
}
Binding* lookup(Env& env, const std::string& name) {
  for (auto it = env.rbegin(); it != env.rend(); ++it)
    if (it->loop->var == name) return &*it;
  return nullptr;
}

// sum(coef[loop] * loop var) + k
struct Affine {
  std::map<const Loop*, int64_t> coef;
  int64_t k = 0;
};

// Loop variables by the loop that binds them; literals up to 9e15.
std::optional<Affine> affine_of(const Expr& e, const Env& env) {
  auto form = affine_form<const Loop*>(
      e,
      [&](const std::string& name) {
        const Binding* b = lookup(env, name);
        return b ? std::optional<const Loop*>(b->loop) : std::nullopt;
      },
      {.max_literal = 9'000'000'000'000'000, .max_product = std::nullopt});
  if (!form) return std::nullopt;
  Affine a;
  for (const auto& [l, c] : form->terms) a.coef[l] = c;
  a.k = form->constant;
  return a;
}

std::optional<Range> affine_range(const Affine& a, const Env& env) {
  Range r{a.k, a.k};
  for (auto [l, c] : a.coef) {
    const Binding* b = nullptr;
    for (const auto& x : env)
      if (x.loop == l) b = &x;
    if (!b || b->range.empty()) return std::nullopt;
    int64_t p, q;
    if (!mul_ok(c, b->range.lo, &p) || !mul_ok(c, b->range.hi, &q)) return std::nullopt;
    if (!add_ok(r.lo, std::min(p, q), &r.lo) || !add_ok(r.hi, std::max(p, q), &r.hi)) return std::nullopt;
  }
  return r;
}

// Interval of an integer subscript under the guards in scope (affine forms keep i-i at 0);
// nullopt when it has no static range (gathers, calls, ...).
std::optional<Range> guarded_range(const Expr& e, const Env& env) {
  if (auto a = affine_of(e, env)) return affine_range(*a, env);
  if (e.kind == ExprKind::Compare) return Range{0, 1};
  if (e.kind != ExprKind::Binary || (e.bop != BinaryOp::FloorDiv && e.bop != BinaryOp::Mod)) return std::nullopt;
  auto x = guarded_range(*e.args[0], env);
  auto y = guarded_range(*e.args[1], env);
  if (!x || !y || y->lo != y->hi || y->lo == 0) return std::nullopt;
  int64_t d = y->lo;
  if (e.bop == BinaryOp::FloorDiv) {
    if (d > 0) return Range{floor_div(x->lo, d), floor_div(x->hi, d)};
    return Range{floor_div(x->hi, d), floor_div(x->lo, d)};
  }
  if (d < 0) return std::nullopt;
  if (x->lo >= 0 && x->hi < d) return x;
  return Range{0, d - 1};
}

// A single loop variable times a coefficient plus a constant: c*v + k.
struct Linear1 {
  Binding* var;
  int64_t c;
  int64_t k;
};

std::optional<Linear1> linear1(const Expr& e, Env& env) {
  auto a = affine_of(e, env);
  if (!a || a->coef.size() != 1) return std::nullopt;
  auto [loop, c] = *a->coef.begin();
  for (auto it = env.rbegin(); it != env.rend(); ++it)
    if (it->loop == loop) return Linear1{&*it, c, a->k};
  return std::nullopt;
}

CompareOp negate(CompareOp op) {
  switch (op) {
    case CompareOp::Lt: return CompareOp::Ge;
    case CompareOp::Le: return CompareOp::Gt;
    case CompareOp::Gt: return CompareOp::Le;
    case CompareOp::Ge: return CompareOp::Lt;
    case CompareOp::Eq: return CompareOp::Ne;
    case CompareOp::Ne: return CompareOp::Eq;
  }
  return op;
}
CompareOp flip(CompareOp op) {  // a op b  <=>  b flip(op) a
  switch (op) {
    case CompareOp::Lt: return CompareOp::Gt;
    case CompareOp::Le: return CompareOp::Ge;
    case CompareOp::Gt: return CompareOp::Lt;
    case CompareOp::Ge: return CompareOp::Le;
    default: return op;
  }
}

// What a guard taught us: `exact` when the branch runs for exactly the narrowed ranges.
struct GuardInfo {
  bool exact = true;
  bool reachable = true;
};

// c*v + k <= u (upper) / >= l (lower) narrow v's range.
void bound_above(Binding& b, int64_t c, int64_t k, int64_t u) {
  if (c > 0) b.range.hi = std::min(b.range.hi, floor_div(u - k, c));
  else b.range.lo = std::max(b.range.lo, ceil_div(u - k, c));
}
void bound_below(Binding& b, int64_t c, int64_t k, int64_t l) {
  if (c > 0) b.range.lo = std::max(b.range.lo, ceil_div(l - k, c));
  else b.range.hi = std::min(b.range.hi, floor_div(l - k, c));
}

// lhs op rhs holds: narrow the variable of a single-variable side by the range of the other side.
void refine_pair(const Expr& lhs, CompareOp op, const Expr& rhs, Env& env, GuardInfo& g) {
  auto apply = [&](const Linear1& lin, CompareOp o, Range other) {
    const int64_t lim = int64_t{1} << 40;  // keep the arithmetic far from overflow
    if (other.lo < -lim || other.hi > lim || lin.k < -lim || lin.k > lim || lin.c < -lim || lin.c > lim) {
      g.exact = false;
      return;
    }
    Binding& b = *lin.var;
    switch (o) {
      case CompareOp::Lt: bound_above(b, lin.c, lin.k, other.hi - 1); break;
      case CompareOp::Le: bound_above(b, lin.c, lin.k, other.hi); break;
      case CompareOp::Gt: bound_below(b, lin.c, lin.k, other.lo + 1); break;
      case CompareOp::Ge: bound_below(b, lin.c, lin.k, other.lo); break;
      case CompareOp::Eq:
        bound_above(b, lin.c, lin.k, other.hi);
        bound_below(b, lin.c, lin.k, other.lo);
        break;
      case CompareOp::Ne:
        g.exact = false;
        return;
    }
    if (other.lo != other.hi) g.exact = false;  // relational: the box over-approximates
  };
  auto l1 = linear1(lhs, env);
  auto r1 = linear1(rhs, env);
  if (!l1 && !r1) {
    g.exact = false;
    return;
  }
  // Ranges of both sides before narrowing either.
  auto lr = guarded_range(lhs, env);
  auto rr = guarded_range(rhs, env);
  if (l1 && rr) apply(*l1, op, *rr);
  else if (l1) g.exact = false;
  if (r1 && lr) apply(*r1, flip(op), *lr);
  else if (r1) g.exact = false;
  if (l1 && r1) g.exact = false;
}

// Narrows `env` assuming `cond` evaluates to `truth`.
void refine(const Expr& cond, bool truth, Env& env, GuardInfo& g) {
  if (cond.kind == ExprKind::Compare) {
    if (!truth && cond.cmp_ops.size() != 1) {
      g.exact = false;
      return;
    }
    for (size_t i = 0; i < cond.cmp_ops.size(); ++i)
      refine_pair(*cond.args[i], truth ? cond.cmp_ops[i] : negate(cond.cmp_ops[i]), *cond.args[i + 1], env, g);
  } else if (cond.kind == ExprKind::Binary && cond.bop == BinaryOp::And && truth) {
    refine(*cond.args[0], true, env, g);
    refine(*cond.args[1], true, env, g);
  } else if (cond.kind == ExprKind::Binary && cond.bop == BinaryOp::Or && !truth) {
    refine(*cond.args[0], false, env, g);
    refine(*cond.args[1], false, env, g);
  } else {
    g.exact = false;
  }
  for (const auto& b : env)
    if (b.range.empty()) g.reachable = false;
}

// The accumulation rule (LEIR.md §3): the right-side terms that read the written element and
// read as the operator's identity while it is unset. Empty when the statement is no accumulation.
void flatten_sum(const Expr& e, bool positive, std::vector<std::pair<const Expr*, bool>>& out) {
  if (e.kind == ExprKind::Binary && (e.bop == BinaryOp::Add || e.bop == BinaryOp::Sub)) {
    flatten_sum(*e.args[0], positive, out);
    flatten_sum(*e.args[1], e.bop == BinaryOp::Add ? positive : !positive, out);
    return;
  }
  out.emplace_back(&e, positive);
}
void flatten_product(const Expr& e, std::vector<const Expr*>& out) {
  if (e.kind == ExprKind::Binary && e.bop == BinaryOp::Mul) {
    flatten_product(*e.args[0], out);
    flatten_product(*e.args[1], out);
    return;
  }
  out.push_back(&e);
}
std::set<const Expr*> accumulator_terms(const Stmt& s) {
  std::set<const Expr*> out;
  const Expr& lhs = *s.lhs;
  const Expr& rhs = *s.rhs;
  if (rhs.kind == ExprKind::Call && (rhs.func == Func::Max || rhs.func == Func::Min)) {
    for (const auto& a : rhs.args)
      if (equal(*a, lhs)) out.insert(a.get());
  } else if (rhs.kind == ExprKind::Binary && (rhs.bop == BinaryOp::Add || rhs.bop == BinaryOp::Sub)) {
    std::vector<std::pair<const Expr*, bool>> terms;
    flatten_sum(rhs, true, terms);
    for (auto [t, positive] : terms)
      if (positive && equal(*t, lhs)) out.insert(t);
  } else if (rhs.kind == ExprKind::Binary && rhs.bop == BinaryOp::Mul) {
    std::vector<const Expr*> terms;
    flatten_product(rhs, terms);
    for (const Expr* t : terms)
      if (equal(*t, lhs)) out.insert(t);
  }
  return out;
}

std::string show(const Expr& e) { return print_expr(std::make_shared<Expr>(e)); }
std::string show_range(Range r) { return fmt::format("[{},{}]", r.lo, r.hi); }
std::string loc_text(SourceLoc l) { return fmt::format("{}:{}", l.line, l.col); }

// One tensor access of a statement, with the variable ranges under which it runs.
struct AccessRec {
  const Expr* e = nullptr;
  bool is_write = false;
  bool conditional = false;   // inside an if_then_else branch
  bool guard_exact = true;    // the branch runs for exactly `env` (all guards understood)
  bool accumulator = false;   // the accumulator read of an accumulation statement
  Env env;
};

struct StmtRec {
  const Stmt* s = nullptr;
  std::vector<const Loop*> loops;  // enclosing, outermost first
  bool accumulation = false;
  std::vector<AccessRec> accesses;
};

// Counting rule documented in validate.h.
double count_ops(const Expr& e) {
  double n = 0;
  for_each_expr(std::make_shared<Expr>(e), [&](const Expr& x) {
    switch (x.kind) {
      case ExprKind::Unary:
      case ExprKind::Binary:
      case ExprKind::Call: n += 1; break;
      case ExprKind::Compare: n += static_cast<double>(x.cmp_ops.size()); break;
      case ExprKind::Access: break;
      default: break;
    }
  });
  // Subscripts are address arithmetic, not flops: subtract what the accesses' subscripts held.
  for_each_expr(std::make_shared<Expr>(e), [&](const Expr& x) {
    if (!x.is_access()) return;
    for (const auto& idx : x.args)
      for_each_expr(idx, [&](const Expr& y) {
        if (y.kind == ExprKind::Unary || y.kind == ExprKind::Binary || y.kind == ExprKind::Call) n -= 1;
        else if (y.kind == ExprKind::Compare) n -= static_cast<double>(y.cmp_ops.size());
      });
  });
  return n;
}

class Validator {
 public:
  explicit Validator(const Program& p) : p_(p) {}

  ValidationReport run() {
    try {
      check_names(p_);
    } catch (const LeirError& e) {
      error(e.loc(), e.message());
      return std::move(report_);
    }
    Env env;
    std::vector<const Loop*> loops;
    walk(p_.body, env, loops);
    if (!report_.errors.empty()) return std::move(report_);  // the table would repeat them
    try {
      table_ = build_tensor_table(p_);
    } catch (const LeirError& e) {
      error(e.loc(), e.message());
      return std::move(report_);
    }
    report_.summary = summarize(p_, *table_);
    check_outputs_written();
    for (const auto& s : stmts_) check_read_only(s);
    for (const auto& s : stmts_) check_bounds(s);
    check_unset_reads();
    check_independence(p_.body);
    std::stable_sort(report_.errors.begin(), report_.errors.end(), [](const Diagnostic& a, const Diagnostic& b) {
      return std::tie(a.loc.line, a.loc.col) < std::tie(b.loc.line, b.loc.col);
    });
    return std::move(report_);
  }

 private:
  void error(SourceLoc loc, std::string msg) { report_.errors.push_back({p_.file, loc, std::move(msg)}); }

  // ---- structure: loop variables, statement records -------------------------------------------

  void walk(const std::vector<Item>& body, Env& env, std::vector<const Loop*>& loops) {
    for (const auto& item : body) {
      if (item.is_stmt()) {
        visit_stmt(item.stmt, env, loops);
        continue;
      }
      size_t pushed = 0;
      for (const auto& l : item.nest.loops) {
        if (const Binding* outer = lookup(env, l.var))
          error(l.loc, fmt::format("loop {} rebinds variable '{}' of the enclosing loop {} at {}; give it a "
                                   "name no enclosing loop uses",
                                   print_loop(l), l.var, print_loop(*outer->loop), loc_text(outer->loop->loc)));
        int64_t end = 0;
        if (__builtin_add_overflow(l.start, l.extent, &end)) {
          error(l.loc, fmt::format("loop {} runs past the largest 64-bit integer", l.var));
          end = l.start;  // checked as if empty, so nothing below overflows
        }
        env.push_back({&l, Range{l.start, end - 1}});
        loops.push_back(&l);
        ++pushed;
      }
      walk(item.nest.body, env, loops);
      env.resize(env.size() - pushed);
      loops.resize(loops.size() - pushed);
    }
  }

  void check_vars(const ExprPtr& e, const Env& env) {
    for_each_expr(e, [&](const Expr& x) {
      if (!x.is_var() || lookup(env, x.var_name())) return;
      std::vector<std::string> names;
      for (const auto& b : env) names.push_back(b.loop->var);
      error(x.loc, fmt::format("loop variable '{}' is not bound by an enclosing loop ({})", x.var_name(),
                               names.empty() ? std::string("no loop encloses this statement")
                                             : fmt::format("bound here: {}", fmt::join(names, ", "))));
    });
  }

  void visit_stmt(const Stmt& s, const Env& env, const std::vector<const Loop*>& loops) {
    size_t before = report_.errors.size();
    check_vars(s.lhs, env);
    check_vars(s.rhs, env);
    if (report_.errors.size() != before) return;
    StmtRec rec;
    rec.s = &s;
    rec.loops = loops;
    const std::set<const Expr*> acc = accumulator_terms(s);
    rec.accumulation = !acc.empty();
    AccessRec w;
    w.e = s.lhs.get();
    w.is_write = true;
    w.env = env;
    rec.accesses.push_back(w);
    for (const auto& idx : s.lhs->args) collect(*idx, env, false, true, acc, rec);
    collect(*s.rhs, env, false, true, acc, rec);
    stmts_.push_back(std::move(rec));
  }

  void collect(const Expr& e, const Env& env, bool conditional, bool exact, const std::set<const Expr*>& acc,
               StmtRec& rec) {
    if (e.kind == ExprKind::Call && e.func == Func::IfThenElse) {
      collect(*e.args[0], env, conditional, exact, acc, rec);
      for (int branch = 1; branch <= 2; ++branch) {
        Env narrowed = env;
        GuardInfo g;
        refine(*e.args[0], branch == 1, narrowed, g);
        if (!g.reachable) continue;  // this branch never runs
        collect(*e.args[branch], narrowed, true, exact && g.exact, acc, rec);
      }
      return;
    }
    if (e.is_access()) {
      AccessRec a;
      a.e = &e;
      a.conditional = conditional;
      a.guard_exact = exact;
      a.accumulator = acc.count(&e) > 0;
      a.env = env;
      rec.accesses.push_back(std::move(a));
    }
    for (const auto& c : e.args) collect(*c, env, conditional, exact, acc, rec);
  }

  // ---- signature ------------------------------------------------------------------------------

  void check_outputs_written() {
    std::set<std::string> written;
    for (const auto& s : stmts_) written.insert(s.s->lhs->tensor);
    for (const auto& d : p_.known)
      if (d.role == Role::Output && !written.count(d.name))
        error(d.loc, fmt::format("output {} is never written by the body; every output must be set", d.name));
  }

  void check_read_only(const StmtRec& s) {
    const Expr& lhs = *s.s->lhs;
    const TensorInfo* t = table_->find(lhs.tensor);
    if (t && t->read_only())
      error(lhs.loc, fmt::format("statement writes {} {}, which is read-only; only outputs and intermediates may "
                                 "be written (write an intermediate instead)",
                                 to_string(t->role), lhs.tensor));
  }

  // ---- bounds ---------------------------------------------------------------------------------

  void check_bounds(const StmtRec& s) {
    for (const auto& a : s.accesses) {
      // Under a guard on loop variables that we could not read exactly, the static box may
      // include iterations that never run the access: leave it to the interpreter.
      if (!a.guard_exact && guard_mentions_loop_vars_) continue;
      const TensorInfo* t = table_->find(a.e->tensor);
      if (!t || t->shape.size() != a.e->args.size()) continue;
      for (size_t d = 0; d < a.e->args.size(); ++d) {
        const Expr& idx = *a.e->args[d];
        if (idx.kind == ExprKind::Number && static_cast<double>(static_cast<int64_t>(idx.value)) != idx.value) {
          error(idx.loc.line ? idx.loc : a.e->loc,
                fmt::format("subscript {} of {} is '{}', not an integer; subscripts are integer expressions", d,
                            show(*a.e), idx.text));
          continue;
        }
        auto r = guarded_range(idx, a.env);
        if (!r) continue;
        int64_t dim = t->shape[d];
        if (r->lo >= 0 && r->hi < dim) continue;
        error(a.e->loc,
              fmt::format("{} {} is out of bounds: subscript {} '{}' ranges over {} but dimension {} of {} has size "
                          "{} (valid indices [0,{}])",
                          a.is_write ? "write" : "access", show(*a.e), d, print_expr(a.e->args[d]), show_range(*r), d,
                          a.e->tensor, dim, dim - 1));
      }
    }
  }

  // ---- unset reads ----------------------------------------------------------------------------

  // True when statement `w` can run before statement `r` (index into stmts_): earlier in program
  // order, or sharing an enclosing loop (an earlier iteration), or `r` itself.
  bool may_precede(size_t w, size_t r) const {
    if (w <= r) return true;
    const auto& a = stmts_[w].loops;
    const auto& b = stmts_[r].loops;
    return !a.empty() && !b.empty() && a.front() == b.front();
  }

  void check_unset_reads() {
    for (size_t r = 0; r < stmts_.size(); ++r) {
      for (const auto& a : stmts_[r].accesses) {
        if (a.is_write || a.conditional || a.accumulator) continue;
        const TensorInfo* t = table_->find(a.e->tensor);
        if (!t || t->read_only() || t->shape.size() != a.e->args.size()) continue;
        std::vector<size_t> writers;
        for (size_t w = 0; w < stmts_.size(); ++w)
          if (stmts_[w].s->lhs->tensor == a.e->tensor && may_precede(w, r)) writers.push_back(w);
        if (writers.empty()) {
          error(a.e->loc, fmt::format("{} reads {} before any statement writes it (every element of a{} tensor "
                                      "starts unset); write it first or make this an accumulation",
                                      show(*a.e), a.e->tensor, t->known ? "n output" : "n intermediate"));
          continue;
        }
        check_read_inside_writes(a, writers);
      }
    }
  }

  void check_read_inside_writes(const AccessRec& a, const std::vector<size_t>& writers) {
    for (size_t d = 0; d < a.e->args.size(); ++d) {
      auto aff = affine_of(*a.e->args[d], a.env);
      if (!aff || aff->coef.size() > 1) continue;
      if (aff->coef.size() == 1 && std::abs(aff->coef.begin()->second) != 1) continue;
      auto rr = affine_range(*aff, a.env);
      if (!rr) continue;
      Range hull{INT64_MAX, INT64_MIN};
      bool known = true;
      for (size_t w : writers) {
        const Expr& lhs = *stmts_[w].s->lhs;
        auto wr = guarded_range(*lhs.args[d], stmts_[w].accesses.front().env);
        if (!wr) {
          known = false;
          break;
        }
        hull.lo = std::min(hull.lo, wr->lo);
        hull.hi = std::max(hull.hi, wr->hi);
      }
      if (!known || (rr->lo >= hull.lo && rr->hi <= hull.hi)) continue;
      int64_t bad = rr->lo < hull.lo ? rr->lo : rr->hi;
      error(a.e->loc, fmt::format("{} reads unset elements of {}: subscript {} '{}' reaches {} but the writes that "
                                  "can run before this read only set indices {} of dimension {}",
                                  show(*a.e), a.e->tensor, d, print_expr(a.e->args[d]), bad, show_range(hull), d));
      return;
    }
  }

  // ---- independence of P/V/B loops ------------------------------------------------------------

  void check_independence(const std::vector<Item>& body) {
    for (const auto& item : body) {
      if (!item.is_nest()) continue;
      for (const auto& l : item.nest.loops)
        if (requires_independence(l.kind) && l.extent >= 2) check_loop(l);
      check_independence(item.nest.body);
    }
  }

  // Statements inside loop `l`.
  std::vector<const StmtRec*> inside(const Loop& l) const {
    std::vector<const StmtRec*> out;
    for (const auto& s : stmts_)
      if (std::find(s.loops.begin(), s.loops.end(), &l) != s.loops.end()) out.push_back(&s);
    return out;
  }

  void check_loop(const Loop& l) {
    auto stmts = inside(l);
    std::set<std::string> written;
    for (const StmtRec* s : stmts) written.insert(s->s->lhs->tensor);
    std::set<std::string> reported;
    for (const StmtRec* ws : stmts) {
      const Expr& w = *ws->s->lhs;
      if (reported.count(w.tensor)) continue;
      const bool uniform = is_uniform_store(*ws->s, l.var, written);
      for (const StmtRec* os : stmts) {
        for (const auto& a : os->accesses) {
          if (a.e->tensor != w.tensor) continue;
          if (a.is_write && os < ws) continue;  // each write pair once
          if (a.is_write && os == ws && uniform) continue;  // a uniform store (LEIR.md §3): one store
          if (ws->accumulation && os->accumulation && (a.is_write || a.accumulator)) continue;  // reduction
          if (!a.is_write && a.conditional && !a.guard_exact) continue;
          if (!conflict(l, *ws, ws->accesses.front(), *os, a)) continue;
          error(l.loc, fmt::format("{} loop {} is not independent: {} {} at {} and {} {} at {} touch the same element "
                                   "of {} in different iterations of '{}'; make the loop serial (L) or make each "
                                   "iteration use its own elements",
                                   loop_kind_name(l.kind), print_loop(l), "write", show(w), loc_text(w.loc),
                                   a.is_write ? "write" : "read", show(*a.e), loc_text(a.e->loc), w.tensor, l.var));
          reported.insert(w.tensor);
          break;
        }
        if (reported.count(w.tensor)) break;
      }
    }
  }

  static std::string loop_kind_name(LoopKind k) {
    switch (k) {
      case LoopKind::Parallel: return "parallel";
      case LoopKind::Vectorized: return "vectorized";
      case LoopKind::Bound: return "GPU-bound";
      default: return "serial";
    }
  }

  // Union-find over (loop, side) variables with offsets: value(x) = value(root(x)) + off(x).
  struct Solver {
    std::map<std::pair<const Loop*, int>, std::pair<std::pair<const Loop*, int>, int64_t>> parent;
    std::map<std::pair<const Loop*, int>, Range> range;  // of the root's value
    bool ok = true;

    using Key = std::pair<const Loop*, int>;
    void add(Key k, Range r) {
      if (parent.count(k)) {
        auto [root, off] = find(k);
        Range& rr = range[root];
        rr.lo = std::max(rr.lo, r.lo - off);
        rr.hi = std::min(rr.hi, r.hi - off);
        return;
      }
      parent[k] = {k, 0};
      range[k] = r;
    }
    std::pair<Key, int64_t> find(Key k) {
      auto [p, off] = parent.at(k);
      if (p == k) return {k, 0};
      auto [root, poff] = find(p);
      parent[k] = {root, off + poff};
      return {root, off + poff};
    }
    // value(a) + ka == value(b) + kb
    void unite(Key a, int64_t ka, Key b, int64_t kb) {
      auto [ra, oa] = find(a);
      auto [rb, ob] = find(b);
      // value(ra) + oa + ka == value(rb) + ob + kb
      int64_t delta = ob + kb - oa - ka;  // value(ra) = value(rb) + delta
      if (ra == rb) {
        if (delta != 0) ok = false;
        return;
      }
      parent[ra] = {rb, delta};
      Range r = range[ra];
      Range& t = range[rb];
      t.lo = std::max(t.lo, r.lo + delta);
      t.hi = std::min(t.hi, r.hi + delta);
    }
    // value(a) + ka == c
    void pin(Key a, int64_t ka, int64_t c) {
      auto [ra, oa] = find(a);
      Range& t = range[ra];
      t.lo = std::max(t.lo, c - ka - oa);
      t.hi = std::min(t.hi, c - ka - oa);
    }
  };

  // Is there a pair of iterations i != j of `l` where write `w` (of ws) and access `a` (of os)
  // touch the same element? Only a definite witness counts.
  bool conflict(const Loop& l, const StmtRec& ws, const AccessRec& w, const StmtRec& os, const AccessRec& a) {
    const Expr& we = *w.e;
    const Expr& ae = *a.e;
    if (we.args.size() != ae.args.size()) return false;
    // Loops at or inside `l` get one copy per iteration (side 0: the write, side 1: the access);
    // loops enclosing `l` are shared (side 2).
    auto side_of = [&](const StmtRec& s, const Loop* loop, int side) {
      for (const Loop* x : s.loops) {
        if (x == &l) return side;
        if (x == loop) return 2;
      }
      return side;
    };
    Solver sv;
    auto declare = [&](const StmtRec& s, const Env& env, int side) {
      for (const auto& b : env) sv.add({b.loop, side_of(s, b.loop, side)}, b.range);
    };
    declare(ws, w.env, 0);
    declare(os, a.env, 1);
    bool exact = true;
    for (size_t d = 0; d < we.args.size(); ++d) {
      auto fw = affine_of(*we.args[d], w.env);
      auto fa = affine_of(*ae.args[d], a.env);
      if (!fw || !fa) {
        // Identical subscripts that do not involve `l` (nor gathers on it) are equal when the
        // inner variables are chosen equal: a sufficient witness, not a proof.
        if (equal(*we.args[d], *ae.args[d]) && !mentions(*we.args[d], l.var) && !has_access(*we.args[d])) {
          exact = false;
          tie_all_vars(*we.args[d], ws, w, os, a, l, sv);
          continue;
        }
        return false;
      }
      // Same affine form with a dominant coefficient on l: equal values force i == j.
      if (dominates(*fw, *fa, l, w.env)) return false;
      bool simple_w = fw->coef.size() <= 1 && (fw->coef.empty() || fw->coef.begin()->second == 1);
      bool simple_a = fa->coef.size() <= 1 && (fa->coef.empty() || fa->coef.begin()->second == 1);
      if (simple_w && simple_a) {
        if (fw->coef.empty() && fa->coef.empty()) {
          if (fw->k != fa->k) return false;
        } else if (fw->coef.empty()) {
          auto lp = fa->coef.begin()->first;
          sv.pin({lp, side_of(os, lp, 1)}, fa->k, fw->k);
        } else if (fa->coef.empty()) {
          auto lp = fw->coef.begin()->first;
          sv.pin({lp, side_of(ws, lp, 0)}, fw->k, fa->k);
        } else {
          auto lw = fw->coef.begin()->first;
          auto la = fa->coef.begin()->first;
          sv.unite({lw, side_of(ws, lw, 0)}, fw->k, {la, side_of(os, la, 1)}, fa->k);
        }
        continue;
      }
      if (equal(*we.args[d], *ae.args[d]) && !mentions(*we.args[d], l.var)) {
        exact = false;
        tie_all_vars(*we.args[d], ws, w, os, a, l, sv);
        continue;
      }
      return false;  // not understood: no claim
    }
    if (!sv.ok) return false;
    for (auto& [k, p] : sv.parent) {
      auto [root, off] = sv.find(k);
      if (sv.range[root].empty()) return false;
    }
    // i != j must be possible.
    auto [ri, oi] = sv.find({&l, 0});
    auto [rj, oj] = sv.find({&l, 1});
    if (ri == rj) return oi != oj;
    Range a1 = sv.range[ri], b1 = sv.range[rj];
    bool single = a1.lo == a1.hi && b1.lo == b1.hi && a1.lo + oi == b1.lo + oj;
    (void)exact;
    return !single;
  }

  static bool mentions(const Expr& e, const std::string& var) {
    bool found = false;
    for_each_expr(std::make_shared<Expr>(e), [&](const Expr& x) { found |= x.is_var() && x.var_name() == var; });
    return found;
  }
  static bool has_access(const Expr& e) {
    bool found = false;
    for_each_expr(std::make_shared<Expr>(e), [&](const Expr& x) { found |= x.is_access(); });
    return found;
  }

  void tie_all_vars(const Expr& e, const StmtRec& ws, const AccessRec& w, const StmtRec& os, const AccessRec& a,
                    const Loop& l, Solver& sv) {
    auto side_of = [&](const StmtRec& s, const Loop* loop, int side) {
      for (const Loop* x : s.loops) {
        if (x == &l) return side;
        if (x == loop) return 2;
      }
      return side;
    };
    for_each_expr(std::make_shared<Expr>(e), [&](const Expr& x) {
      if (!x.is_var()) return;
      const Binding* bw = lookup(w.env, x.var_name());
      const Binding* ba = lookup(a.env, x.var_name());
      if (!bw || !ba) {
        sv.ok = false;
        return;
      }
      sv.unite({bw->loop, side_of(ws, bw->loop, 0)}, 0, {ba->loop, side_of(os, ba->loop, 1)}, 0);
    });
  }

  // f == g as affine forms, l's coefficient c with |c| larger than the whole range of the rest:
  // f(i, x) == f(j, y) forces i == j.
  static bool dominates(const Affine& f, const Affine& g, const Loop& l, const Env& env) {
    if (f.coef != g.coef || f.k != g.k) return false;
    auto it = f.coef.find(&l);
    if (it == f.coef.end()) return false;
    int64_t span = 0;
    for (auto [lp, c] : f.coef) {
      if (lp == &l) continue;
      Range r{lp->start, lp->start + lp->extent - 1};
      span += std::abs(c) * (r.hi - r.lo);
    }
    return std::abs(it->second) > span;
  }

  const Program& p_;
  ValidationReport report_;
  std::optional<TensorTable> table_;
  std::vector<StmtRec> stmts_;
  bool guard_mentions_loop_vars_ = true;
};

}  // namespace

ProgramSummary summarize(const Program& p, const TensorTable& table) {
  ProgramSummary s;
  s.name = p.name;
  std::function<void(const std::vector<Item>&)> count_nests = [&](const std::vector<Item>& body) {
    for (const auto& it : body)
      if (it.is_nest()) {
        ++s.nests;
        count_nests(it.nest.body);
      }
  };
  count_nests(p.body);
  for_each_stmt(p.body, [&](const Stmt& st, const std::vector<const Loop*>& loops) {
    ++s.statements;
    double iters = 1;
    for (const Loop* l : loops) iters *= static_cast<double>(l->extent);
    s.statement_executions += iters;
    s.flops += iters * count_ops(*st.rhs);
  });
  for (const auto& name : table.order) {
    const TensorInfo& t = table.at(name);
    if (t.known) continue;
    s.intermediates.push_back({t.name, t.dtype, t.scope, t.shape});
  }
  return s;
}

ValidationReport validate_all(const Program& p) { return Validator(p).run(); }

ProgramSummary validate(const Program& p) {
  auto r = validate_all(p);
  if (!r.ok()) throw r.errors.front().to_error();
  return r.summary;
}

nlohmann::json report_json(const ValidationReport& r) {
  const ProgramSummary& s = r.summary;
  nlohmann::json j = {{"name", s.name}, {"valid", r.ok()}};
  if (r.ok()) {
    j["nests"] = s.nests;
    j["statements"] = s.statements;
    j["flops"] = s.flops;
    j["statement_executions"] = s.statement_executions;
    auto inter = nlohmann::json::array();
    for (const auto& t : s.intermediates)
      inter.push_back({{"name", t.name}, {"dtype", std::string(to_string(t.dtype))},
                       {"scope", std::string(1, to_char(t.scope))}, {"shape", t.shape}});
    j["intermediates"] = inter;
  }
  auto errs = nlohmann::json::array();
  for (const auto& e : r.errors) errs.push_back({{"line", e.loc.line}, {"col", e.loc.col}, {"message", e.message}});
  j["errors"] = errs;
  return j;
}

}  // namespace steptp::leir
