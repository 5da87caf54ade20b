// cache_read_write (STRATEGIES.md 18): stage a tensor of a top-level nest through a copy in
// local (`l`) or shared (`s`) scope.
//  * read: a tensor the nest reads (always at one subscript) but does not write is copied, over
//    exactly the elements the nest reads, into a fresh buffer just before the nest, and the nest
//    reads the buffer;
//  * write: a tensor the nest defines first (no earlier item touches it), always written at one
//    subscript, is computed into a fresh buffer and copied out right after the nest.
#include <map>
#include <set>

#include "ir/analysis/affine.h"
#include "ir/analysis/names.h"
#include "ir/analysis/rewrite.h"
#include "ir/leir/printer.h"
#include "ir/leir/tensors.h"
#include "transform/loop_sites.h"
#include "transform/schedule_state.h"

namespace steptp::strategies {
namespace {

using analysis::NestRef;
using leir::ExprPtr;
using leir::Loop;
using leir::Program;

enum Mode { kRead = 0, kWrite = 1 };

struct Staging {
  std::string tensor;
  ExprPtr access;                     // the one subscript used
  std::vector<const Loop*> loops;     // loops the subscript uses, outermost first
};

// Every access in `occ` must be the same, affine, gather-free, with each variable bound to the
// same loop. "" and fills `st` on success.
std::string common_access(const std::vector<std::pair<ExprPtr, const std::vector<const Loop*>*>>& occ, Staging* st) {
  const ExprPtr& first = occ.front().first;
  std::map<std::string, const Loop*> bind;
  for (const auto& [acc, loops] : occ) {
    if (!leir::equal(acc, first)) return "accessed at different subscripts";
    for (const auto& sub : acc->args) {
      auto a = analysis::to_affine(sub);
      if (!a) return "non-affine subscript " + leir::print_expr(sub);
      for (const auto& v : a->order) {
        const Loop* l = nullptr;
        for (auto it = loops->rbegin(); it != loops->rend(); ++it)
          if ((*it)->var == v) {
            l = *it;
            break;
          }
        if (!l) return "subscript variable " + v + " is not a loop variable";
        auto [it, inserted] = bind.emplace(v, l);
        if (!inserted && it->second != l) return "variable " + v + " bound by different loops";
      }
    }
  }
  st->access = first;
  st->tensor = first->tensor;
  st->loops.clear();
  // Loop order: as they enclose the first occurrence.
  for (const Loop* l : *occ.front().second)
    for (const auto& [v, bl] : bind)
      if (bl == l) st->loops.push_back(l);
  return {};
}

std::vector<std::string> tensors_of(const NestRef& n, Mode mode) {
  std::set<std::string> reads, writes;
  for (const auto& s : analysis::stmts_in(n)) {
    writes.insert(s.stmt->lhs->tensor);
    for (const auto& r : analysis::reads_of(*s.stmt)) reads.insert(r->tensor);
  }
  return std::vector<std::string>(mode == kRead ? reads.begin() : writes.begin(), mode == kRead ? reads.end() : writes.end());
}

std::string analyze(const leir::TensorTable& table, const analysis::UseDef& ud, const NestRef& n, Mode mode,
                    const std::string& t, Staging* st) {
  auto stmts = analysis::stmts_in(n);
  std::vector<std::pair<ExprPtr, const std::vector<const Loop*>*>> occ;
  bool written = false;
  for (const auto& s : stmts) {
    if (s.stmt->lhs->tensor == t) {
      written = true;
      if (mode == kWrite) occ.push_back({s.stmt->lhs, &s.loops});
    }
    if (mode == kRead)
      for (const auto& r : analysis::reads_of(*s.stmt))
        if (r->tensor == t) occ.push_back({r, &s.loops});
  }
  if (mode == kRead && written) return "the nest also writes " + t;
  if (mode == kWrite) {
    int top = n.path[0];
    if (ud.written_before(top, t) || ud.read_before(top, t)) return t + " is used before the nest";
  }
  std::string why = common_access(occ, st);
  if (!why.empty() || mode == kWrite) return why;
  // The copy runs every iteration unguarded, while the nest may read only under a lazy
  // if_then_else (padding: A_{c-1} when 1<=c): the subscripts must be in bounds everywhere.
  std::map<std::string, analysis::Interval> ranges;
  for (const Loop* l : st->loops) ranges[l->var] = {l->start, l->start + l->extent - 1};
  const auto* info = table.find(t);
  if (!info) return "unknown tensor " + t;
  for (size_t d = 0; d < st->access->args.size() && d < info->shape.size(); ++d) {
    auto b = analysis::bounds(*analysis::to_affine(st->access->args[d]), ranges);
    if (!b || b->lo < 0 || b->hi >= info->shape[d])
      return "subscript " + leir::print_expr(st->access->args[d]) + " leaves the tensor on some iterations (guarded read)";
  }
  return {};
}

leir::Item copy_item(const std::vector<const Loop*>& loops, leir::Stmt s) {
  if (loops.empty()) return leir::Item::of(std::move(s));
  std::vector<Loop> ls;
  for (const Loop* l : loops) ls.push_back(loops::make_loop(leir::LoopKind::Serial, l->extent, l->var, l->start));
  return leir::Item::of(loops::make_nest(std::move(ls), {leir::Item::of(std::move(s))}));
}

class CacheReadWrite final : public Strategy {
 public:
  std::string_view name() const override { return "cache_read_write"; }
  std::string_view description() const override {
    return "stage a nest's input through an l/s copy (read), or compute into an l/s buffer and copy out (write)";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  Survey survey(const ScheduleState& st) const override {
    Survey sv;
    const auto& ud = st.use_def();
    const auto& table = st.tensors();
    for (const auto& n : st.nests()) {
      if (n.path.size() != 1) continue;  // top-level nests: the copies run as their own nests
      for (int mode : {kRead, kWrite}) {
        auto ts = tensors_of(n, static_cast<Mode>(mode));
        for (int i = 0; i < static_cast<int>(ts.size()); ++i) {
          std::string where = "nest " + loops::path_text(n.path) + (mode == kRead ? ", read " : ", write ") + ts[i];
          Staging staging;
          std::string why = analyze(table, ud, n, static_cast<Mode>(mode), ts[i], &staging);
          sv.consider({n.path, {mode, i}, where}, why.empty() ? std::nullopt : std::optional(why));
        }
      }
    }
    return sv;
  }

  std::vector<Params> param_space(const ScheduleState&, const Site&) const override {
    return {{{"scope", std::string("l")}}, {{"scope", std::string("s")}}};
  }

  Applied apply(const ScheduleState& st, const Site& site, const Params& params) const override {
    const Program& p = st.program();
    NestRef n = st.nest_at(site.path);
    Mode mode = static_cast<Mode>(site.detail.at(0));
    auto ts = tensors_of(n, mode);
    int idx = site.detail.at(1);
    if (idx < 0 || idx >= static_cast<int>(ts.size())) return refuse(site, "no such tensor at the site");
    const std::string& scope_text = std::get<std::string>(params.at("scope"));
    auto scope = leir::parse_scope(scope_text.empty() ? '?' : scope_text[0]);
    if (!scope || *scope == leir::Scope::Global) return refuse(site, "scope must be l or s");
    Staging staging;
    if (std::string why = analyze(st.tensors(), st.use_def(), n, mode, ts[idx], &staging); !why.empty())
      return refuse(site, why);
    analysis::NameAllocator names(p);
    std::string buf = names.fresh_tensor();
    leir::Nest nest = *n.nest;
    nest.body = analysis::rewrite_accesses(n.nest->body, staging.tensor,
                                           [&](const ExprPtr& a) { return analysis::renamed(a, buf, *scope); });
    ExprPtr staged = analysis::renamed(staging.access, buf, *scope);
    std::vector<leir::Item> items;
    if (mode == kRead) {
      items.push_back(copy_item(staging.loops, leir::Stmt{staged, staging.access, {}}));
      items.push_back(leir::Item::of(std::move(nest)));
    } else {
      items.push_back(leir::Item::of(std::move(nest)));
      items.push_back(copy_item(staging.loops, leir::Stmt{staging.access, staged, {}}));
    }
    return candidate(st, site, params, Exactness::Exact, loops::with_items(p, site.path, std::move(items)));
  }
};

RegisterStrategy<CacheReadWrite> cache_read_write_registrar(18);

}  // namespace
}  // namespace steptp::strategies
