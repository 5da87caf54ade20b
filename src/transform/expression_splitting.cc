// 3 expression_splitting and 6 common_subexpression_elimination (STRATEGIES.md).
//
// Both hoist a sub-expression into a new float64 intermediate computed by a nest over only the
// loops the sub-expression uses (loop-invariant work is done once per distinct value), placed
// before the nest that reads it. Legal when the sub-expression reads nothing written by the
// nests between the hoist point and its last use, and when it is evaluated unconditionally
// somewhere (hoisting an if_then_else branch would evaluate reads the program guards).
#include <fmt/format.h>

#include "ir/analysis/accumulation.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/printer.h"
#include "transform/dataflow_util.h"
#include "transform/schedule_state.h"

namespace steptp::strategies {
namespace {

using namespace dataflow;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Loop;
using leir::Nest;
using leir::Program;
using leir::Stmt;

constexpr size_t kMaxPerStatement = 6;

struct Occurrence {
  ExprPtr expr;
  bool guarded = false;  // inside a lazily evaluated if_then_else branch
};

bool reads_any_tensor(const ExprPtr& e) {
  bool any = false;
  leir::for_each_expr(e, [&](const Expr& x) { any |= x.is_access(); });
  return any;
}

bool is_compound(const Expr& e) {
  return e.kind == ExprKind::Binary || e.kind == ExprKind::Unary || e.kind == ExprKind::Call ||
         e.kind == ExprKind::Compare;
}

// Pre-order compound sub-expressions of `e` (not descending into tensor subscripts).
void collect(const ExprPtr& e, bool guarded, std::vector<Occurrence>& out) {
  if (e->is_access()) return;
  if (is_compound(*e) && reads_any_tensor(e)) out.push_back({e, guarded});
  for (size_t k = 0; k < e->args.size(); ++k) {
    bool lazy = e->kind == ExprKind::Call && e->func == leir::Func::IfThenElse && k > 0;
    collect(e->args[k], guarded || lazy, out);
  }
}

// Sub-expressions of a statement that may become their own intermediate: for an accumulation,
// the parts other than the running value; otherwise proper sub-expressions of the right side.
std::vector<Occurrence> candidates_of(const Stmt& s) {
  std::vector<Occurrence> out;
  if (auto acc = analysis::accumulation_of(s)) {
    // Terms of the top chain other than the self read.
    std::vector<ExprPtr> terms;
    std::function<void(const ExprPtr&)> flatten = [&](const ExprPtr& e) {
      bool chain = e->kind == ExprKind::Binary &&
                   ((acc->op == analysis::AccumOp::Add && (e->bop == leir::BinaryOp::Add || e->bop == leir::BinaryOp::Sub)) ||
                    (acc->op == analysis::AccumOp::Mul && e->bop == leir::BinaryOp::Mul));
      bool minmax = e->kind == ExprKind::Call && (e->func == leir::Func::Max || e->func == leir::Func::Min) &&
                    (acc->op == analysis::AccumOp::Max || acc->op == analysis::AccumOp::Min);
      if ((chain || minmax) && contains(e, *acc->self)) {
        for (const auto& a : e->args) flatten(a);
      } else if (e != acc->self) {
        terms.push_back(e);
      }
    };
    flatten(s.rhs);
    for (const auto& t : terms) collect(t, false, out);
  } else {
    for (const auto& a : s.rhs->args) collect(a, s.rhs->kind == ExprKind::Call && s.rhs->func == leir::Func::IfThenElse && a != s.rhs->args[0], out);
  }
  std::vector<Occurrence> kept;
  for (auto& o : out)
    if (!reads_tensor(o.expr, s.lhs->tensor)) kept.push_back(o);
  return kept;
}

// Loops of `n` whose variables `e` uses, in nest order.
std::vector<Loop> used_loops(const Nest& n, const ExprPtr& e) {
  auto vars = vars_in(e);
  std::vector<Loop> out;
  for (const auto& l : n.loops)
    if (vars.count(l.var)) out.push_back(l);
  return out;
}

// The nest computing `e` into `name` over `loops` (a scalar gets one loop of extent 1).
Nest hoisted_nest(const std::string& name, const std::vector<Loop>& loops, const ExprPtr& e, ExprPtr& read) {
  std::vector<std::string> vars;
  for (const auto& l : loops) vars.push_back(l.var);
  read = leir::make_access(name, leir::DType::F64, leir::Scope::Global, var_exprs(vars));
  return make_nest(loops_or_scalar(loops), {make_stmt(read, e)});
}

// Replaces every node structurally equal to `target` by `by`.
ExprPtr replace_all(const ExprPtr& e, const Expr& target, const ExprPtr& by) {
  if (leir::equal(*e, target)) return by;
  if (e->args.empty()) return e;
  std::vector<ExprPtr> args;
  bool changed = false;
  for (const auto& a : e->args) {
    args.push_back(replace_all(a, target, by));
    changed |= args.back() != a;
  }
  if (!changed) return e;
  auto copy = std::make_shared<Expr>(*e);
  copy->args = std::move(args);
  return copy;
}

std::string why_not_hoistable(const Program& p, const analysis::UseDef& ud, const ExprPtr& e, int first, int last) {
  for (int k = first; k <= last; ++k)
    for (const auto& t : ud.items[k].writes)
      if (reads_tensor(e, t)) return fmt::format("it reads {}, written by item {}", t, k);
  return "";
}

class ExpressionSplitting final : public Strategy {
 public:
  std::string_view name() const override { return "expression_splitting"; }
  std::string_view description() const override {
    return "move a sub-expression into its own intermediate nest over the loops it uses";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  std::vector<Params> param_space(const ScheduleState& st, const Site& s) const override {
    const Program& p = st.program();
    std::vector<Params> out;
    auto subs = legal_subexprs(p, st.use_def(), s);
    for (size_t k = 0; k < subs.size(); ++k)
      out.push_back({{"index", static_cast<int64_t>(k)}, {"expr", leir::print_expr(subs[k])}});
    return out;
  }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    auto subs = legal_subexprs(p, st.use_def(), s);
    auto it = params.find("index");
    if (it == params.end()) return refuse(s, "no index parameter");
    int64_t k = std::get<int64_t>(it->second);
    if (k < 0 || k >= static_cast<int64_t>(subs.size())) return refuse(s, "no such legal sub-expression");
    int i = s.path[0], j = s.path[1];
    const Nest& n = p.body[i].nest;
    ExprPtr read;
    Nest hoisted = hoisted_nest(fresh_tensor_names(p, 1)[0], used_loops(n, subs[k]), subs[k], read);
    Program out = p;
    Stmt& target = out.body[i].nest.body[j].stmt;
    // Replace exactly the chosen occurrence (pointer identity), not equal look-alikes.
    class One : public leir::ExprMutator {
     public:
      One(const ExprPtr& t, const ExprPtr& b) : t_(t), b_(b) {}
      ExprPtr mutate(const ExprPtr& e) override { return e == t_ ? b_ : ExprMutator::mutate(e); }
     private:
      ExprPtr t_, b_;
    } one(subs[k], read);
    target.rhs = one.mutate(target.rhs);
    out.body.insert(out.body.begin() + i, leir::Item::of(std::move(hoisted)));
    return candidate(st, s, params, Exactness::Exact, std::move(out));
  }

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    const auto& ud = st.use_def();
    for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
      const Nest* n = flat_nest(p, i);
      if (!n) continue;
      for (int j = 0; j < static_cast<int>(n->body.size()); ++j) {
        Considered c;
        c.site.path = {i, j};
        c.site.description = fmt::format("statement {} of nest {} ({})", j, i, n->body[j].stmt.lhs->tensor);
        if (legal_subexprs(p, ud, c.site).empty())
          c.refusal = candidates_of(n->body[j].stmt).empty()
                          ? "no compound sub-expression reading a tensor"
                          : "every sub-expression reads a tensor written in the nest or is evaluated only conditionally";
        out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
      }
    }
    return out;
  }

