#include "strategies/algebraic_base.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "base/hash.h"
#include "analysis/accumulation.h"
#include "analysis/algebra.h"
#include "interp/bytecode.h"
#include "interp/executor.h"
#include "interp/inputs.h"
#include "interp/scalar_ops.h"
#include "leir/ir_mutator.h"
#include "leir/program_io.h"
#include "leir/printer.h"
#include "strategies/schedule_state.h"

namespace steptp::strategies::algebraic {

using leir::BinaryOp;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Func;
using leir::Program;

ExprPtr num(double v) { return leir::make_number(v, leir::format_number(v, true)); }

std::string brief(const ExprPtr& e, size_t max_chars) {
  std::string s = leir::print_expr(e);
  if (s.size() > max_chars) s = s.substr(0, max_chars - 3) + "...";
  return s;
}

ExprPtr replace_at(const ExprPtr& root, const std::vector<int>& path, const ExprPtr& by) {
  if (path.empty()) return by;
  auto copy = std::make_shared<Expr>(*root);
  std::vector<int> rest(path.begin() + 1, path.end());
  copy->args[static_cast<size_t>(path[0])] = replace_at(root->args[static_cast<size_t>(path[0])], rest, by);
  return copy;
}

// ---------------------------------------------------------------------------------------------
// Statements and their rewritable parts

namespace {

struct SignedTerm {
  ExprPtr e;
  bool positive;
};

void flatten_additive(const ExprPtr& e, bool positive, std::vector<SignedTerm>& out) {
  if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::Add || e->bop == BinaryOp::Sub)) {
    flatten_additive(e->args[0], positive, out);
    flatten_additive(e->args[1], e->bop == BinaryOp::Add ? positive : !positive, out);
    return;
  }
  out.push_back({e, positive});
}

void flatten_product(const ExprPtr& e, std::vector<ExprPtr>& out) {
  if (e->kind == ExprKind::Binary && e->bop == BinaryOp::Mul) {
    flatten_product(e->args[0], out);
    flatten_product(e->args[1], out);
    return;
  }
  out.push_back(e);
}

ExprPtr additive_chain(const std::vector<SignedTerm>& terms) {
  ExprPtr acc = terms[0].positive ? terms[0].e : leir::make_neg(terms[0].e);
  for (size_t i = 1; i < terms.size(); ++i)
    acc = leir::make_binary(terms[i].positive ? BinaryOp::Add : BinaryOp::Sub, acc, terms[i].e);
  return acc;
}

// The signed terms of `e` read as a sum (a leading unary minus is folded into the sign).
std::vector<SignedTerm> signed_terms(const ExprPtr& e) {
  std::vector<SignedTerm> terms;
  flatten_additive(e, true, terms);
  for (auto& t : terms)
    while (t.e->kind == ExprKind::Unary) {
      t.e = t.e->args[0];
      t.positive = !t.positive;
    }
  return terms;
}

// Whether `target` is the body itself or one of the `spine` operators chaining its terms
// (paths [], [0], [0,0], ...): the rewrite may have changed how many terms there are.
bool on_spine(const std::vector<int>& target, size_t spine) {
  return target.size() < spine && std::all_of(target.begin(), target.end(), [](int k) { return k == 0; });
}

// The `spine` left-nested binary operators at the top of `e`, as a view chained them: the first
// operand, then each right operand with its operator, in order. The operands stay whole.
struct Chain {
  ExprPtr first;
  std::vector<std::pair<BinaryOp, ExprPtr>> rest;
};
Chain unchain(ExprPtr e, size_t spine) {
  Chain c;
  for (size_t k = 0; k < spine; ++k) {
    c.rest.push_back({e->bop, e->args[1]});
    e = e->args[0];
  }
  std::reverse(c.rest.begin(), c.rest.end());
  c.first = e;
  return c;
}

