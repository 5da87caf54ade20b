#include "search/analytic/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "base/hash.h"
#include "ir/analysis/affine.h"
#include "ir/analysis/dependence.h"
#include "ir/analysis/structure.h"
#include "ir/leir/canonical.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "ir/leir/tensors.h"
#include "transform/sampler.h"
#include "transform/schedule_state.h"

namespace steptp::search {
namespace {

using Clock = std::chrono::steady_clock;
double secs(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }

int64_t dtype_bytes(leir::DType t) {
  auto s = leir::to_string(t);
  if (s == "f64" || s == "i64") return 8;
  if (s == "f16" || s == "bf16" || s == "i16") return 2;
  if (s == "bool" || s == "i8" || s == "u8") return 1;
  return 4;
}

struct ExprCount {
  int64_t ops = 0, global_bytes = 0, local_accesses = 0;
};
// Accesses nested in subscripts (gathers) still count; subscript arithmetic does not.
void count_gathers(const leir::ExprPtr& e, ExprCount& c);

void count_expr(const leir::ExprPtr& e, ExprCount& c) {
  if (!e) return;
  switch (e->kind) {
    case leir::ExprKind::Access:
      if (e->scope == leir::Scope::Global) c.global_bytes += dtype_bytes(e->dtype);
      else c.local_accesses += 1;
      for (const auto& a : e->args) count_gathers(a, c);
      return;
    case leir::ExprKind::Unary:
    case leir::ExprKind::Binary:
    case leir::ExprKind::Compare: c.ops += 1; break;
    case leir::ExprKind::Call: c.ops += 4; break;  // transcendental calls weigh more
    default: break;
  }
  for (const auto& a : e->args) count_expr(a, c);
}

void count_gathers(const leir::ExprPtr& e, ExprCount& c) {
  if (e->kind == leir::ExprKind::Access) return count_expr(e, c);
  for (const auto& a : e->args) count_gathers(a, c);
}

// Whether the flat (row-major) address of `access` moves by at most one element per step of `v`
// (no v: invariant). Non-affine subscripts (gathers, // and %) count as scattered.
bool contiguous_in(const leir::Expr& access, const std::string& v, const leir::TensorTable& table) {
  if (v.empty()) return true;
  const leir::TensorInfo* info = table.find(access.tensor);
  if (!info || info->shape.size() != access.args.size()) return false;
  const auto& shape = info->shape;
  int64_t stride = 1, step = 0;
  for (size_t d = access.args.size(); d-- > 0;) {
    auto a = analysis::to_affine(access.args[d]);
    if (!a) return false;
    step += a->coeff_of(v) * stride;
    stride *= std::max<int64_t>(1, shape[d]);
  }
  return step >= -1 && step <= 1;
}

struct Walk {
  const leir::TensorTable* table = nullptr;  // null: no contiguity facts (the cost model)
  std::string innermost;                     // innermost enclosing loop of extent > 1
};

void walk(const std::vector<leir::Item>& body, int64_t iters, double par, double vec, NestFacts& f, double& work,
          const Walk& w = {}) {
  for (const auto& it : body) {
    if (it.is_stmt()) {
      if (w.table) {
        auto acc = analysis::reads_of(it.stmt);  // with the written element: every access
        acc.push_back(it.stmt.lhs);
        for (const auto& a : acc) {
          if (a->scope != leir::Scope::Global) continue;
          f.accesses += iters;
          if (contiguous_in(*a, w.innermost, *w.table)) f.contiguous_accesses += iters;
        }
      }
      ExprCount c;
      count_expr(it.stmt.rhs, c);
      ExprCount l;
      count_expr(it.stmt.lhs, l);
      c.global_bytes += l.global_bytes;
      c.local_accesses += l.local_accesses;
      f.iterations += iters;
      f.flops += iters * c.ops;
      f.bytes += iters * c.global_bytes;
      f.local_accesses += iters * c.local_accesses;
      work += double(iters) * (double(c.ops) + double(c.global_bytes) / 4.0 + 0.25 * double(c.local_accesses) + 0.5) /
              (par * vec);
    } else {
      int64_t n = iters;
      double p = par, v = vec;
      Walk inner = w;
      for (const auto& l : it.nest.loops) {
        if (l.extent > 1) inner.innermost = l.var;
        n *= std::max<int64_t>(1, l.extent);
        f.extents.push_back(l.extent);
        if (l.kind == leir::LoopKind::Parallel || l.kind == leir::LoopKind::Bound) {
          f.parallel_loops++;
          p = std::min(16.0, p * double(std::max<int64_t>(1, l.extent)));
        } else if (l.kind == leir::LoopKind::Vectorized) {
          f.vector_loops++;
          v = std::min(4.0, v * double(std::max<int64_t>(1, l.extent)));
        }
      }
      walk(it.nest.body, n, p, v, f, work, inner);
    }
  }
}

}  // namespace

ProgramFacts program_facts(const leir::Program& p) {
  ProgramFacts pf;
  auto nests = analysis::all_nests(p.body);
  const auto table = leir::build_tensor_table(p);
  Walk w;
  w.table = &table;
  for (size_t i = 0; i < p.body.size(); ++i) {
    const auto& it = p.body[i];
    NestFacts f;
    double work = 0;
    if (it.is_nest()) {
      f.header = leir::print_nest_header(it.nest);
      walk({it}, 1, 1, 1, f, work, w);
      for (const auto& nr : nests) {
        if (nr.path.size() != 1 || nr.path[0] != int(i)) continue;
        for (int k = 0; k < int(nr.nest->loops.size()); ++k) {
          auto chk = analysis::check_loop(nr, k);
          if (chk.kind == analysis::LoopDep::Carried) f.carried_loops++;
          else if (chk.kind == analysis::LoopDep::ReductionOnly) f.reduction_loops++;
        }
      }
    } else {
      f.header = "stmt";
      walk({it}, 1, 1, 1, f, work, w);
    }
    pf.flops += f.flops;
    pf.bytes += f.bytes;
    pf.local_accesses += f.local_accesses;
    pf.accesses += f.accesses;
    pf.contiguous_accesses += f.contiguous_accesses;
    pf.nests.push_back(std::move(f));
  }
  pf.statements = int64_t(analysis::all_stmts(p.body).size());
  return pf;
}

Cost model_cost(const leir::Program& p) {
  double work = 0;
  for (const auto& it : p.body) {
    NestFacts f;
    walk({it}, 1, 1, 1, f, work);
  }
  return {std::round(work * 10.0) / 10.0, false};
}

double round_ratio(double num, double den) {
  if (den <= 0) return 0;
  return std::round(num / den * 10000.0) / 10000.0;
}

namespace {

struct State {
  leir::Program program;
  std::vector<Step> steps;
  Cost cost;
  int index = 0;
};

struct Scored {
  Transition t;
  std::string key;  // deterministic tie-break
};

}  // namespace

SearchResult run_search(const leir::Program& root, const SearchOptions& opts) {
  auto t0 = Clock::now();
  SearchResult res;
  auto tc = Clock::now();
  Cost root_cost = model_cost(root);
  res.stats.cost_s += secs(tc);
  verify::VerifyOptions vo;
  vo.trials = opts.verify_trials;
  vo.seed = base::mix_seed(opts.seed, 0x7e41f1);
  // Every candidate is verified on the same input sets, so whether a trial is evidence depends
  // on the root alone: a root whose outputs are mostly NaN/inf on all of them would make every
  // candidate inconclusive. Say so once and skip the search instead.
  {
    auto tv = Clock::now();
    verify::VerifyReport self = verify::verify(root, root, vo);
    res.stats.verify_s += secs(tv);
    res.stats.root_finite_share = self.finite_share;
    if (self.verdict == verify::Verdict::Inconclusive) {
      res.stats.root_inconclusive = true;
      res.stats.search_s = secs(t0);
      return res;
    }
  }

  std::set<uint64_t> seen{leir::program_hash(root)};
  std::vector<State> frontier{{root, {}, root_cost, 0}};
  int next_state = 1;
  for (int depth = 1; depth <= opts.depth && !frontier.empty(); ++depth) {
    std::vector<Scored> scored;
    for (const auto& st : frontier) {
      res.stats.states++;
      const strategies::ScheduleState state(st.program);  // analyses shared by every strategy
      const auto& strats = strategies::all_strategies();
      for (size_t si = 0; si < strats.size(); ++si) {
        const auto& S = *strats[si];
        uint64_t sseed = base::mix_seed(base::mix_seed(opts.seed, uint64_t(st.index) * 131 + depth), si);
        std::vector<strategies::Site> sites;
        try {
          sites = S.sites(state);
        } catch (const std::exception&) {
          continue;
        }
        auto site_idx = strategies::choose_indices(sites.size(), size_t(opts.sites_per_strategy), sseed);
        for (size_t k : site_idx) {
          std::vector<strategies::Params> space;
          try {
            space = S.param_space(state, sites[k]);
          } catch (const std::exception&) {
            continue;
          }
          if (space.empty()) space.push_back({});
          auto pidx = strategies::choose_indices(space.size(), size_t(opts.params_per_site),
                                                 base::mix_seed(sseed, k + 1));
          for (size_t pi : pidx) {
            res.stats.candidates++;
            std::optional<strategies::Candidate> c;
            try {
              if (auto a = S.apply(state, sites[k], space[pi])) c = std::move(*a);
            } catch (const std::exception&) {
              c.reset();
            }
            if (!c) continue;
            uint64_t h = leir::program_hash(c->program);
            if (seen.count(h)) {
              res.stats.duplicates++;
              continue;
            }
            auto tv = Clock::now();
            verify::VerifyReport rep;
            try {
              rep = verify::verify(root, c->program, vo);
            } catch (const std::exception& e) {
              rep.equivalent = false;
              rep.error = e.what();
            }
            res.stats.verify_s += secs(tv);
            if (!rep.equivalent) {  // failed or inconclusive: not verified
              res.stats.failed++;
              continue;
            }
            seen.insert(h);
            res.stats.verified++;
            Transition t;
            t.depth = depth;
            t.state = st.index;
            t.steps_so_far = st.steps;
            t.strategy = std::string(S.name());
            t.site_index = int(k);
            t.site = sites[k];
            t.params = c->params;
            t.exactness = c->exactness;
            t.parent = st.program;
            t.result = std::move(c->program);
            t.report = std::move(rep);
            t.cost_root = root_cost;
            t.cost_parent = st.cost;
            tc = Clock::now();
            t.cost_result = model_cost(t.result);
            res.stats.cost_s += secs(tc);
            t.improving = t.cost_result.value > 0 &&
                          t.cost_parent.value / t.cost_result.value >= opts.improve_threshold;
            t.result_hash = h;
            std::string key = fmt::format("{:020.3f}|{:06d}|{:03d}|{:04d}|{}", t.cost_result.value, st.index,
                                          si, k, strategies::params_to_json(t.params));
            scored.push_back({std::move(t), std::move(key)});
          }
        }
      }
    }
    // Choose the states to expand: the best improving candidates (1 for greedy, B for beam).
    std::vector<size_t> order(scored.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scored[a].key < scored[b].key; });
    size_t keep = opts.mode == Mode::Greedy ? 1 : size_t(std::max(1, opts.beam));
    std::vector<State> next;
    for (size_t i : order) {
      if (next.size() >= keep) break;
      auto& t = scored[i].t;
      if (!t.improving) continue;
      t.chosen = true;
      State ns{t.result, t.steps_so_far, t.cost_result, next_state++};
      ns.steps.push_back({t.strategy, t.params});
      next.push_back(std::move(ns));
    }
    for (auto& s : scored) res.transitions.push_back(std::move(s.t));
    frontier = std::move(next);
  }
  res.stats.search_s = secs(t0);
  return res;
}

}  // namespace steptp::search
