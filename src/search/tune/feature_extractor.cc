#include "search/tune/feature_extractor.h"

#include <algorithm>
#include <cmath>

#include "ir/analysis/cost.h"

namespace steptp::tune {
namespace {

using leir::LoopKind;

double lg(double x) { return std::log2(std::max(1.0, x)); }

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

Features extract_features(const leir::Program& p, const Machine& machine) {
  const analysis::CostMachine m = cost_machine(machine);
  const auto st = analysis::cost_walk(p, m);
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
    x[14] += float(w * analysis::parallel_width(f, m.cores) / std::min<double>(m.cores, std::max(1.0, f.par_extent)));
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
  x[24] = float(lg(analysis::cost_estimate(st, m)));
  x[25] = float(local / (local + acc));
  return x;
}

}  // namespace steptp::tune
