// 7 dead_code_elimination and 8 expression_reorder (STRATEGIES.md).
//
// Liveness is computed on tensors: outputs are live; a statement writing a live tensor makes
// every tensor it reads live; repeat to a fixpoint (this also covers values carried around a
// loop by later statements). A statement writing a tensor that never becomes live cannot
// influence any output and is dead.
#include <fmt/format.h>

#include "transform/dataflow_util.h"
#include "transform/schedule_state.h"

namespace steptp::strategies {
namespace {

using namespace dataflow;
using leir::Program;

std::set<std::string> live_tensors(const Program& p) {
  std::set<std::string> live;
  for (const auto& d : p.known)
    if (d.role == leir::Role::Output) live.insert(d.name);
  auto stmts = analysis::all_stmts(p.body);
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& s : stmts) {
      if (!live.count(s.stmt->lhs->tensor)) continue;
      for (const auto& r : analysis::reads_of(*s.stmt)) changed |= live.insert(r->tensor).second;
    }
  }
  return live;
}

bool item_dead(const leir::Item& item, const std::set<std::string>& live) {
  for (const auto& w : analysis::read_write(item).writes)
    if (live.count(w)) return false;
  return true;
}

// A dead tensor still read by another (dead) statement: removing its writer first would leave
// that read dangling, so the reader goes first. Returns the reader's description or "".
std::string dead_reader(const Program& p, const analysis::Path& path) {
  auto writes = analysis::read_write(analysis::item_at(p.body, path)).writes;
  for (const auto& s : analysis::all_stmts(p.body)) {
    bool inside = s.path.size() >= path.size() && std::equal(path.begin(), path.end(), s.path.begin());
    if (inside) continue;
    for (const auto& r : analysis::reads_of(*s.stmt))
      if (writes.count(r->tensor)) return fmt::format("{} is still read by the dead statement writing {}", r->tensor, s.stmt->lhs->tensor);
  }
  return "";
}

class DeadCodeElimination final : public Strategy {
 public:
  std::string_view name() const override { return "dead_code_elimination"; }
  std::string_view description() const override { return "remove a nest or statement whose result never reaches an output"; }
  Exactness exactness() const override { return Exactness::Exact; }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    auto live = live_tensors(p);
    if (s.path.empty() || s.path[0] < 0 || s.path[0] >= static_cast<int>(p.body.size()))
      return refuse(s, "no such item");
    const auto& item = analysis::item_at(p.body, s.path);
    if (!item_dead(item, live)) return refuse(s, "its result reaches an output");
    if (std::string why = dead_reader(p, s.path); !why.empty()) return refuse(s, why);
    Program out = p;
    out.body = analysis::replace_item(p.body, s.path, {});
    return candidate(st, s, params, Exactness::Exact, std::move(out));
  }

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    auto live = live_tensors(p);
    for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
      const auto& item = p.body[i];
      Considered c;
      c.site.path = {i};
      c.site.description = fmt::format("item {}", i);
      if (!item_dead(item, live)) {
        // A live nest may still hold dead statements: each is a site of its own.
        if (item.is_nest()) {
          for (const auto& s : analysis::stmts_in({{i}, &item.nest, {}})) {
            if (live.count(s.stmt->lhs->tensor)) continue;
            Considered d;
            d.site.path = s.path;
            d.site.description = fmt::format("statement writing {} in nest {}", s.stmt->lhs->tensor, i);
            d.refusal = dead_reader(p, s.path);
            out.consider(std::move(d.site), as_refusal(std::move(d.refusal)));
          }
        }
        std::string w;
        for (const auto& t : analysis::read_write(item).writes)
          if (live.count(t)) w = t;
        c.refusal = is_output(p, w) ? fmt::format("writes output {}", w)
                                    : fmt::format("writes {}, which reaches an output", w);
      } else {
        c.site.description += " (writes " + *analysis::read_write(item).writes.begin() + ")";
        c.refusal = dead_reader(p, c.site.path);
      }
      out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
    }
    return out;
  }
};

class ExpressionReorder final : public Strategy {
 public:
  std::string_view name() const override { return "expression_reorder"; }
  std::string_view description() const override { return "swap two adjacent independent nests"; }
  Exactness exactness() const override { return Exactness::Exact; }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    int i = site_item(s);
    if (i < 0 || i + 1 >= static_cast<int>(p.body.size())) return refuse(s, "no two adjacent items there");
    if (std::string why = why_dependent(p, i); !why.empty()) return refuse(s, why);
    Program out = p;
    std::swap(out.body[i], out.body[i + 1]);
    return candidate(st, s, params, Exactness::Exact, std::move(out));
  }

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    for (int i = 0; i + 1 < static_cast<int>(p.body.size()); ++i) {
      Considered c;
      c.site.path = {i, i + 1};
      c.site.description = fmt::format("items {} and {}", i, i + 1);
      c.refusal = why_dependent(p, i);
      out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
    }
    return out;
  }

 private:
  static std::string why_dependent(const Program& p, int i) {
    auto a = analysis::read_write(p.body[i]);
    auto b = analysis::read_write(p.body[i + 1]);
    for (const auto& t : a.writes) {
      if (b.reads.count(t)) return fmt::format("RAW: item {} reads {} written by item {}", i + 1, t, i);
      if (b.writes.count(t)) return fmt::format("WAW: both items write {}", t);
    }
    for (const auto& t : a.reads)
      if (b.writes.count(t)) return fmt::format("WAR: item {} writes {} read by item {}", i + 1, t, i);
    return "";
  }
};

RegisterStrategy<DeadCodeElimination> dead_code_elimination_registrar(7);
RegisterStrategy<ExpressionReorder> expression_reorder_registrar(8);

}  // namespace
}  // namespace steptp::strategies
