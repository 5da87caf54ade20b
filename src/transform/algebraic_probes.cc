#include "transform/algebraic_probes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "base/hash.h"
#include "ir/analysis/algebra.h"
#include "ir/interp/bytecode.h"
#include "ir/interp/executor.h"
#include "ir/interp/inputs.h"
#include "ir/interp/scalar_ops.h"
#include "ir/leir/printer.h"

namespace steptp::strategies::algebraic {

using leir::BinaryOp;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Func;

// The probes evaluate through the interpreter (interp/): one small LEIR program per comparison,
//
//   input  L0..Ln: [64]                        one per opaque leaf, one element per probe
//   output X, Y: f64[64]
//   L^{64}_{probe=0}[ X = before; Y = after; ]
//
// where the leaves of `before` and `after` (distinct tensor accesses by structural key, and loop
// variables used as values) read their probe tensor at [probe]. Leaf tensors are f64 for float
// reads (the draws are unrounded float64 values), bool for bool reads and i64 for integer reads
// and loop variables (they hold the drawn integers exactly). The tolerance scales with M, the
// largest finite magnitude of any node the interpreter evaluated for X and Y (if_then_else
// branches only where taken). M is at least max(|X|, |Y|), which decides almost every probe; when
// it does not, a second program adds an output M = if_then_else(close(X, Y), 0, magnitude), the
// magnitude computed by the interpreter from the same nodes (magnitudes() below).

namespace {

constexpr int kProfiles = 8;
constexpr int kProbes = 64;
const char* const kProfileNames[kProfiles] = {"ordinary", "x1e3",  "x1e-3",        "small integers",
                                              "positive", "x30",   "+-[600,1000]", "[700,1000]"};

// A literal of the probe program (no spelling: it is never printed).
ExprPtr constant(double v) { return leir::make_number(v); }

// One opaque leaf of a comparison and its probe tensor.
struct Leaf {
  std::string key;            // analysis::structural_key
  ExprPtr expr;               // its first occurrence
  leir::DType dtype;          // of the probe tensor
  bool nonneg = false;        // a read of a tensor whose values are >= 0
  std::string tensor;         // "L<index>"
  ExprPtr read;               // tensor[probe]
};

// The value of `leaf` on probe `probe` (seeded by its key and the probe number).
double draw(const Leaf& leaf, uint64_t key_hash, int probe) {
  const Expr& e = *leaf.expr;
  interp::Rng rng(key_hash ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(probe + 1)));
  double v;
  if (e.kind == ExprKind::IndexVar) {
    v = static_cast<double>(rng.uniform_int(0, 3));
  } else if (e.dtype == leir::DType::Bool) {
    v = static_cast<double>(rng.uniform_int(0, 1));
  } else if (leir::is_integer(e.dtype)) {
    v = static_cast<double>(rng.uniform_int(-3, 3));
  } else {
    switch (probe % kProfiles) {
      case 0: v = rng.uniform(-1, 1); break;
      case 1: v = rng.uniform(-1, 1) * 1e3; break;
      case 2: v = rng.uniform(-1, 1) * 1e-3; break;
      case 3: v = static_cast<double>(rng.uniform_int(-2, 2)); break;
      case 4: v = rng.uniform(0, 2); break;
      case 5: v = rng.uniform(-1, 1) * 30; break;
      // Extremes where exp overflows or underflows: catch splits such as exp(x-y) ->
      // exp(x)*exp(-y), which give inf*0 = NaN for x, y ~ 800 while exp(x-y) is finite.
      case 6: v = rng.uniform(600, 1000) * (rng.uniform() < 0.5 ? -1 : 1); break;
      default: v = rng.uniform(700, 1000); break;
    }
  }
  if (leaf.nonneg) v = std::fabs(v);
  return v;
}

// Builds and runs the probe program of one comparison.
class ProbeProgram {
 public:
  ProbeProgram(int probes, const std::set<std::string>* nonneg) : probes_(probes), nonneg_(nonneg) {
    index_ = leir::make_var("probe");
  }

  // `e` with its leaves replaced by reads of their probe tensors (memoized per node).
  ExprPtr lower(const ExprPtr& e) {
    if (auto it = lowered_.find(e.get()); it != lowered_.end()) return it->second;
    ExprPtr out;
    if (e->kind == ExprKind::Access || e->kind == ExprKind::IndexVar) {
      out = leaf_read(leaf_of(e));
    } else if (e->args.empty()) {
      out = e;
    } else {
      auto copy = std::make_shared<Expr>(*e);
      for (auto& a : copy->args) a = lower(a);
      out = copy;
    }
    lowered_.emplace(e.get(), out);
    return out;
  }

