#include "transform/algebraic_base.h"

#include <algorithm>

#include "ir/analysis/accumulation.h"
#include "ir/analysis/algebra.h"
#include "ir/leir/program_io.h"
#include "ir/leir/printer.h"
#include "transform/schedule_state.h"

namespace steptp::strategies::algebraic {

using leir::BinaryOp;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Func;
using leir::Program;

ExprPtr num(double v) { return leir::make_number(v, leir::format_number(v, true)); }

std::string brief(const ExprPtr& e, size_t max_chars) {
  std::string s = leir::print_expr(e);
  if (s.size() > max_chars) s = s.substr(0, max_chars - 3) + "...";
  return s;
}

ExprPtr replace_at(const ExprPtr& root, const std::vector<int>& path, const ExprPtr& by) {
  if (path.empty()) return by;
  auto copy = std::make_shared<Expr>(*root);
  std::vector<int> rest(path.begin() + 1, path.end());
  copy->args[static_cast<size_t>(path[0])] = replace_at(root->args[static_cast<size_t>(path[0])], rest, by);
  return copy;
}

// ---------------------------------------------------------------------------------------------
// Statements and their rewritable parts

namespace {

struct SignedTerm {
  ExprPtr e;
  bool positive;
};

void flatten_additive(const ExprPtr& e, bool positive, std::vector<SignedTerm>& out) {
  if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::Add || e->bop == BinaryOp::Sub)) {
    flatten_additive(e->args[0], positive, out);
    flatten_additive(e->args[1], e->bop == BinaryOp::Add ? positive : !positive, out);
    return;
  }
  out.push_back({e, positive});
}

void flatten_product(const ExprPtr& e, std::vector<ExprPtr>& out) {
  if (e->kind == ExprKind::Binary && e->bop == BinaryOp::Mul) {
    flatten_product(e->args[0], out);
    flatten_product(e->args[1], out);
    return;
  }
  out.push_back(e);
}

ExprPtr additive_chain(const std::vector<SignedTerm>& terms) {
  ExprPtr acc = terms[0].positive ? terms[0].e : leir::make_neg(terms[0].e);
  for (size_t i = 1; i < terms.size(); ++i)
    acc = leir::make_binary(terms[i].positive ? BinaryOp::Add : BinaryOp::Sub, acc, terms[i].e);
  return acc;
}

// The signed terms of `e` read as a sum (a leading unary minus is folded into the sign).
std::vector<SignedTerm> signed_terms(const ExprPtr& e) {
  std::vector<SignedTerm> terms;
  flatten_additive(e, true, terms);
  for (auto& t : terms)
    while (t.e->kind == ExprKind::Unary) {
      t.e = t.e->args[0];
      t.positive = !t.positive;
    }
  return terms;
}

// Whether `target` is the body itself or one of the `spine` operators chaining its terms
// (paths [], [0], [0,0], ...): the rewrite may have changed how many terms there are.
bool on_spine(const std::vector<int>& target, size_t spine) {
  return target.size() < spine && std::all_of(target.begin(), target.end(), [](int k) { return k == 0; });
}

// The `spine` left-nested binary operators at the top of `e`, as a view chained them: the first
// operand, then each right operand with its operator, in order. The operands stay whole.
struct Chain {
  ExprPtr first;
  std::vector<std::pair<BinaryOp, ExprPtr>> rest;
};
Chain unchain(ExprPtr e, size_t spine) {
  Chain c;
  for (size_t k = 0; k < spine; ++k) {
    c.rest.push_back({e->bop, e->args[1]});
    e = e->args[0];
  }
  std::reverse(c.rest.begin(), c.rest.end());
  c.first = e;
  return c;
}

