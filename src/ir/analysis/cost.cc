#include "ir/analysis/cost.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "ir/analysis/affine.h"
#include "ir/analysis/program_facts.h"
#include "ir/analysis/structure.h"
#include "ir/leir/tensors.h"
#include "ir/leir/types.h"

namespace steptp::analysis {
namespace {

using leir::LoopKind;

int cost_ops(const leir::ExprPtr& e) {
  if (e->kind == leir::ExprKind::Access) return 0;  // subscripts are addressing, not work
  int n = (e->kind == leir::ExprKind::Binary || e->kind == leir::ExprKind::Unary || e->kind == leir::ExprKind::Call ||
           e->kind == leir::ExprKind::Compare)
              ? 1
              : 0;
  if (e->kind == leir::ExprKind::Call && e->func != leir::Func::Max && e->func != leir::Func::Min &&
      e->func != leir::Func::IfThenElse)
    n += 8;  // transcendental: a library call, several times an add
  for (const auto& a : e->args) n += cost_ops(a);
  return n;
}

struct CostWalker {
  const leir::TensorTable& table;
  const CostMachine& m;
  std::vector<const leir::Loop*> loops;
  std::vector<StmtCost> out;

  // Elements of `acc` touched while loops [from, end) run (outer variables fixed).
  double elements(const leir::Expr& acc, size_t from) const {
    const auto* info = table.find(acc.tensor);
    if (!info) return 1;
    double e = 1;
    for (size_t d = 0; d < acc.args.size() && d < info->shape.size(); ++d) {
      auto a = to_affine(acc.args[d]);
      double dim = double(std::max<int64_t>(1, info->shape[d]));
      if (!a) {
        e *= dim;
        continue;
      }
      double span = 1;
      for (size_t k = from; k < loops.size(); ++k)
        span += double(std::abs(a->coeff_of(loops[k]->var))) * double(std::max<int64_t>(0, loops[k]->extent - 1));
      e *= std::min(span, dim);
    }
    return e;
  }

  void stmt(const leir::Stmt& s) {
    StmtCost f;
    f.depth = int(loops.size());
    f.n = 1;
    for (const auto* l : loops) f.n *= double(std::max<int64_t>(1, l->extent));
    f.ops = cost_ops(s.rhs) + 1;
    const leir::Loop* inner = nullptr;
    for (const auto* l : loops)
      if (l->extent > 1) inner = l;
    if (inner) f.inner_extent = double(inner->extent), f.inner_kind = inner->kind;
    // The parallel region: the outermost run of consecutive P/B loops.
    for (const auto* l : loops) {
      if (l->kind != LoopKind::Parallel && l->kind != LoopKind::Bound) break;
      f.par_extent *= double(std::max<int64_t>(1, l->extent));
    }
    for (const auto* l : loops)
      if (l->kind == LoopKind::Unrolled) f.unroll *= double(std::max<int64_t>(1, l->extent));
    auto accs = reads_of(s);
    accs.push_back(s.lhs);
    std::map<std::string, const leir::Expr*> distinct;  // one access per tensor for footprints
    bool contiguous = true;
    for (const auto& a : accs) {
      int64_t eb = leir::byte_size(a->dtype);
      if (a->scope != leir::Scope::Global) {
        f.local++;
        continue;
      }
      f.access_bytes += double(eb);
      auto st = inner ? flat_stride(*a, inner->var, table) : std::optional<int64_t>(0);
      if (st && *st == 0) f.invariant++;
      else if (st && std::abs(*st) == 1) f.unit++;
      else f.strided++, contiguous = false;
      distinct.emplace(a->tensor + "|" + std::to_string(a->args.size()), a.get());
    }
    f.vectorizable = inner && contiguous && inner->extent >= 4;
    // Footprint of loops [j, end) per level; reuse at a cache = the accesses' bytes over the
    // footprint of the outermost level that still fits in it.
    const std::array<double, 3> caches{double(m.l1_bytes), double(m.l2_bytes), double(m.l3_bytes)};
    double iters = 1;
    std::vector<double> iters_from(loops.size() + 1, 1), foot_from(loops.size() + 1, 0);
    for (size_t j = loops.size() + 1; j-- > 0;) {
      if (j < loops.size()) iters *= double(std::max<int64_t>(1, loops[j]->extent));
      iters_from[j] = iters;
      double fb = 0;
      for (const auto& [key, acc] : distinct) fb += elements(*acc, j) * double(leir::byte_size(acc->dtype));
      foot_from[j] = fb;
    }
    f.footprint = foot_from[0];
    for (size_t c = 0; c < 3; ++c) {
      size_t j = loops.size();
      while (j > 0 && foot_from[j - 1] <= caches[c]) --j;
      f.reuse[c] = foot_from[j] > 0 ? iters_from[j] * f.access_bytes / foot_from[j] : 1;
      f.reuse[c] = std::max(1.0, f.reuse[c]);
    }
    out.push_back(f);
  }
};

// Effective vector width of one statement: the machine's f32 lanes (8 with AVX2, and with
// AVX-512 on Zen 4's 256-bit units; 16 on a full 512-bit datapath) within its inner extent.
double vector_width(const StmtCost& f, double lanes) {
  if (!(f.inner_kind == LoopKind::Vectorized || f.vectorizable)) return 1;
  return std::min(lanes, f.inner_extent);
}

}  // namespace

std::vector<StmtCost> cost_walk(const leir::Program& p, const CostMachine& m) {
  auto table = leir::build_tensor_table(p);
  CostWalker w{table, m, {}, {}};
  for (const auto& s : all_stmts(p.body)) {
    w.loops = s.loops;
    w.stmt(*s.stmt);
  }
  return w.out;
}

double parallel_width(const StmtCost& f, int cores) {
  double waves = std::ceil(f.par_extent / cores);
  return f.par_extent / std::max(1.0, waves);
}

double cost_estimate(const std::vector<StmtCost>& walk, const CostMachine& m) {
  double t = 0;
  const double lanes = double(m.f32_lanes);
  for (const auto& f : walk) {
    double mem = 0.3 * f.invariant + 1.0 * f.unit + 4.0 * f.strided + 0.3 * f.local;
    const double parallel = parallel_width(f, m.cores);
    double compute = f.n * (0.5 * f.ops + mem) / (vector_width(f, lanes) * parallel);
    double dram = f.n * f.access_bytes / f.reuse[1] / 8.0;  // bytes missing L2 at ~8 B per unit
    t += compute + dram / std::min(parallel, 2.0);
  }
  return t;
}

double analytic_cost(const leir::Program& p, const CostMachine& m) { return cost_estimate(cost_walk(p, m), m); }

}  // namespace steptp::analysis