std::optional<StmtView> view_of(const leir::Stmt& s, const std::vector<int>& path, std::string& why) {
  if (!leir::is_floating(s.lhs->dtype)) {
    why = "stores into " + std::string(leir::to_string(s.lhs->dtype)) +
          " tensor (the store truncates: any rounding change can change the stored value)";
    return std::nullopt;
  }
  StmtView v;
  v.path = path;
  v.stmt = &s;
  auto acc = analysis::accumulation_of(s);
  if (!acc) {
    v.body = s.rhs;
    v.reassemble = [](const ExprPtr& b, const std::vector<int>&) { return b; };
    return v;
  }
  if (acc->other_self_reads > 0) {
    why = "accumulation reads its own element more than once";
    return std::nullopt;
  }
  v.accumulation = true;
  ExprPtr self = acc->self;
  ExprPtr lhs = s.lhs;
  switch (acc->op) {
    case analysis::AccumOp::Add: {
      std::vector<SignedTerm> terms;
      flatten_additive(s.rhs, true, terms);
      std::vector<SignedTerm> rest;
      bool removed = false;
      for (auto& t : terms) {
        if (!removed && t.e == self) {
          removed = true;
          continue;
        }
        rest.push_back(t);
      }
      if (rest.empty()) {
        why = "accumulation has nothing besides its accumulator";
        return std::nullopt;
      }
      v.body = additive_chain(rest);
      const size_t spine = rest.size() - 1;
      v.reassemble = [lhs, spine](const ExprPtr& b, const std::vector<int>& target) {
        std::vector<SignedTerm> terms{{lhs, true}};
        if (on_spine(target, spine)) {
          for (auto& t : signed_terms(b)) terms.push_back(t);
        } else {
          Chain c = unchain(b, spine);
          if (c.first->kind == ExprKind::Unary) terms.push_back({c.first->args[0], false});
          else terms.push_back({c.first, true});
          for (const auto& [op, e] : c.rest) terms.push_back({e, op == BinaryOp::Add});
        }
        return additive_chain(terms);
      };
      return v;
    }
    case analysis::AccumOp::Mul: {
      std::vector<ExprPtr> factors;
      flatten_product(s.rhs, factors);
      std::vector<ExprPtr> rest;
      bool removed = false;
      for (auto& f : factors) {
        if (!removed && f == self) {
          removed = true;
          continue;
        }
        rest.push_back(f);
      }
      if (rest.empty()) {
        why = "accumulation has nothing besides its accumulator";
        return std::nullopt;
      }
      ExprPtr body = rest[0];
      for (size_t i = 1; i < rest.size(); ++i) body = leir::make_binary(BinaryOp::Mul, body, rest[i]);
      v.body = body;
      const size_t spine = rest.size() - 1;
      v.reassemble = [lhs, spine](const ExprPtr& b, const std::vector<int>& target) {
        std::vector<ExprPtr> fs;
        if (on_spine(target, spine)) {
          flatten_product(b, fs);
        } else {
          Chain c = unchain(b, spine);
          fs.push_back(c.first);
          for (const auto& [op, e] : c.rest) fs.push_back(e);
        }
        ExprPtr acc = lhs;
        for (auto& f : fs) acc = leir::make_binary(BinaryOp::Mul, acc, f);
        return acc;
      };
      return v;
    }
    case analysis::AccumOp::Max:
    case analysis::AccumOp::Min: {
      bool self_first = s.rhs->args[0] == self;
      v.body = s.rhs->args[self_first ? 1 : 0];
      Func f = s.rhs->func;
      v.reassemble = [lhs, self_first, f](const ExprPtr& b, const std::vector<int>&) {
        return self_first ? leir::make_call(f, {lhs, b}) : leir::make_call(f, {b, lhs});
      };
      return v;
    }
  }
  return std::nullopt;
}

void collect_views(const std::vector<leir::Item>& body, std::vector<int>& path, std::vector<StmtView>& out,
                   std::vector<Refusal>* refused) {
  for (size_t i = 0; i < body.size(); ++i) {
    path.push_back(static_cast<int>(i));
    const auto& item = body[i];
    if (item.is_stmt()) {
      std::string why;
      auto v = view_of(item.stmt, path, why);
      if (v) out.push_back(std::move(*v));
      else if (refused) refused->push_back({"stmt " + leir::print_stmt(item.stmt), why});
    } else {
      collect_views(item.nest.body, path, out, refused);
    }
    path.pop_back();
  }
}