std::optional<StmtView> view_of(const leir::Stmt& s, const std::vector<int>& path, std::string& why) {
  if (!leir::is_floating(s.lhs->dtype)) {
    why = "stores into " + std::string(leir::to_string(s.lhs->dtype)) +
          " tensor (the store truncates: any rounding change can change the stored value)";
    return std::nullopt;
  }
  StmtView v;
  v.path = path;
  v.stmt = &s;
  auto acc = analysis::accumulation_of(s);
  if (!acc) {
    v.body = s.rhs;
    v.reassemble = [](const ExprPtr& b, const std::vector<int>&) { return b; };
    return v;
  }
  if (acc->other_self_reads > 0) {
    why = "accumulation reads its own element more than once";
    return std::nullopt;
  }
  v.accumulation = true;
  ExprPtr self = acc->self;
  ExprPtr lhs = s.lhs;
  switch (acc->op) {
    case analysis::AccumOp::Add: {
      std::vector<SignedTerm> terms;
      flatten_additive(s.rhs, true, terms);
      std::vector<SignedTerm> rest;
      bool removed = false;
      for (auto& t : terms) {
        if (!removed && t.e == self) {
          removed = true;
          continue;
        }
        rest.push_back(t);
      }
      if (rest.empty()) {
        why = "accumulation has nothing besides its accumulator";
        return std::nullopt;
      }
      v.body = additive_chain(rest);
      const size_t spine = rest.size() - 1;
      v.reassemble = [lhs, spine](const ExprPtr& b, const std::vector<int>& target) {
        std::vector<SignedTerm> terms{{lhs, true}};
        if (on_spine(target, spine)) {
          for (auto& t : signed_terms(b)) terms.push_back(t);
        } else {
          Chain c = unchain(b, spine);
          if (c.first->kind == ExprKind::Unary) terms.push_back({c.first->args[0], false});
          else terms.push_back({c.first, true});
          for (const auto& [op, e] : c.rest) terms.push_back({e, op == BinaryOp::Add});
        }
        return additive_chain(terms);
      };
      return v;
    }
    case analysis::AccumOp::Mul: {
      std::vector<ExprPtr> factors;
      flatten_product(s.rhs, factors);
      std::vector<ExprPtr> rest;
      bool removed = false;
      for (auto& f : factors) {
        if (!removed && f == self) {
          removed = true;
          continue;
        }
        rest.push_back(f);
      }
      if (rest.empty()) {
        why = "accumulation has nothing besides its accumulator";
        return std::nullopt;
      }
      ExprPtr body = rest[0];
      for (size_t i = 1; i < rest.size(); ++i) body = leir::make_binary(BinaryOp::Mul, body, rest[i]);
      v.body = body;
      const size_t spine = rest.size() - 1;
      v.reassemble = [lhs, spine](const ExprPtr& b, const std::vector<int>& target) {
        std::vector<ExprPtr> fs;
        if (on_spine(target, spine)) {
          flatten_product(b, fs);
        } else {
          Chain c = unchain(b, spine);
          fs.push_back(c.first);
          for (const auto& [op, e] : c.rest) fs.push_back(e);
        }
        ExprPtr acc = lhs;
        for (auto& f : fs) acc = leir::make_binary(BinaryOp::Mul, acc, f);
        return acc;
      };
      return v;
    }
    case analysis::AccumOp::Max:
    case analysis::AccumOp::Min: {
      bool self_first = s.rhs->args[0] == self;
      v.body = s.rhs->args[self_first ? 1 : 0];
      Func f = s.rhs->func;
      v.reassemble = [lhs, self_first, f](const ExprPtr& b, const std::vector<int>&) {
        return self_first ? leir::make_call(f, {lhs, b}) : leir::make_call(f, {b, lhs});
      };
      return v;
    }
  }
  return std::nullopt;
}

void collect_views(const std::vector<leir::Item>& body, std::vector<int>& path, std::vector<StmtView>& out,
                   std::vector<Refusal>* refused) {
  for (size_t i = 0; i < body.size(); ++i) {
    path.push_back(static_cast<int>(i));
    const auto& item = body[i];
    if (item.is_stmt()) {
      std::string why;
      auto v = view_of(item.stmt, path, why);
      if (v) out.push_back(std::move(*v));
      else if (refused) refused->push_back({"stmt " + leir::print_stmt(item.stmt), why});
    } else {
      collect_views(item.nest.body, path, out, refused);
    }
    path.pop_back();
  }
}

