// precompute_indices (STRATEGIES.md 22): a compound affine subscript (`c+f`, `a*8+c`, `c-2`) of
// a top-level nest becomes an i64 index table computed once, just before the nest, over the
// loops the subscript uses; every occurrence in the nest (same expression, same loops) then
// reads the table: A_{tx,c+f} → A_{tx,I_{c,f}}.
#include <functional>
#include <map>

#include "ir/analysis/accumulation.h"
#include "ir/analysis/affine.h"
#include "ir/analysis/names.h"
#include "ir/analysis/rewrite.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/printer.h"
#include "transform/loop_sites.h"
#include "transform/schedule_state.h"

namespace steptp::strategies {
namespace {

using analysis::NestRef;
using leir::ExprPtr;
using leir::Loop;
using leir::Program;

struct Candidate_ {
  ExprPtr subscript;
  std::vector<const Loop*> loops;  // loops it uses, outermost first
  std::string refusal;
};

bool compound(const analysis::Affine& a) {
  if (a.coeff.empty()) return false;                        // constant
  if (a.coeff.size() == 1 && a.constant == 0 && a.coeff.begin()->second == 1) return false;  // plain var
  return true;
}

// Distinct compound subscripts of top-level nest `n`, in order of first occurrence.
std::vector<Candidate_> subscripts_of(const NestRef& n) {
  std::vector<Candidate_> out;
  std::map<std::string, size_t> seen;
  for (const auto& s : analysis::stmts_in(n)) {
    // An accumulation's self term must keep the lhs's exact subscripts (LEIR.md §3).
    auto acc = analysis::accumulation_of(*s.stmt);
    const leir::Expr* self = acc ? acc->self.get() : nullptr;
    auto visit = [&](const ExprPtr& root) {
      leir::for_each_expr(root, [&](const leir::Expr& e) {
        if (e.kind != leir::ExprKind::Access || &e == self) return;
        for (const auto& sub : e.args) {
          auto a = analysis::to_affine(sub);
          if (!a || !compound(*a)) continue;
          std::vector<const Loop*> used;
          std::string why;
          for (const Loop* l : s.loops)
            if (a->uses(l->var)) {
              // innermost binding of the name must be this loop
              const Loop* b = nullptr;
              for (auto it = s.loops.rbegin(); it != s.loops.rend(); ++it)
                if ((*it)->var == l->var) {
                  b = *it;
                  break;
                }
              if (b == l) used.push_back(l);
            }
          size_t nvars = a->coeff.size();
          if (used.size() != nvars) why = "subscript uses a variable that is not a loop of the nest";
          for (const Loop* l : used)
            if (l->start != 0) why = "loop " + l->var + " does not start at 0";
          std::string key = leir::print_expr(sub);
          auto it = seen.find(key);
          if (it == seen.end()) {
            seen[key] = out.size();
            out.push_back({sub, used, why});
          } else if (out[it->second].refusal.empty() && out[it->second].loops != used) {
            out[it->second].refusal = "same subscript bound to different loops";
          }
        }
      });
    };
    // Read subscripts only: a table read in a write subscript would make the written
    // intermediate's shape data-dependent (LEIR.md §4 infers shapes from affine writes).
    for (const auto& sub : s.stmt->lhs->args) visit(sub);
    visit(s.stmt->rhs);
  }
  return out;
}

class PrecomputeIndices final : public Strategy {
 public:
  std::string_view name() const override { return "precompute_indices"; }
  std::string_view description() const override {
    return "replace a compound subscript by an i64 index table computed once and read indirectly";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  Survey survey(const ScheduleState& st) const override {
    Survey sv;
    for (const auto& n : st.nests()) {
      if (n.path.size() != 1) continue;
      auto subs = subscripts_of(n);
      for (int i = 0; i < static_cast<int>(subs.size()); ++i) {
        std::string where = "nest " + loops::path_text(n.path) + ", subscript " + leir::print_expr(subs[i].subscript);
        sv.consider({n.path, {i}, where}, subs[i].refusal.empty() ? std::nullopt : std::optional(subs[i].refusal));
      }
    }
    return sv;
  }

  Applied apply(const ScheduleState& st, const Site& site, const Params& params) const override {
    const Program& p = st.program();
    NestRef n = st.nest_at(site.path);
    auto subs = subscripts_of(n);
    int i = site.detail.at(0);
    if (i < 0 || i >= static_cast<int>(subs.size())) return refuse(site, "no such subscript");
    if (!subs[i].refusal.empty()) return refuse(site, subs[i].refusal);
    const auto& c = subs[i];
    analysis::NameAllocator names(p);
    std::string t = names.fresh_tensor();
    std::vector<ExprPtr> idx;
    std::vector<Loop> ls;
    for (const Loop* l : c.loops) {
      idx.push_back(leir::make_var(l->var));
      ls.push_back(loops::make_loop(leir::LoopKind::Serial, l->extent, l->var, 0));
    }
    ExprPtr table = leir::make_access(t, leir::DType::I64, leir::Scope::Global, idx);
    struct Replace : leir::ExprMutator {
      const leir::Expr* target;
      const leir::Expr* skip = nullptr;
      ExprPtr by;
      ExprPtr visit_access(const ExprPtr& e) override {
        if (e.get() == skip) return e;
        std::vector<ExprPtr> out;
        bool changed = false;
        for (const auto& sub : e->args) {
          if (leir::equal(*sub, *target)) {
            out.push_back(by);
            changed = true;
          } else {
            out.push_back(mutate(sub));
            changed |= out.back() != sub;
          }
        }
        return changed ? analysis::with_indices(e, std::move(out)) : e;
      }
    } r;
    r.target = c.subscript.get();
    r.by = table;
    leir::Nest nest = *n.nest;
    // Rewrites reads only: the lhs keeps its own subscripts (gathers nested in them are reads).
    std::function<std::vector<leir::Item>(const std::vector<leir::Item>&)> rewrite = [&](const std::vector<leir::Item>& body) {
      std::vector<leir::Item> out;
      for (const auto& item : body) {
        if (item.is_nest()) {
          leir::Nest nn = item.nest;
          nn.body = rewrite(item.nest.body);
          out.push_back(leir::Item::of(std::move(nn)));
          continue;
        }
        leir::Stmt s = item.stmt;
        auto acc = analysis::accumulation_of(s);
        r.skip = acc ? acc->self.get() : nullptr;
        std::vector<ExprPtr> idx;
        for (const auto& sub : s.lhs->args) idx.push_back(r.mutate(sub));
        s.lhs = analysis::with_indices(s.lhs, std::move(idx));
        s.rhs = r.mutate(s.rhs);
        out.push_back(leir::Item::of(std::move(s)));
      }
      return out;
    };
    nest.body = rewrite(n.nest->body);
    leir::Stmt def{table, c.subscript, {}};
    leir::Item def_item = ls.empty() ? leir::Item::of(def) : leir::Item::of(loops::make_nest(ls, {leir::Item::of(def)}));
    return candidate(st, site, params, Exactness::Exact,
                     loops::with_items(p, site.path, {std::move(def_item), leir::Item::of(std::move(nest))}));
  }
};

RegisterStrategy<PrecomputeIndices> precompute_indices_registrar(22);

}  // namespace
}  // namespace steptp::strategies