void set_stmt(std::vector<leir::Item>& body, const std::vector<int>& path, size_t k, const leir::Stmt& s) {
  leir::Item& item = body[static_cast<size_t>(path[k])];
  if (k + 1 == path.size()) item.stmt = s;
  else set_stmt(item.nest.body, path, k + 1, s);
}

// Continuous calls whose arguments are regions of their own.
bool continuous_opaque(Func f) {
  switch (f) {
    case Func::Max: case Func::Min: case Func::Erf: case Func::Tanh: case Func::Sigmoid:
    case Func::Abs: case Func::Sin: case Func::Cos: case Func::Log1p:
      return true;
    default:
      return false;
  }
}

bool transparent(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Unary: return true;
    case ExprKind::Binary:
      return e.bop == BinaryOp::Add || e.bop == BinaryOp::Sub || e.bop == BinaryOp::Mul ||
             e.bop == BinaryOp::Div || e.bop == BinaryOp::Pow;
    case ExprKind::Call:
      return e.func == Func::Exp || e.func == Func::Log || e.func == Func::Sqrt || e.func == Func::Rsqrt ||
             e.func == Func::Pow;
    default: return false;
  }
}

// Visits every node reachable without crossing a discontinuity, reporting region roots.
void walk(const ExprPtr& e, std::vector<int>& path, bool region_root,
          const std::function<void(const ExprPtr&, const std::vector<int>&, bool)>& fn) {
  fn(e, path, region_root);
  auto descend = [&](size_t i, bool root) {
    path.push_back(static_cast<int>(i));
    walk(e->args[i], path, root, fn);
    path.pop_back();
  };
  if (transparent(*e)) {
    for (size_t i = 0; i < e->args.size(); ++i) descend(i, false);
  } else if (e->kind == ExprKind::Call && continuous_opaque(e->func)) {
    for (size_t i = 0; i < e->args.size(); ++i) descend(i, true);
  } else if (e->kind == ExprKind::Call && e->func == Func::IfThenElse) {
    descend(1, true);
    descend(2, true);
  }
}

}  // namespace

std::vector<StmtView> statement_views(const Program& p, std::vector<Refusal>* refused) {
  std::vector<StmtView> out;
  std::vector<int> path;
  collect_views(p.body, path, out, refused);
  return out;
}

std::vector<Target> region_targets(const StmtView& v) {
  std::vector<Target> out;
  std::vector<int> path;
  walk(v.body, path, true, [&](const ExprPtr& e, const std::vector<int>& at, bool root) {
    if (root && transparent(*e)) out.push_back({at, e});
  });
  return out;
}