  // Appends to `terms` the finite magnitude of every node of `e` the interpreter evaluates, as
  // expressions over the lowered tree (if_then_else: the branches' terms only where taken).
  void magnitudes(const ExprPtr& e, std::vector<ExprPtr>& terms) {
    switch (e->kind) {
      case ExprKind::Number:
        if (std::isfinite(e->value) && e->value != 0) terms.push_back(constant(std::fabs(e->value)));
        return;
      case ExprKind::Access:
      case ExprKind::IndexVar:  // the draws are finite
        terms.push_back(leir::make_call(Func::Abs, {lower(e)}));
        return;
      default:
        break;
    }
    terms.push_back(finite_magnitude(lower(e)));
    if (e->kind == ExprKind::Call && e->func == Func::IfThenElse) {
      magnitudes(e->args[0], terms);
      std::vector<ExprPtr> taken, other;
      magnitudes(e->args[1], taken);
      magnitudes(e->args[2], other);
      terms.push_back(leir::make_call(Func::IfThenElse, {lower(e->args[0]), max_of(taken), max_of(other)}));
      return;
    }
    for (const auto& a : e->args) magnitudes(a, terms);
  }

  // Adds `out[probe] = e` over every probe, `out` an f64 output.
  void add_output(const std::string& out, const ExprPtr& e) {
    body_.push_back(leir::Item::of(leir::Stmt{read(out, leir::DType::F64), e, {}}));
    outputs_.push_back(out);
  }
  ExprPtr read(const std::string& tensor, leir::DType dtype) const {
    return probes_ == 1 ? leir::make_access(tensor, dtype, leir::Scope::Global, {})
                        : leir::make_access(tensor, dtype, leir::Scope::Global, {index_});
  }

  static ExprPtr max_of(std::vector<ExprPtr> terms) {
    if (terms.empty()) return constant(0);
    while (terms.size() > 1) {  // balanced: few registers
      std::vector<ExprPtr> next;
      for (size_t i = 0; i + 1 < terms.size(); i += 2) next.push_back(leir::make_call(Func::Max, {terms[i], terms[i + 1]}));
      if (terms.size() % 2) next.push_back(terms.back());
      terms = std::move(next);
    }
    return terms[0];
  }

  // |v| where finite, else 0.
  static ExprPtr finite_magnitude(const ExprPtr& v) {
    ExprPtr a = leir::make_call(Func::Abs, {v});
    return leir::make_call(Func::IfThenElse,
                           {leir::make_compare({a, constant(std::numeric_limits<double>::infinity())}, {leir::CompareOp::Lt}),
                            a, constant(0)});
  }

  // Compiles and runs the program; returns the outputs' values (probes_ each) in the order added.
  std::vector<std::vector<double>> run() {
    leir::Program p;
    p.name = "probes";
    std::vector<int64_t> shape = probes_ == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{probes_};
    for (const auto& l : leaves_) p.known.push_back({l.tensor, leir::Role::Input, l.dtype, shape, {}, {}, {}});
    for (const auto& o : outputs_) p.known.push_back({o, leir::Role::Output, leir::DType::F64, shape, {}, {}, {}});
    if (probes_ == 1) {
      p.body = std::move(body_);
    } else {
      leir::Nest n;
      n.loops.push_back({leir::LoopKind::Serial, probes_, index_->var_name(), 0, {}});
      n.body = std::move(body_);
      p.body.push_back(leir::Item::of(std::move(n)));
    }
    auto cp = interp::compile_program(p);
    std::vector<interp::TensorStore> stores(cp->slots.size());
    std::vector<size_t> out_slots(outputs_.size());
    for (size_t i = 0; i < cp->slots.size(); ++i) {
      const interp::TensorSlot& slot = cp->slots[i];
      if (slot.read_only) {
        const Leaf& l = leaves_[leaf_index_.at(slot.name)];
        uint64_t h = base::fnv1a(l.key, base::kProgramHashBasis);
        stores[i].data.resize(static_cast<size_t>(probes_));
        for (int k = 0; k < probes_; ++k) {
          // The store rounding of the interpreter's input binding (exact for these draws).
          auto v = interp::store_as(slot.dtype, draw(l, h, k));
          stores[i].data[k] = v ? *v : NAN;
        }
      } else {
        stores[i].data.assign(static_cast<size_t>(slot.numel), 0.0);
        stores[i].set.assign(static_cast<size_t>(slot.numel), 0);
        for (size_t o = 0; o < outputs_.size(); ++o)
          if (outputs_[o] == slot.name) out_slots[o] = i;
      }
    }
    interp::execute(*cp, stores, /*detect_races=*/false);
    std::vector<std::vector<double>> out;
    for (size_t s : out_slots) out.push_back(std::move(stores[s].data));
    leaf_values_.assign(leaves_.size(), {});
    for (size_t i = 0; i < cp->slots.size(); ++i)
      if (cp->slots[i].read_only) leaf_values_[leaf_index_.at(cp->slots[i].name)] = std::move(stores[i].data);
    return out;
  }

  // "key=value, ..." of every leaf on probe `k`, in key order (after run()).
  std::string leaf_values(int k) const {
    std::string where;
    for (const auto& [key, index] : by_key_) {
      if (where.size() > 160) {
        where += ", ...";
        break;
      }
      where += (where.empty() ? "" : ", ") + key + "=" + leir::format_number(leaf_values_[index][k], false);
    }
    return where;
  }

