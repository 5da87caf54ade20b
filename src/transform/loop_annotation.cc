// Loop annotations (STRATEGIES.md 13-16): unroll, parallelize, vectorize, bind. The kind never
// changes a program's value (LEIR.md §3), so these are exact; P, V and B promise independent
// iterations.
//
// Policy (documented choice): P and B are only given to loops whose iterations are fully
// independent — no cross-iteration accumulation either. LEIR.md allows parallel reductions on
// such loops, but a strategy that introduces one would make every target implement a thread
// reduction where the input had none. V is the exception: an innermost loop that reduces
// (softmax's max and sum, a norm's mean, a dot product) may become V, because a vector
// reduction is what makes it fast, every target can lower it (CPU: `omp simd reduction`; TIR
// and CUDA: a serial loop) and the program's value does not change (the kind never does).
#include <algorithm>
#include <map>

#include "ir/analysis/dependence.h"
#include "ir/analysis/names.h"
#include "ir/analysis/rewrite.h"
#include "transform/loop_sites.h"
#include "transform/schedule_state.h"

namespace steptp::strategies {
namespace {

using analysis::NestRef;
using leir::Loop;
using leir::LoopKind;
using leir::Program;

constexpr int64_t kMaxUnrollExtent = 16;

std::string independence_refusal(const NestRef& n, int k) {
  auto c = analysis::check_loop(n, k);
  if (c.kind == analysis::LoopDep::Independent) return {};
  return c.kind == analysis::LoopDep::ReductionOnly ? "parallel reduction (refused by policy): " + c.reason : c.reason;
}

// The program with the site's loop given `kind`.
Program with_kind(const ScheduleState& st, const Site& site, LoopKind kind) {
  leir::Nest out = *st.nest_at(site.path).nest;
  out.loops[site.detail.at(0)].kind = kind;
  return loops::with_items(st.program(), site.path, {leir::Item::of(std::move(out))});
}

// Common shape: a site per loop; `refusal` returns "" when the loop qualifies.
template <class RefusalOf>
Survey survey_loops(const ScheduleState& st, RefusalOf refusal) {
  Survey s;
  for (const auto& n : st.nests())
    for (int k = 0; k < static_cast<int>(n.nest->loops.size()); ++k) {
      std::string why = refusal(n, k);
      s.consider({n.path, {k}, loops::loop_site_text(n, k)}, why.empty() ? std::nullopt : std::optional(why));
    }
  return s;
}

std::string kind_refusal(const Loop& l) {
  if (l.kind != LoopKind::Serial) return std::string("loop is already ") + leir::to_char(l.kind);
  if (l.extent < 2) return "extent " + std::to_string(l.extent);
  return {};
}

class LoopUnrolling final : public Strategy {
 public:
  std::string_view name() const override { return "loop_unrolling"; }
  std::string_view description() const override { return "mark a serial loop of small extent as unrolled (U)"; }
  Exactness exactness() const override { return Exactness::Exact; }
  Survey survey(const ScheduleState& st) const override {
    return survey_loops(st, [](const NestRef& n, int k) -> std::string {
      const Loop& l = n.nest->loops[k];
      if (auto w = kind_refusal(l); !w.empty()) return w;
      if (l.extent > kMaxUnrollExtent) return "extent " + std::to_string(l.extent) + " > " + std::to_string(kMaxUnrollExtent);
      return {};
    });
  }
  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    return candidate(st, s, params, Exactness::Exact, with_kind(st, s, LoopKind::Unrolled));
  }
};

class LoopParallelization final : public Strategy {
 public:
  std::string_view name() const override { return "loop_parallelization"; }
  std::string_view description() const override { return "mark an independent serial loop as parallel (P)"; }
  Exactness exactness() const override { return Exactness::Exact; }
  Survey survey(const ScheduleState& st) const override {
    return survey_loops(st, [](const NestRef& n, int k) -> std::string {
      if (auto w = kind_refusal(n.nest->loops[k]); !w.empty()) return w;
      auto enclosing = n.outer;
      for (int j = 0; j < k; ++j) enclosing.push_back(&n.nest->loops[j]);
      for (const Loop* l : enclosing)
        if (l->kind == LoopKind::Parallel) return "already inside parallel loop " + l->var;
      return independence_refusal(n, k);
    });
  }
  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    return candidate(st, s, params, Exactness::Exact, with_kind(st, s, LoopKind::Parallel));
  }
};

