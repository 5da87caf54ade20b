// 0 operator_fusion and 1 operator_fission (STRATEGIES.md).
//
// Fusion interleaves the instances of two nests with identical loop headers: statement
// instances of the second nest at iteration J move before those of the first at iterations
// I > J. It is legal when no conflicting pair (same element, one a write) has J < I, and when
// no new dependence is carried by a loop that promises independent iterations. Fission is the
// reverse: all instances of statement i run before those of statement j > i, legal when no
// conflicting pair has s_j at I and s_i at J > I.
#include <fmt/format.h>

#include "ir/analysis/instance_order.h"
#include "ir/leir/printer.h"
#include "transform/dataflow_util.h"
#include "transform/schedule_state.h"

namespace steptp::strategies {
namespace {

using namespace dataflow;
using leir::ExprPtr;
using leir::Nest;
using leir::Program;
using leir::Stmt;

struct Access {
  ExprPtr expr;
  bool write = false;
};

std::vector<Access> accesses_of(const Stmt& s) {
  std::vector<Access> out{{s.lhs, true}};
  for (const auto& r : analysis::reads_of(s)) out.push_back({r, false});
  return out;
}

bool any_independent(const Nest& n) {
  for (const auto& l : n.loops)
    if (leir::requires_independence(l.kind)) return true;
  return false;
}

// Why fusing `first` then `second` (identical headers) would change the program, or "".
std::string fusion_violation(const Nest& first, const Nest& second) {
  for (const Stmt* s1 : stmts_of(first))
    for (const Stmt* s2 : stmts_of(second))
      for (const auto& a1 : accesses_of(*s1))
        for (const auto& a2 : accesses_of(*s2)) {
          if (a1.expr->tensor != a2.expr->tensor || (!a1.write && !a2.write)) continue;
          auto dir = analysis::conflict_directions(*a1.expr, *a2.expr, first.loops);
          if (dir.before)
            return fmt::format("{} {} is {} by the second nest at an earlier iteration than the first nest {} it",
                               a2.write ? "element of" : "element of", a1.expr->tensor,
                               a2.write ? "written" : "read", a1.write ? "writes" : "reads");
          if (dir.after && any_independent(first))
            return fmt::format("fusing would carry a dependence on {} across iterations of an independent loop",
                               a1.expr->tensor);
        }
  return "";
}

class OperatorFusion final : public Strategy {
 public:
  std::string_view name() const override { return "operator_fusion"; }
  std::string_view description() const override {
    return "fuse two consecutive nests with identical loop headers when every dependence is kept";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  std::vector<Params> param_space(const ScheduleState& st, const Site& s) const override {
    if (local_candidates(st, site_item(s)).empty()) return {Params{}};
    return {Params{{"scope", std::string("g")}}, Params{{"scope", std::string("l")}},
            Params{{"scope", std::string("s")}}};
  }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    int i = site_item(s);
    const Nest* a = flat_nest(p, i);
    const Nest* b = flat_nest(p, i + 1);
    if (!a || !b) return refuse(s, "not two nests of statements");
    if (!same_headers(*a, *b)) return refuse(s, "loop headers differ");
    if (std::string why = fusion_violation(*a, *b); !why.empty()) return refuse(s, why);
    Nest fused = *a;
    for (const auto& it : b->body) fused.body.push_back(it);
    auto scope_it = params.find("scope");
    if (scope_it != params.end()) {
      const auto& sc = std::get<std::string>(scope_it->second);
      auto scope = leir::parse_scope(sc.empty() ? 'g' : sc[0]);
      if (!scope) return refuse(s, "scope must be g, s or l");
      for (const auto& t : local_candidates(st, i)) fused.body = set_scope(fused.body, t, *scope);
    }
    Program out = p;
    out.body.erase(out.body.begin() + i, out.body.begin() + i + 2);
    out.body.insert(out.body.begin() + i, leir::Item::of(std::move(fused)));
    return candidate(st, s, params, Exactness::Exact, std::move(out));
  }

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    for (int i = 0; i + 1 < static_cast<int>(p.body.size()); ++i) {
      Considered c;
      c.site.path = {i, i + 1};
      c.site.description = fmt::format("nests {} and {}", i, i + 1);
      const Nest* a = flat_nest(p, i);
      const Nest* b = flat_nest(p, i + 1);
      if (!a || !b) c.refusal = "not two nests of statements";
      else if (!same_headers(*a, *b))
        c.refusal = fmt::format("loop headers differ ({} vs {})", leir::print_nest_header(*a), leir::print_nest_header(*b));
      else c.refusal = fusion_violation(*a, *b);
      out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
    }
    return out;
  }