void set_stmt(std::vector<leir::Item>& body, const std::vector<int>& path, size_t k, const leir::Stmt& s) {
  leir::Item& item = body[static_cast<size_t>(path[k])];
  if (k + 1 == path.size()) item.stmt = s;
  else set_stmt(item.nest.body, path, k + 1, s);
}

// Continuous calls whose arguments are regions of their own.
bool continuous_opaque(Func f) {
  switch (f) {
    case Func::Max: case Func::Min: case Func::Erf: case Func::Tanh: case Func::Sigmoid:
    case Func::Abs: case Func::Sin: case Func::Cos: case Func::Log1p:
      return true;
    default:
      return false;
  }
}

bool transparent(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Unary: return true;
    case ExprKind::Binary:
      return e.bop == BinaryOp::Add || e.bop == BinaryOp::Sub || e.bop == BinaryOp::Mul ||
             e.bop == BinaryOp::Div || e.bop == BinaryOp::Pow;
    case ExprKind::Call:
      return e.func == Func::Exp || e.func == Func::Log || e.func == Func::Sqrt || e.func == Func::Rsqrt ||
             e.func == Func::Pow;
    default: return false;
  }
}

// Visits every node reachable without crossing a discontinuity, reporting region roots.
void walk(const ExprPtr& e, std::vector<int>& path, bool region_root,
          const std::function<void(const ExprPtr&, const std::vector<int>&, bool)>& fn) {
  fn(e, path, region_root);
  auto descend = [&](size_t i, bool root) {
    path.push_back(static_cast<int>(i));
    walk(e->args[i], path, root, fn);
    path.pop_back();
  };
  if (transparent(*e)) {
    for (size_t i = 0; i < e->args.size(); ++i) descend(i, false);
  } else if (e->kind == ExprKind::Call && continuous_opaque(e->func)) {
    for (size_t i = 0; i < e->args.size(); ++i) descend(i, true);
  } else if (e->kind == ExprKind::Call && e->func == Func::IfThenElse) {
    descend(1, true);
    descend(2, true);
  }
}

}  // namespace

std::vector<StmtView> statement_views(const Program& p, std::vector<Refusal>* refused) {
  std::vector<StmtView> out;
  std::vector<int> path;
  collect_views(p.body, path, out, refused);
  return out;
}

std::vector<Target> region_targets(const StmtView& v) {
  std::vector<Target> out;
  std::vector<int> path;
  walk(v.body, path, true, [&](const ExprPtr& e, const std::vector<int>& at, bool root) {
    if (root && transparent(*e)) out.push_back({at, e});
  });
  return out;
}

std::vector<Target> node_targets(const StmtView& v, const std::function<bool(const Expr&)>& pick) {
  std::vector<Target> out;
  std::vector<int> path;
  walk(v.body, path, true, [&](const ExprPtr& e, const std::vector<int>& at, bool) {
    if (pick(*e)) out.push_back({at, e});
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Denominators

namespace {

std::string sign_insensitive_key(const ExprPtr& e) {
  std::string a = analysis::canonical_key(e);
  std::string b = analysis::canonical_key(leir::make_neg(e));
  // canonical_key(-(x)) of a sum flips every term sign; take the smaller of the two spellings.
  if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::Add || e->bop == BinaryOp::Sub)) {
    std::vector<SignedTerm> terms = signed_terms(e);
    for (auto& t : terms) t.positive = !t.positive;
    b = analysis::canonical_key(additive_chain(terms));
  }
  return std::min(a, b);
}

void divisor_factors(const ExprPtr& e, std::vector<ExprPtr>& out) {
  if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::Mul || e->bop == BinaryOp::Div)) {
    divisor_factors(e->args[0], out);
    // x/(a/b) = x*b/a: b is a numerator factor, and a zero b only makes the quotient zero.
    if (e->bop == BinaryOp::Mul) divisor_factors(e->args[1], out);
    return;
  }
  if (e->kind == ExprKind::Unary) return divisor_factors(e->args[0], out);
  if (e->kind == ExprKind::Binary && e->bop == BinaryOp::Pow && e->args[1]->is_number() && e->args[1]->value > 0)
    return divisor_factors(e->args[0], out);
  if (e->kind == ExprKind::Call && e->func == Func::Sqrt) return divisor_factors(e->args[0], out);
  out.push_back(e);
}