std::vector<Target> node_targets(const StmtView& v, const std::function<bool(const Expr&)>& pick) {
  std::vector<Target> out;
  std::vector<int> path;
  walk(v.body, path, true, [&](const ExprPtr& e, const std::vector<int>& at, bool) {
    if (pick(*e)) out.push_back({at, e});
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Sign facts

bool nonnegative(const ExprPtr& e, const std::set<std::string>& nn) {
  switch (e->kind) {
    case ExprKind::Number: return e->value >= 0;
    case ExprKind::Access: return nn.count(e->tensor) > 0;
    case ExprKind::Binary:
      switch (e->bop) {
        case BinaryOp::Add: case BinaryOp::Mul: case BinaryOp::Div:
          return nonnegative(e->args[0], nn) && nonnegative(e->args[1], nn);
        case BinaryOp::Pow: {
          if (nonnegative(e->args[0], nn)) return true;
          const auto& k = e->args[1];
          return k->is_number() && std::fmod(k->value, 2.0) == 0.0;
        }
        default: return false;
      }
    case ExprKind::Call:
      switch (e->func) {
        case Func::Exp: case Func::Sqrt: case Func::Abs: case Func::Sigmoid: case Func::Rsqrt: return true;
        case Func::Max: return nonnegative(e->args[0], nn) || nonnegative(e->args[1], nn);
        case Func::Min: return nonnegative(e->args[0], nn) && nonnegative(e->args[1], nn);
        case Func::IfThenElse: return nonnegative(e->args[1], nn) && nonnegative(e->args[2], nn);
        case Func::Pow:
          return nonnegative(e->args[0], nn) ||
                 (e->args[1]->is_number() && std::fmod(e->args[1]->value, 2.0) == 0.0);
        default: return false;
      }
    default: return false;
  }
}

namespace {
bool positive(const ExprPtr& e, const std::set<std::string>& nn) {
  switch (e->kind) {
    case ExprKind::Number: return e->value > 0;
    case ExprKind::Binary:
      switch (e->bop) {
        case BinaryOp::Add:
          return (positive(e->args[0], nn) && nonnegative(e->args[1], nn)) ||
                 (nonnegative(e->args[0], nn) && positive(e->args[1], nn));
        case BinaryOp::Mul: case BinaryOp::Div: return positive(e->args[0], nn) && positive(e->args[1], nn);
        case BinaryOp::Pow: return positive(e->args[0], nn);
        default: return false;
      }
    case ExprKind::Call:
      if (e->func == Func::Sqrt || e->func == Func::Abs) return positive(e->args[0], nn);
      if (e->func == Func::Max) return positive(e->args[0], nn) || positive(e->args[1], nn);
      return false;
    default: return false;
  }
}
}  // namespace

namespace {
bool has_leaves(const ExprPtr& e) {
  if (e->kind == ExprKind::Access || e->kind == ExprKind::IndexVar) return true;
  return std::any_of(e->args.begin(), e->args.end(), has_leaves);
}
}  // namespace

double constant_value_of(const ExprPtr& e);  // below, with the probe evaluator

bool nonzero(const ExprPtr& e, const std::set<std::string>& nn) {
  if (!has_leaves(e)) {
    double v = constant_value_of(e);
    return std::isfinite(v) && v != 0;
  }
  if (e->kind == ExprKind::Unary) return nonzero(e->args[0], nn);
  if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::Mul || e->bop == BinaryOp::Div))
    return nonzero(e->args[0], nn) && nonzero(e->args[1], nn);
  if (e->kind == ExprKind::Binary && e->bop == BinaryOp::Pow) return nonzero(e->args[0], nn);
  return positive(e, nn);
}

std::set<std::string> nonnegative_tensors(const Program& p) {
  std::set<std::string> nn;
  std::vector<const leir::Stmt*> writes;
  leir::for_each_stmt(p.body, [&](const leir::Stmt& s, const std::vector<const leir::Loop*>&) {
    writes.push_back(&s);
    if (!p.find_known(s.lhs->tensor) || p.find_known(s.lhs->tensor)->role == leir::Role::Output)
      nn.insert(s.lhs->tensor);
  });
  for (const auto& d : p.known)
    if (d.role == leir::Role::Constant && d.value &&
        std::all_of(d.value->begin(), d.value->end(), [](double x) { return x >= 0; }))
      nn.insert(d.name);
  // Greatest fixpoint: drop every tensor with a write that is not provably >= 0 assuming the
  // current set; by induction over execution order every value of a remaining tensor is >= 0.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto* s : writes) {
      if (!nn.count(s->lhs->tensor)) continue;
      if (!nonnegative(s->rhs, nn)) {
        nn.erase(s->lhs->tensor);
        changed = true;
      }
    }
  }
  return nn;
}

// ---------------------------------------------------------------------------------------------
// Denominators

namespace {

std::string sign_insensitive_key(const ExprPtr& e) {
  std::string a = analysis::canonical_key(e);
  std::string b = analysis::canonical_key(leir::make_neg(e));
  // canonical_key(-(x)) of a sum flips every term sign; take the smaller of the two spellings.
  if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::Add || e->bop == BinaryOp::Sub)) {
    std::vector<SignedTerm> terms = signed_terms(e);
    for (auto& t : terms) t.positive = !t.positive;
    b = analysis::canonical_key(additive_chain(terms));
  }
  return std::min(a, b);
}

void divisor_factors(const ExprPtr& e, std::vector<ExprPtr>& out) {
  if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::Mul || e->bop == BinaryOp::Div)) {
    divisor_factors(e->args[0], out);
    // x/(a/b) = x*b/a: b is a numerator factor, and a zero b only makes the quotient zero.
    if (e->bop == BinaryOp::Mul) divisor_factors(e->args[1], out);
    return;
  }
  if (e->kind == ExprKind::Unary) return divisor_factors(e->args[0], out);
  if (e->kind == ExprKind::Binary && e->bop == BinaryOp::Pow && e->args[1]->is_number() && e->args[1]->value > 0)
    return divisor_factors(e->args[0], out);
  if (e->kind == ExprKind::Call && e->func == Func::Sqrt) return divisor_factors(e->args[0], out);
  out.push_back(e);
}