 private:
  // Intermediates written by the two nests and used nowhere else: may move to l/s scope.
  static std::vector<std::string> local_candidates(const ScheduleState& st, int i) {
    const Program& p = st.program();
    std::vector<std::string> out;
    if (i < 0 || i + 1 >= static_cast<int>(p.body.size())) return out;
    const auto& ud = st.use_def();
    std::set<std::string> written = ud.items[i].writes;
    written.insert(ud.items[i + 1].writes.begin(), ud.items[i + 1].writes.end());
    for (const auto& t : written) {
      if (is_known(p, t)) continue;  // never a known tensor (the public code moved outputs)
      bool elsewhere = false;
      for (int k = 0; k < static_cast<int>(ud.items.size()); ++k)
        if (k != i && k != i + 1 && (ud.items[k].reads.count(t) || ud.items[k].writes.count(t))) elsewhere = true;
      if (!elsewhere) out.push_back(t);
    }
    return out;
  }
};

// Why splitting `n` into one nest per statement would change the program, or "".
std::string fission_violation(const Nest& n) {
  auto stmts = stmts_of(n);
  for (size_t i = 0; i < stmts.size(); ++i)
    for (size_t j = i + 1; j < stmts.size(); ++j)
      for (const auto& ai : accesses_of(*stmts[i]))
        for (const auto& aj : accesses_of(*stmts[j])) {
          if (ai.expr->tensor != aj.expr->tensor || (!ai.write && !aj.write)) continue;
          // s_j at iteration I, s_i at iteration J: fission reverses the pairs with J > I.
          if (analysis::conflict_directions(*aj.expr, *ai.expr, n.loops).after)
            return fmt::format("statement {} {} {} at an iteration before statement {} {} it", j,
                               aj.write ? "writes" : "reads", ai.expr->tensor, i, ai.write ? "writes" : "reads");
        }
  return "";
}

class OperatorFission final : public Strategy {
 public:
  std::string_view name() const override { return "operator_fission"; }
  std::string_view description() const override { return "split a nest with several statements into one nest per statement"; }
  Exactness exactness() const override { return Exactness::Exact; }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    int i = site_item(s);
    const Nest* n = flat_nest(p, i);
    if (!n || n->body.size() < 2) return refuse(s, "not a nest of several statements");
    if (std::string why = fission_violation(*n); !why.empty()) return refuse(s, why);
    std::vector<leir::Item> parts;
    for (const auto& it : n->body) {
      Nest one;
      one.loops = n->loops;
      one.body.push_back(it);
      parts.push_back(leir::Item::of(std::move(one)));
    }
    Program out = p;
    out.body.erase(out.body.begin() + i);
    out.body.insert(out.body.begin() + i, parts.begin(), parts.end());
    return candidate(st, s, params, Exactness::Exact, std::move(out));
  }

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
      if (!p.body[i].is_nest() || p.body[i].nest.body.size() < 2) continue;
      Considered c;
      c.site.path = {i};
      c.site.description = fmt::format("nest {} ({} items)", i, p.body[i].nest.body.size());
      const Nest* n = flat_nest(p, i);
      if (!n) c.refusal = "the nest contains nested nests";
      else c.refusal = fission_violation(*n);
      out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
    }
    return out;
  }
};

RegisterStrategy<OperatorFusion> operator_fusion_registrar(0);
RegisterStrategy<OperatorFission> operator_fission_registrar(1);

}  // namespace
}  // namespace steptp::strategies