class LoopVectorization final : public Strategy {
 public:
  std::string_view name() const override { return "loop_vectorization"; }
  std::string_view description() const override {
    return "mark an innermost serial loop as vectorized (V): independent iterations, or a reduction across them";
  }
  Exactness exactness() const override { return Exactness::Exact; }
  Survey survey(const ScheduleState& st) const override {
    return survey_loops(st, [](const NestRef& n, int k) -> std::string {
      if (auto w = kind_refusal(n.nest->loops[k]); !w.empty()) return w;
      bool innermost = k + 1 == static_cast<int>(n.nest->loops.size()) &&
                       std::all_of(n.nest->body.begin(), n.nest->body.end(), [](const leir::Item& i) { return i.is_stmt(); });
      if (!innermost) return "not the innermost loop";
      auto c = analysis::check_loop(n, k);
      return c.kind == analysis::LoopDep::Carried ? c.reason : std::string();
    });
  }
  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    return candidate(st, s, params, Exactness::Exact, with_kind(st, s, LoopKind::Vectorized));
  }
};

// CUDA limits: threads per block ≤ 1024 (x, y ≤ 1024, z ≤ 64); grid y, z ≤ 65535.
struct AxisLimit {
  const char* axis;
  int64_t max_extent;
  bool thread;
};
constexpr AxisLimit kAxes[] = {{"bx", 2147483647, false}, {"by", 65535, false}, {"bz", 65535, false},
                               {"ty", 1024, true},        {"tz", 64, true}};
constexpr int64_t kMaxThreadsPerBlock = 1024;

// Extent bound to each axis per kernel (top-level item): the largest loop per axis.
using BoundAxes = std::map<int, std::map<std::string, int64_t>>;
const BoundAxes& bound_axes(const ScheduleState& st) {
  static const char owner = 0;  // this analysis' key in the state
  return st.memo<BoundAxes>(&owner, [&] {
    BoundAxes axes;
    for (const auto& n : st.nests())
      for (const auto& l : n.nest->loops)
        if (l.kind == LoopKind::Bound && analysis::is_axis_name(l.var)) {
          auto& e = axes[n.path[0]][l.var.substr(0, 2)];
          e = std::max(e, l.extent);
        }
    return axes;
  });
}

std::vector<std::string> free_axes(const ScheduleState& st, const NestRef& n, int k) {
  static const std::map<std::string, int64_t> none;
  const auto& all = bound_axes(st);
  auto it = all.find(n.path[0]);
  const auto& used = it == all.end() ? none : it->second;
  int64_t threads = 1;
  for (const auto& [axis, extent] : used)
    if (axis[0] == 't') threads *= extent;
  int64_t extent = n.nest->loops[k].extent;
  std::vector<std::string> out;
  for (const auto& a : kAxes) {
    if (used.count(a.axis) || extent > a.max_extent) continue;
    if (a.thread && threads * extent > kMaxThreadsPerBlock) continue;
    out.push_back(a.axis);
  }
  return out;
}

class LoopBinding final : public Strategy {
 public:
  std::string_view name() const override { return "loop_binding"; }
  std::string_view description() const override {
    return "bind an independent loop to a free GPU axis (bx/by/bz, ty/tz) within CUDA limits, renaming its index";
  }
  Exactness exactness() const override { return Exactness::Exact; }
  Survey survey(const ScheduleState& st) const override {
    return survey_loops(st, [&st](const NestRef& n, int k) -> std::string {
      const Loop& l = n.nest->loops[k];
      if (l.kind == LoopKind::Bound) return "loop is already bound";
      if (l.kind != LoopKind::Serial && l.kind != LoopKind::Parallel) return std::string("loop is ") + leir::to_char(l.kind);
      if (l.extent < 2) return "extent " + std::to_string(l.extent);
      if (free_axes(st, n, k).empty()) return "no free hardware axis within the limits (1024 threads per block)";
      return independence_refusal(n, k);
    });
  }
  std::vector<Params> param_space(const ScheduleState& st, const Site& s) const override {
    std::vector<Params> out;
    for (const auto& a : free_axes(st, st.nest_at(s.path), s.detail.at(0))) out.push_back({{"axis", a}});
    return out;
  }
  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    NestRef n = st.nest_at(s.path);
    int k = s.detail.at(0);
    const auto& axis = std::get<std::string>(params.at("axis"));
    auto axes = free_axes(st, n, k);
    if (std::find(axes.begin(), axes.end(), axis) == axes.end()) return refuse(s, "axis " + axis + " is not free here");
    analysis::NameAllocator names(p);
    std::string var = names.fresh_axis_var(axis);
    leir::Nest out = *n.nest;
    std::string old = out.loops[k].var;
    out.loops[k].kind = LoopKind::Bound;
    out.loops[k].var = var;
    analysis::Affine by;
    by.add_term(var, 1);
    out.body = analysis::substitute_var(n.nest->body, old, by);
    return candidate(st, s, params, Exactness::Exact,
                     loops::with_items(p, s.path, {leir::Item::of(std::move(out))}));
  }
};

RegisterStrategy<LoopUnrolling> loop_unrolling_registrar(13);
RegisterStrategy<LoopParallelization> loop_parallelization_registrar(14);
RegisterStrategy<LoopVectorization> loop_vectorization_registrar(15);
RegisterStrategy<LoopBinding> loop_binding_registrar(16);

}  // namespace
}  // namespace steptp::strategies