 private:
  static std::vector<ExprPtr> legal_subexprs(const Program& p, const analysis::UseDef& ud, const Site& s) {
    std::vector<ExprPtr> out;
    if (s.path.size() != 2) return out;
    const Nest* n = flat_nest(p, s.path[0]);
    if (!n || s.path[1] < 0 || s.path[1] >= static_cast<int>(n->body.size())) return out;
    for (const auto& o : candidates_of(n->body[s.path[1]].stmt)) {
      if (o.guarded || !why_not_hoistable(p, ud, o.expr, s.path[0], s.path[0]).empty()) continue;
      out.push_back(o.expr);
      if (out.size() == kMaxPerStatement) break;
    }
    return out;
  }
};

// A repeated sub-expression: occurrences in statements of flat top-level nests whose loops of
// the used variables are identical.
struct Group {
  ExprPtr expr;
  std::vector<Loop> loops;  // of the used variables, in the first nest's order
  std::vector<int> items;   // nests holding occurrences (sorted, unique)
  int count = 0;
  bool unguarded = false;
};

std::string group_key(const ExprPtr& e, const std::vector<Loop>& loops) {
  std::string k = leir::print_expr(e);
  for (const auto& l : loops) k += fmt::format("|{}{}:{}+{}", leir::to_char(l.kind), l.var, l.extent, l.start);
  return k;
}