void collect_denominators(const ExprPtr& e, const std::set<std::string>& nn, std::set<std::string>& out) {
  std::vector<ExprPtr> divisors;
  if (e->kind == ExprKind::Binary && e->bop == BinaryOp::Div) divisors.push_back(e->args[1]);
  if (e->kind == ExprKind::Binary && e->bop == BinaryOp::Pow && !nonnegative(e->args[1], nn))
    divisors.push_back(e->args[0]);
  if (e->kind == ExprKind::Call && e->func == Func::Rsqrt) divisors.push_back(e->args[0]);
  if (e->kind == ExprKind::Call && e->func == Func::Pow && !nonnegative(e->args[1], nn))
    divisors.push_back(e->args[0]);
  for (const auto& d : divisors) {
    std::vector<ExprPtr> factors;
    divisor_factors(d, factors);
    for (const auto& f : factors)
      if (!nonzero(f, nn)) out.insert(sign_insensitive_key(f));
  }
  for (const auto& a : e->args) collect_denominators(a, nn, out);
}

}  // namespace

std::set<std::string> risky_denominators(const ExprPtr& e, const std::set<std::string>& nn) {
  std::set<std::string> out;
  collect_denominators(e, nn, out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Probes
//
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

// The value of an expression without leaves, as the interpreter computes it.
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

// ---------------------------------------------------------------------------------------------
// The strategy skeleton

AlgebraicStrategy::Attempt AlgebraicStrategy::attempt(const ScheduleState& st, const StmtView& v, const Target& t,
                                                      const Params& params,
                                                      const std::set<std::string>& nonneg) const {
  Context ctx{st, st.program(), v, nonneg};
  Rewrite r;
  try {
    r = rewrite(t, params, ctx);
  } catch (const std::exception& e) {
    return {std::nullopt, std::string("computer algebra failed: ") + e.what()};
  }
  if (!r.result) return {std::nullopt, r.refusal};
  if (analysis::canonical_key(r.result) == analysis::canonical_key(t.expr))
    return {std::nullopt, "the result only reprints the expression (same canonical form)"};
  size_t before = analysis::expr_size(t.expr), after = analysis::expr_size(r.result);
  if (after > 4 * before + 16)
    return {std::nullopt, "the result is too large (" + std::to_string(after) + " nodes from " +
                              std::to_string(before) + ")"};
  auto den_before = risky_denominators(t.expr, nonneg);
  auto den_after = risky_denominators(r.result, nonneg);
  if (!checks_denominators()) den_before = den_after = {};
  for (const auto& d : den_after)
    if (!den_before.count(d)) return {std::nullopt, "would introduce a division by " + d + ", which can be zero"};
  for (const auto& d : den_before)
    if (!den_after.count(d))
      return {std::nullopt, "would remove the division by " + d + " (the input is undefined where it is zero)"};
  if (std::string why = probe_disagreement(t.expr, r.result, nonneg); !why.empty())
    return {std::nullopt, "not equivalent in float64: " + why};

  leir::Stmt s = *v.stmt;
  s.rhs = v.reassemble(replace_at(v.body, t.path, r.result), t.path);
  if (analysis::is_accumulation(s) != v.accumulation)
    return {std::nullopt, v.accumulation ? "the result would no longer be an accumulation"
                                          : "the result would read as an accumulation"};
  if (v.accumulation) {
    auto a0 = analysis::accumulation_of(*v.stmt), a1 = analysis::accumulation_of(s);
    if (!a1 || a1->op != a0->op || a1->other_self_reads != 0)
      return {std::nullopt, "the result would change the accumulation"};
  }
  return {std::move(s), {}};
}

namespace {

std::string site_description(const StmtView& v, const Target& t) {
  return "stmt " + leir::print_expr(v.stmt->lhs) + ": " + brief(t.expr);
}

// What every algebraic strategy needs of a program, computed once per state and shared by the
// family: the statements' rewritable parts (and the ineligible statements' refusals) and the
// tensors known to be non-negative.
struct StatementFacts {
  std::vector<StmtView> views;
  std::vector<Refusal> refused;
  std::set<std::string> nonneg;
};

const StatementFacts& statement_facts(const ScheduleState& st) {
  static const char owner = 0;
  return st.memo<StatementFacts>(&owner, [&] {
    StatementFacts f;
    f.views = statement_views(st.program(), &f.refused);
    f.nonneg = nonnegative_tensors(st.program());
    return f;
  });
}

}  // namespace

// Every target of every statement, tried with every parameter choice once per state: sites,
// refusals, parameter spaces and applied statements all come from these attempts.
struct AlgebraicStrategy::Attempts {
  struct Legal {
    Params params;
    leir::Stmt stmt;  // the statement rewritten with these parameters
  };
  struct ForTarget {
    Site site;
    const StmtView* view = nullptr;
    Target target;
    std::vector<Legal> legal;  // in target_params order
  };
  std::vector<ForTarget> targets;
  Survey survey;

  const ForTarget* find(const Site& s) const {
    for (const auto& t : targets)
      if (t.site.path == s.path && t.site.detail == s.detail) return &t;
    return nullptr;
  }
};

const AlgebraicStrategy::Attempts& AlgebraicStrategy::attempts(const ScheduleState& st) const {
  return st.memo<Attempts>(this, [&] {
    const StatementFacts& facts = statement_facts(st);
    Attempts out;
    out.survey.refusals = facts.refused;
    for (const auto& v : facts.views) {
      auto ts = targets(v);
      if (ts.empty()) {
        out.survey.refusals.push_back({"stmt " + leir::print_stmt(*v.stmt), "no sub-expression this strategy rewrites"});
        continue;
      }
      for (size_t i = 0; i < ts.size(); ++i) {
        Attempts::ForTarget ft{{v.path, {static_cast<int>(i)}, site_description(v, ts[i])}, &v, ts[i], {}};
        Context ctx{st, st.program(), v, facts.nonneg};
        std::string reasons;
        for (const auto& params : target_params(ts[i], ctx)) {
          auto a = attempt(st, v, ts[i], params, facts.nonneg);
          if (a.stmt) {
            ft.legal.push_back({params, std::move(*a.stmt)});
            continue;
          }
          std::string ps = params.empty() ? "" : params_to_json(params) + ": ";
          if (reasons.find(a.refusal) == std::string::npos || !ps.empty())
            reasons += (reasons.empty() ? "" : "; ") + ps + a.refusal;
        }
        if (ft.legal.empty())
          out.survey.refusals.push_back({ft.site.description, reasons.empty() ? "no parameter applies" : reasons});
        else
          out.survey.sites.push_back(ft.site);
        out.targets.push_back(std::move(ft));
      }
    }
    return out;
  });
}

Survey AlgebraicStrategy::survey(const ScheduleState& st) const { return attempts(st).survey; }

std::vector<Params> AlgebraicStrategy::param_space(const ScheduleState& st, const Site& s) const {
  std::vector<Params> out;
  if (const auto* t = attempts(st).find(s))
    for (const auto& l : t->legal) out.push_back(l.params);
  return out;
}

Applied AlgebraicStrategy::apply(const ScheduleState& st, const Site& s, const Params& params) const {
  const auto* t = attempts(st).find(s);
  if (!t) return refuse(s, "no such statement target in this program");
  std::optional<leir::Stmt> stmt;
  for (const auto& l : t->legal)
    if (l.params == params) stmt = l.stmt;
  if (!stmt) {  // parameters outside the space: try them, for the reason
    auto a = attempt(st, *t->view, t->target, params, statement_facts(st).nonneg);
    if (!a.stmt) return refuse(s, a.refusal);
    stmt = std::move(a.stmt);
  }
  Program out = st.program();
  set_stmt(out.body, s.path, 0, *stmt);
  return candidate(st, s, params, Exactness::Algebraic, std::move(out));
}

}  // namespace steptp::strategies::algebraic