void collect_denominators(const ExprPtr& e, const std::set<std::string>& nn, std::set<std::string>& out) {
  std::vector<ExprPtr> divisors;
  if (e->kind == ExprKind::Binary && e->bop == BinaryOp::Div) divisors.push_back(e->args[1]);
  if (e->kind == ExprKind::Binary && e->bop == BinaryOp::Pow && !nonnegative(e->args[1], nn))
    divisors.push_back(e->args[0]);
  if (e->kind == ExprKind::Call && e->func == Func::Rsqrt) divisors.push_back(e->args[0]);
  if (e->kind == ExprKind::Call && e->func == Func::Pow && !nonnegative(e->args[1], nn))
    divisors.push_back(e->args[0]);
  for (const auto& d : divisors) {
    std::vector<ExprPtr> factors;
    divisor_factors(d, factors);
    for (const auto& f : factors)
      if (!nonzero(f, nn)) out.insert(sign_insensitive_key(f));
  }
  for (const auto& a : e->args) collect_denominators(a, nn, out);
}

}  // namespace

std::set<std::string> risky_denominators(const ExprPtr& e, const std::set<std::string>& nn) {
  std::set<std::string> out;
  collect_denominators(e, nn, out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The strategy skeleton

AlgebraicStrategy::Attempt AlgebraicStrategy::attempt(const ScheduleState& st, const StmtView& v, const Target& t,
                                                      const Params& params,
                                                      const std::set<std::string>& nonneg) const {
  Context ctx{st, v, nonneg};
  Rewrite r;
  try {
    r = rewrite(t, params, ctx);
  } catch (const std::exception& e) {
    return {std::nullopt, std::string("computer algebra failed: ") + e.what()};
  }
  if (!r.result) return {std::nullopt, r.refusal};
  if (analysis::canonical_key(r.result) == analysis::canonical_key(t.expr))
    return {std::nullopt, "the result only reprints the expression (same canonical form)"};
  size_t before = analysis::expr_size(t.expr), after = analysis::expr_size(r.result);
  if (after > 4 * before + 16)
    return {std::nullopt, "the result is too large (" + std::to_string(after) + " nodes from " +
                              std::to_string(before) + ")"};
  auto den_before = risky_denominators(t.expr, nonneg);
  auto den_after = risky_denominators(r.result, nonneg);
  if (!checks_denominators()) den_before = den_after = {};
  for (const auto& d : den_after)
    if (!den_before.count(d)) return {std::nullopt, "would introduce a division by " + d + ", which can be zero"};
  for (const auto& d : den_before)
    if (!den_after.count(d))
      return {std::nullopt, "would remove the division by " + d + " (the input is undefined where it is zero)"};
  if (std::string why = probe_disagreement(t.expr, r.result, nonneg); !why.empty())
    return {std::nullopt, "not equivalent in float64: " + why};

  leir::Stmt s = *v.stmt;
  s.rhs = v.reassemble(replace_at(v.body, t.path, r.result), t.path);
  if (analysis::is_accumulation(s) != v.accumulation)
    return {std::nullopt, v.accumulation ? "the result would no longer be an accumulation"
                                          : "the result would read as an accumulation"};
  if (v.accumulation) {
    auto a0 = analysis::accumulation_of(*v.stmt), a1 = analysis::accumulation_of(s);
    if (!a1 || a1->op != a0->op || a1->other_self_reads != 0)
      return {std::nullopt, "the result would change the accumulation"};
  }
  return {std::move(s), {}};
}

namespace {

std::string site_description(const StmtView& v, const Target& t) {
  return "stmt " + leir::print_expr(v.stmt->lhs) + ": " + brief(t.expr);
}

// What every algebraic strategy needs of a program, computed once per state and shared by the
// family: the statements' rewritable parts (and the ineligible statements' refusals) and the
// tensors known to be non-negative.
struct StatementFacts {
  std::vector<StmtView> views;
  std::vector<Refusal> refused;
  std::set<std::string> nonneg;
};

const StatementFacts& statement_facts(const ScheduleState& st) {
  static const char owner = 0;
  return st.memo<StatementFacts>(&owner, [&] {
    StatementFacts f;
    f.views = statement_views(st.program(), &f.refused);
    f.nonneg = nonnegative_tensors(st.program());
    return f;
  });
}

}  // namespace

// Every target of every statement, tried with every parameter choice once per state: sites,
// refusals, parameter spaces and applied statements all come from these attempts.
struct AlgebraicStrategy::Attempts {
  struct Legal {
    Params params;
    leir::Stmt stmt;  // the statement rewritten with these parameters
  };
  struct ForTarget {
    Site site;
    const StmtView* view = nullptr;
    Target target;
    std::vector<Legal> legal;  // in target_params order
  };
  std::vector<ForTarget> targets;
  Survey survey;

  const ForTarget* find(const Site& s) const {
    for (const auto& t : targets)
      if (t.site.path == s.path && t.site.detail == s.detail) return &t;
    return nullptr;
  }
};

const AlgebraicStrategy::Attempts& AlgebraicStrategy::attempts(const ScheduleState& st) const {
  return st.memo<Attempts>(this, [&] {
    const StatementFacts& facts = statement_facts(st);
    Attempts out;
    out.survey.refusals = facts.refused;
    for (const auto& v : facts.views) {
      auto ts = targets(v);
      if (ts.empty()) {
        out.survey.refusals.push_back({"stmt " + leir::print_stmt(*v.stmt), "no sub-expression this strategy rewrites"});
        continue;
      }
      for (size_t i = 0; i < ts.size(); ++i) {
        Attempts::ForTarget ft{{v.path, {static_cast<int>(i)}, site_description(v, ts[i])}, &v, ts[i], {}};
        Context ctx{st, v, facts.nonneg};
        std::string reasons;
        for (const auto& params : target_params(ts[i], ctx)) {
          auto a = attempt(st, v, ts[i], params, facts.nonneg);
          if (a.stmt) {
            ft.legal.push_back({params, std::move(*a.stmt)});
            continue;
          }
          std::string ps = params.empty() ? "" : params_to_json(params) + ": ";
          if (reasons.find(a.refusal) == std::string::npos || !ps.empty())
            reasons += (reasons.empty() ? "" : "; ") + ps + a.refusal;
        }
        if (ft.legal.empty())
          out.survey.refusals.push_back({ft.site.description, reasons.empty() ? "no parameter applies" : reasons});
        else
          out.survey.sites.push_back(ft.site);
        out.targets.push_back(std::move(ft));
      }
    }
    return out;
  });
}

Survey AlgebraicStrategy::survey(const ScheduleState& st) const { return attempts(st).survey; }

std::vector<Params> AlgebraicStrategy::param_space(const ScheduleState& st, const Site& s) const {
  std::vector<Params> out;
  if (const auto* t = attempts(st).find(s))
    for (const auto& l : t->legal) out.push_back(l.params);
  return out;
}

Applied AlgebraicStrategy::apply(const ScheduleState& st, const Site& s, const Params& params) const {
  const auto* t = attempts(st).find(s);
  if (!t) return refuse(s, "no such statement target in this program");
  std::optional<leir::Stmt> stmt;
  for (const auto& l : t->legal)
    if (l.params == params) stmt = l.stmt;
  if (!stmt) {  // parameters outside the space: try them, for the reason
    auto a = attempt(st, *t->view, t->target, params, statement_facts(st).nonneg);
    if (!a.stmt) return refuse(s, a.refusal);
    stmt = std::move(a.stmt);
  }
  Program out = st.program();
  set_stmt(out.body, s.path, 0, *stmt);
  return candidate(st, s, params, Exactness::Algebraic, std::move(out));
}

}  // namespace steptp::strategies::algebraic