std::vector<Group> repeated_groups(const Program& p) {
  std::map<std::string, size_t> index;
  std::vector<Group> groups;
  for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
    const Nest* n = flat_nest(p, i);
    if (!n) continue;
    for (const Stmt* s : stmts_of(*n)) {
      std::vector<Occurrence> occ;
      collect(s->rhs, false, occ);
      for (const auto& o : occ) {
        auto loops = used_loops(*n, o.expr);
        std::string key = group_key(o.expr, loops);
        auto [it, fresh] = index.emplace(key, groups.size());
        if (fresh) groups.push_back({o.expr, loops, {}, 0, false});
        Group& g = groups[it->second];
        if (g.items.empty() || g.items.back() != i) g.items.push_back(i);
        g.count++;
        g.unguarded |= !o.guarded;
      }
    }
  }
  std::vector<Group> out;
  for (auto& g : groups)
    if (g.count >= 2) out.push_back(std::move(g));
  return out;
}

class CommonSubexpressionElimination final : public Strategy {
 public:
  std::string_view name() const override { return "common_subexpression_elimination"; }
  std::string_view description() const override {
    return "compute a sub-expression that occurs several times (same indices) once into an intermediate";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    const auto& legal = sites(st);
    if (std::none_of(legal.begin(), legal.end(),
                     [&](const Site& l) { return l.path == s.path && l.description == s.description; }))
      return refuse(s, "not a hoistable repeated sub-expression of this program");
    auto groups = repeated_groups(p);
    const Group& g = groups.at(static_cast<size_t>(s.detail.at(0)));
    ExprPtr read;
    Nest hoisted = hoisted_nest(fresh_tensor_names(p, 1)[0], g.loops, g.expr, read);
    Program out = p;
    for (int i : g.items)
      out.body[i] = leir::map_exprs({p.body[i]}, [&](const ExprPtr& e) { return replace_all(e, *g.expr, read); }).front();
    out.body.insert(out.body.begin() + g.items.front(), leir::Item::of(std::move(hoisted)));
    return candidate(st, s, params, Exactness::Exact, std::move(out));
  }

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    const auto& ud = st.use_def();
    auto groups = repeated_groups(p);
    for (size_t k = 0; k < groups.size(); ++k) {
      const Group& g = groups[k];
      Considered c;
      c.site.path = g.items;
      c.site.detail = {static_cast<int>(k)};
      c.site.description = fmt::format("{} x{}", leir::print_expr(g.expr), g.count);
      if (!g.unguarded) c.refusal = "every occurrence is inside a conditionally evaluated branch";
      else c.refusal = why_not_hoistable(p, ud, g.expr, g.items.front(), g.items.back());
      if (!c.refusal.empty()) c.refusal = "cannot compute it once before its uses: " + c.refusal;
      out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
    }
    return out;
  }
};

RegisterStrategy<ExpressionSplitting> expression_splitting_registrar(3);
RegisterStrategy<CommonSubexpressionElimination> common_subexpression_elimination_registrar(6);

}  // namespace
}  // namespace steptp::strategies
