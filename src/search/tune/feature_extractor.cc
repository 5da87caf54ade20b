#include "search/tune/feature_extractor.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "ir/analysis/affine.h"
#include "ir/analysis/program_facts.h"
#include "ir/analysis/structure.h"
#include "ir/leir/tensors.h"
#include "ir/leir/types.h"

namespace steptp::tune {
namespace {

using leir::LoopKind;

int count_ops(const leir::ExprPtr& e) {
  if (e->kind == leir::ExprKind::Access) return 0;  // subscripts are addressing, not work
  int n = (e->kind == leir::ExprKind::Binary || e->kind == leir::ExprKind::Unary || e->kind == leir::ExprKind::Call ||
           e->kind == leir::ExprKind::Compare)
              ? 1
              : 0;
  if (e->kind == leir::ExprKind::Call && e->func != leir::Func::Max && e->func != leir::Func::Min &&
      e->func != leir::Func::IfThenElse)
    n += 8;  // transcendental: a library call, several times an add
  for (const auto& a : e->args) n += count_ops(a);
  return n;
}

enum class Stride { Invariant, Unit, Strided };

// What one statement contributes.
struct StmtFacts {
  double n = 0;             // instances
  double ops = 0;           // per instance
  int invariant = 0, unit = 0, strided = 0, local = 0;
  double access_bytes = 0;  // per instance (global)
  double inner_extent = 1;
  LoopKind inner_kind = LoopKind::Serial;
  bool vectorizable = false;
  double unroll = 1;
  double par_extent = 1;
  std::array<double, 3> reuse{1, 1, 1};    // accesses' bytes per footprint byte at L1/L2/L3
  double footprint = 0;                    // bytes touched by the whole nest (outermost level)
  int depth = 0;
};

struct Walker {
  const leir::TensorTable& table;
  const Machine& m;
  std::vector<const leir::Loop*> loops;
  std::vector<StmtFacts> out;

  // Elements of `acc` touched while loops [from, end) run (outer variables fixed).
  double elements(const leir::Expr& acc, size_t from) const {
    const auto* info = table.find(acc.tensor);
    if (!info) return 1;
    double e = 1;
    for (size_t d = 0; d < acc.args.size() && d < info->shape.size(); ++d) {
      auto a = analysis::to_affine(acc.args[d]);
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
    StmtFacts f;
    f.depth = int(loops.size());
    f.n = 1;
    for (const auto* l : loops) f.n *= double(std::max<int64_t>(1, l->extent));
    f.ops = count_ops(s.rhs) + 1;
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
    auto accs = analysis::reads_of(s);
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
      auto st = inner ? analysis::flat_stride(*a, inner->var, table) : std::optional<int64_t>(0);
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

double lg(double x) { return std::log2(std::max(1.0, x)); }

// Effective widths of one statement on the machine: the f32 lanes its vector unit computes per
// cycle (8 with AVX2, and with AVX-512 on Zen 4's 256-bit units; 16 on a full 512-bit datapath).
double vector_width(const StmtFacts& f, double lanes) {
  if (!(f.inner_kind == LoopKind::Vectorized || f.vectorizable)) return 1;
  return std::min(lanes, f.inner_extent);
}
double parallel_width(const StmtFacts& f, int cores) {
  double waves = std::ceil(f.par_extent / cores);
  return f.par_extent / std::max(1.0, waves);  // busy cores averaged over the waves
}

double estimate(const std::vector<StmtFacts>& st, const Machine& m) {
  double t = 0;
  const double lanes = double(schedule_params(m).f32_throughput_lanes);
  for (const auto& f : st) {
    double mem = 0.3 * f.invariant + 1.0 * f.unit + 4.0 * f.strided + 0.3 * f.local;
    double compute = f.n * (0.5 * f.ops + mem) / (vector_width(f, lanes) * parallel_width(f, m.cores));
    double dram = f.n * f.access_bytes / f.reuse[1] / 8.0;  // bytes missing L2 at ~8 B per unit
    t += compute + dram / std::min(parallel_width(f, m.cores), 2.0);
  }
  return t;
}

std::vector<StmtFacts> walk(const leir::Program& p, const Machine& m) {
  auto table = leir::build_tensor_table(p);
  Walker w{table, m, {}, {}};
  for (const auto& s : analysis::all_stmts(p.body)) {
    w.loops = s.loops;
    w.stmt(*s.stmt);
  }
  return w.out;
}

}  // namespace

const std::array<std::string_view, kFeatureCount>& feature_names() {
  static const std::array<std::string_view, kFeatureCount> names = {
      "log2_instances",      "log2_flops",           "log2_global_bytes",   "log2_intensity",
      "invariant_share",     "unit_stride_share",    "strided_share",       "log2_inner_extent",
      "inner_V_share",       "inner_U_share",        "log2_unroll",         "vectorizable_share",
      "cores_busy_share",    "log2_parallel_extent", "parallel_balance",    "log2_reuse_L1",
      "log2_reuse_L2",       "log2_reuse_L3",        "log2_traffic_L1",     "log2_traffic_L2",
      "log2_traffic_L3",     "nests",                "statements",          "max_depth",
      "log2_analytic_estimate", "local_access_share"};
  return names;
}

Features extract_features(const leir::Program& p, const Machine& m) {
  auto st = walk(p, m);
  Features x{};
  double n = 0, flops = 0, bytes = 0, foot = 0, acc = 0, local = 0;
  for (const auto& f : st) {
    n += f.n;
    flops += f.n * f.ops;
    bytes += f.n * f.access_bytes;
    foot += f.footprint;
    acc += f.n * (f.invariant + f.unit + f.strided);
    local += f.n * f.local;
  }
  n = std::max(n, 1.0);
  acc = std::max(acc, 1.0);
  std::array<double, 3> traffic{0, 0, 0};
  for (const auto& f : st) {
    double w = f.n / n, a = f.n / acc;
    x[4] += float(a * f.invariant);
    x[5] += float(a * f.unit);
    x[6] += float(a * f.strided);
    x[7] += float(w * lg(f.inner_extent));
    x[8] += float(w * (f.inner_kind == LoopKind::Vectorized));
    x[9] += float(w * (f.inner_kind == LoopKind::Unrolled));
    x[10] += float(w * lg(f.unroll));
    x[11] += float(w * (f.vectorizable || f.inner_kind == LoopKind::Vectorized));
    x[12] += float(w * std::min(1.0, f.par_extent / m.cores));
    x[13] += float(w * lg(f.par_extent));
    x[14] += float(w * parallel_width(f, m.cores) / std::min<double>(m.cores, std::max(1.0, f.par_extent)));
    for (size_t c = 0; c < 3; ++c) {
      x[15 + c] += float(w * lg(f.reuse[c]));
      traffic[c] += f.n * f.access_bytes / f.reuse[c];
    }
    x[23] = std::max(x[23], float(f.depth));
  }
  x[0] = float(lg(n));
  x[1] = float(lg(flops));
  x[2] = float(lg(bytes));
  x[3] = float(std::log2(std::max(1.0, flops) / std::max(1.0, foot)));
  for (size_t c = 0; c < 3; ++c) x[18 + c] = float(lg(traffic[c]));
  for (const auto& it : p.body) x[21] += it.is_nest();
  x[22] = float(st.size());
  x[24] = float(lg(estimate(st, m)));
  x[25] = float(local / (local + acc));
  return x;
}

double analytic_estimate(const leir::Program& p, const Machine& m) { return estimate(walk(p, m), m); }

}  // namespace steptp::tune