 private:
  size_t leaf_of(const ExprPtr& e) {
    std::string key = analysis::structural_key(e);
    auto [it, inserted] = by_key_.try_emplace(key, leaves_.size());
    if (inserted) {
      Leaf l;
      l.key = key;
      l.expr = e;
      l.dtype = e->kind == ExprKind::IndexVar       ? leir::DType::I64
                : e->dtype == leir::DType::Bool     ? leir::DType::Bool
                : leir::is_integer(e->dtype)        ? leir::DType::I64
                                                    : leir::DType::F64;
      l.nonneg = nonneg_ && e->kind == ExprKind::Access && nonneg_->count(e->tensor) > 0;
      l.tensor = "L" + std::to_string(leaves_.size());
      leaf_index_.emplace(l.tensor, leaves_.size());
      leaves_.push_back(std::move(l));
    }
    return it->second;
  }
  ExprPtr leaf_read(size_t i) {
    if (!leaves_[i].read) leaves_[i].read = read(leaves_[i].tensor, leaves_[i].dtype);
    return leaves_[i].read;
  }

  int probes_;
  const std::set<std::string>* nonneg_;
  ExprPtr index_;
  std::vector<Leaf> leaves_;
  std::map<std::string, size_t> by_key_;
  std::map<std::string, size_t> leaf_index_;
  std::map<const Expr*, ExprPtr> lowered_;
  std::vector<leir::Item> body_;
  std::vector<std::string> outputs_;
  std::vector<std::vector<double>> leaf_values_;  // per leaf, after run()
};

std::string show(double v) { return leir::format_number(v, false); }

}  // namespace

double constant_value_of(const ExprPtr& e) {
  if (e->is_number()) return e->value;
  ProbeProgram pp(1, nullptr);
  pp.add_output("C", pp.lower(e));
  try {
    return pp.run()[0][0];
  } catch (const std::exception&) {
    return std::numeric_limits<double>::quiet_NaN();  // not a constant the interpreter can compute
  }
}

std::string probe_disagreement(const ExprPtr& before, const ExprPtr& after, const std::set<std::string>& nonneg) {
  auto finite_abs = [](double v) { return std::isfinite(v) ? std::fabs(v) : 0.0; };
  // Every node evaluated includes the two roots, so a probe whose difference is within the
  // tolerance of the roots' own magnitude agrees whatever M is. The first program computes X and Y
  // only; M (a second program) is needed only when some probe is not decided that way: a
  // cancellation inside an identity or a false identity, rare (84 of 42000 comparisons in the
  // strategy sweep).
  for (bool with_scale : {false, true}) {
    ProbeProgram pp(kProbes, &nonneg);
    pp.add_output("X", pp.lower(before));
    pp.add_output("Y", pp.lower(after));
    if (with_scale) {
      std::vector<ExprPtr> terms;
      pp.magnitudes(before, terms);
      pp.magnitudes(after, terms);
      // M stays 0 where the roots' magnitude decides (as above): only the other probes pay for it.
      ExprPtr rx = pp.read("X", leir::DType::F64), ry = pp.read("Y", leir::DType::F64);
      ExprPtr close = leir::make_compare(
          {leir::make_call(Func::Abs, {leir::make_binary(BinaryOp::Sub, rx, ry)}),
           leir::make_binary(BinaryOp::Add,
                             leir::make_binary(BinaryOp::Mul, constant(1e-6),
                                               leir::make_call(Func::Max, {ProbeProgram::finite_magnitude(rx),
                                                                           ProbeProgram::finite_magnitude(ry)})),
                             constant(1e-300))},
          {leir::CompareOp::Le});
      pp.add_output("M", leir::make_call(Func::IfThenElse, {close, constant(0), ProbeProgram::max_of(std::move(terms))}));
    }
    std::vector<std::vector<double>> out;
    try {
      out = pp.run();
    } catch (const std::exception& e) {
      return std::string("the probe program failed: ") + e.what();
    }
    bool need_scale = false;
    for (int k = 0; k < kProbes && !need_scale; ++k) {
      double xv = out[0][k], yv = out[1][k];
      double scale = std::max({with_scale ? out[2][k] : 0.0, finite_abs(xv), finite_abs(yv)});
      bool same;
      if (std::isnan(xv) || std::isnan(yv)) same = std::isnan(xv) && std::isnan(yv);
      else if (std::isinf(xv) || std::isinf(yv)) same = xv == yv;
      // Rounding, including precision lost in subnormals, stays far below this; a false
      // identity does not (it is off by O(1) relative on most probes).
      else same = std::fabs(xv - yv) <= 1e-6 * scale + 1e-300;
      if (same) continue;
      if (!with_scale && std::isfinite(xv) && std::isfinite(yv)) {
        need_scale = true;
        continue;
      }
      return "on probe " + std::to_string(k) + " (" + kProfileNames[k % kProfiles] + ": " + pp.leaf_values(k) +
             ") the input gives " + show(xv) + " but the result gives " + show(yv);
    }
    if (!need_scale) return {};
  }
  return {};
}

}  // namespace steptp::strategies::algebraic
