// Seeded input generation. Every tensor draws from its own stream, seeded from (seed, name), so
// adding a tensor to a signature leaves the values of the others unchanged; only IEEE-exact
// operations turn random bits into values, so the bytes are the same on every machine.
#include "ir/interp/inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "base/hash.h"
#include "ir/interp/affine.h"
#include "ir/interp/domains.h"
#include "ir/interp/scalar_ops.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/printer.h"
#include "ir/leir/tensors.h"

namespace steptp::interp {

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

int64_t Rng::uniform_int(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;  // 0 means all 2^64 values
  if (span == 0) return static_cast<int64_t>(next());
  uint64_t limit = UINT64_MAX - UINT64_MAX % span;  // rejection keeps the draw unbiased
  uint64_t x;
  do x = next();
  while (x >= limit);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + x % span);
}

double Rng::normal() {
  double u1 = 1.0 - uniform();  // (0, 1]
  double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

namespace {


struct IntRange {
  int64_t lo = INT64_MIN;
  int64_t hi = INT64_MAX;
  bool constrained = false;
};

// For every read-only integer tensor G used in a subscript of the form G_{..} ± affine (or plain
// G_{..}), the values of G that keep that subscript in range over all loop iterations.
std::map<std::string, IntRange> gather_ranges(const leir::Program& p, const leir::TensorTable& table) {
  std::map<std::string, IntRange> out;
  leir::for_each_stmt(p.body, [&](const leir::Stmt& s, const std::vector<const leir::Loop*>& loops) {
    VarScope scope;
    std::vector<Range> ranges;
    for (const auto* l : loops) {
      scope.names.push_back(l->var);
      ranges.push_back({l->start, l->start + l->extent - 1});
    }
    auto visit = [&](const leir::Expr& a) {
      if (!a.is_access()) return;
      const leir::TensorInfo* info = table.find(a.tensor);
      if (!info) return;
      for (size_t d = 0; d < a.args.size() && d < info->shape.size(); ++d) {
        // Split the subscript into one gather term and an affine rest.
        std::vector<std::pair<const leir::Expr*, int>> terms;
        std::function<void(const leir::ExprPtr&, int)> flat = [&](const leir::ExprPtr& e, int sign) {
          if (e->kind == leir::ExprKind::Binary && (e->bop == leir::BinaryOp::Add || e->bop == leir::BinaryOp::Sub)) {
            flat(e->args[0], sign);
            flat(e->args[1], e->bop == leir::BinaryOp::Add ? sign : -sign);
          } else {
            terms.emplace_back(e.get(), sign);
          }
        };
        flat(a.args[d], 1);
        const leir::Expr* gather = nullptr;
        Range rest{0, 0};
        bool ok = true;
        for (const auto& [t, sign] : terms) {
          const leir::TensorInfo* g = t->is_access() ? table.find(t->tensor) : nullptr;
          if (g && g->read_only() && is_integer(g->dtype) && sign > 0 && !gather) {
            gather = t;
            continue;
          }
          auto lin = to_linear(*t, scope);
          if (!lin) {
            ok = false;
            break;
          }
          Range r = range_of(*lin, ranges);
          if (sign > 0) rest = {rest.lo + r.lo, rest.hi + r.hi};
          else rest = {rest.lo - r.hi, rest.hi - r.lo};
        }
        if (!ok || !gather) continue;
        IntRange& ir = out[gather->tensor];
        ir.constrained = true;
        ir.lo = std::max(ir.lo, -rest.lo);
        ir.hi = std::min(ir.hi, info->shape[d] - 1 - rest.hi);
        if (ir.lo > ir.hi)
          throw leir::LeirError(p.file, a.loc,
                                fmt::format("no value of {} keeps every subscript it feeds in range (dimension {} of "
                                            "{} has size {}); cannot generate inputs",
                                            gather->tensor, d, a.tensor, info->shape[d]));
      }
    };
    leir::for_each_expr(s.lhs, visit);
    leir::for_each_expr(s.rhs, visit);
  });
  return out;
}

double float_value(Rng& rng, InputProfile profile, bool restricted) {
  static constexpr double kPalette[] = {0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1e-3, -1e-3, 0.0};
  switch (profile) {
    case InputProfile::Ordinary: return rng.uniform(-1.0, 1.0);
    case InputProfile::ScaledUp: return rng.uniform(-1.0, 1.0) * 1e3;
    case InputProfile::ScaledDown: return rng.uniform(-1.0, 1.0) * 1e-3;
    // One draw either way, so the other tensors' streams are those of Ordinary / ScaledDown.
    case InputProfile::Domain: return restricted ? rng.uniform(0.25, 2.0) : rng.uniform(-1.0, 1.0);
    case InputProfile::DomainSmall: return (restricted ? rng.uniform(0.25, 2.0) : rng.uniform(-1.0, 1.0)) * 1e-3;
    case InputProfile::Signs:
      // Half the elements from a palette of exact zeros, ties and sign flips.
      if (rng.uniform() < 0.5) return kPalette[rng.uniform_int(0, 9)];
      return rng.uniform(-1.0, 1.0);
  }
  return 0.0;
}

}  // namespace

leir::TensorMap generate_inputs(const leir::Program& p, uint64_t seed, InputProfile profile) {
  leir::TensorTable table = leir::build_tensor_table(p);
  auto gathers = gather_ranges(p, table);
  const bool domains = profile == InputProfile::Domain || profile == InputProfile::DomainSmall;
  const std::set<std::string> restricted = domains ? domain_restricted_inputs(p) : std::set<std::string>{};
  leir::TensorMap out;
  for (const auto& d : p.known) {
    // Params that carry their values in the signature (LEIR.md §1) are not generated.
    if ((d.role != leir::Role::Input && d.role != leir::Role::Param) || d.value) continue;
    Rng rng(seed ^ base::fnv1a(d.name));
    rng.next();
    leir::TensorValue v;
    v.dtype = d.dtype;
    v.shape = d.shape;
    int64_t n = d.numel();
    v.data.reserve(static_cast<size_t>(n));
    auto g = gathers.find(d.name);
    for (int64_t i = 0; i < n; ++i) {
      double x;
      if (d.dtype == leir::DType::Bool) {
        x = rng.uniform() < 0.5 ? 1.0 : 0.0;
      } else if (leir::is_integer(d.dtype)) {
        int64_t lo = d.dtype == leir::DType::U8 ? 0 : -8, hi = 8;
        if (g != gathers.end()) lo = g->second.lo, hi = g->second.hi;
        // The Signs profile favours the ends of the valid range (padding and mask boundaries).
        if (profile == InputProfile::Signs && rng.uniform() < 0.5) x = static_cast<double>(rng.uniform() < 0.5 ? lo : hi);
        else x = static_cast<double>(rng.uniform_int(lo, hi));
      } else {
        x = float_value(rng, profile, restricted.count(d.name) > 0);
      }
      v.data.push_back(store_as(d.dtype, x).value_or(0.0));
    }
    out.emplace(d.name, std::move(v));
  }
  return out;
}

}  // namespace steptp::interp
