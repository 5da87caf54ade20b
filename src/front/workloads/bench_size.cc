#include "front/workloads/bench_size.h"

#include "front/workloads/builder.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace steptp::workloads {
namespace {

// Saturating: a draw far outside the window must not overflow.
int64_t mul_sat(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}

int64_t instances(const std::vector<leir::Item>& body, int64_t outer);

int64_t instances(const leir::Item& it, int64_t outer) {
  if (it.is_stmt()) return outer;
  int64_t e = outer;
  for (const auto& l : it.nest.loops) e = mul_sat(e, std::max<int64_t>(l.extent, 0));
  return instances(it.nest.body, e);
}

int64_t instances(const std::vector<leir::Item>& body, int64_t outer) {
  int64_t n = 0;
  for (const auto& it : body) {
    const int64_t inner = instances(it, outer);
    n = inner > INT64_MAX - n ? INT64_MAX : n + inner;
  }
  return n;
}

}  // namespace

int64_t statement_instances(const leir::Program& p) { return instances(p.body, 1); }

int64_t statement_instances(const leir::Item& item) { return instances(item, 1); }

BenchWindow bench_window(int doublings) {
  doublings = std::clamp(doublings, 0, 16);
  return {kBenchMinInstances << doublings, kBenchMaxInstances << doublings};
}

HyperValues draw_bench_hyper(const Workload& w, interp::Rng& rng, const BenchWindow& window) {
  // See bench_size.h. The instance count increases with s, so bisection finds the window.
  HyperValues base;
  std::vector<const HyperParam*> sizes;
  std::vector<double> start;
  std::vector<int64_t> grain;
  for (const auto& p : w.params) {
    auto [lo, hi] = p.by_size[static_cast<size_t>(SizeClass::Default)];
    base[p.name] = rng.uniform_int(lo, hi);
    if (hi >= 16 && p.hi - p.lo > 16) {
      sizes.push_back(&p);
      start.push_back(double(base[p.name]) * rng.uniform(0.5, 2.0));
      grain.push_back(std::gcd(base[p.name], int64_t{48}));  // divisibility by groups, heads survives
    }
  }
  auto at = [&](double s) {
    HyperValues hv = base;
    for (size_t k = 0; k < sizes.size(); ++k) {
      int64_t g = grain[k];
      int64_t v = std::max<int64_t>(1, std::llround(start[k] * std::exp2(s) / double(g))) * g;
      hv[sizes[k]->name] = std::clamp<int64_t>(v, sizes[k]->lo, sizes[k]->hi);
    }
    return hv;
  };
  // Statement instances, or -1 when a constraint fails (mostly a window that no longer fits:
  // treated as too small).
  auto work = [&](const HyperValues& hv) -> int64_t {
    for (const auto& c : w.constraints)
      if (!c.holds(hv)) return -1;
    ShapesOnly shapes_only;  // the count needs no constant values
    return statement_instances(w.build(hv));
  };
  double lo = -24, hi = 24;
  HyperValues hv = at(0);
  while (hi - lo > 1.0 / 64 && !sizes.empty()) {  // 2^(1/64): finer than integer rounding
    double mid = 0.5 * (lo + hi);
    hv = at(mid);
    int64_t n = work(hv);
    if (n < window.min_instances) lo = mid;
    else if (n > window.max_instances) hi = mid;
    else break;
  }
  return hv;
}

std::string bench_window_miss(const leir::Program& p, const BenchWindow& window) {
  int64_t elements = 0;
  for (const auto& d : p.known) elements = std::min(kBenchMaxElements + 1, elements + d.numel());
  if (elements > kBenchMaxElements)
    return fmt::format("tensors hold more than {} elements", kBenchMaxElements);
  int64_t n = statement_instances(p);
  if (n < window.min_instances || n > window.max_instances)
    return fmt::format("{} statement instances, outside the bench window [{}, {}]", n, window.min_instances,
                       window.max_instances);
  return {};
}

}  // namespace steptp::workloads
