// Powers, exponentials and logarithms (STRATEGIES.md 29-32), rewritten directly on the LEIR tree
// (NODES targets, algebraic_base.h): each rewrite is local and its domain conditions are ours.
//
//   29 powsimp         in one product chain: exp(a)*exp(b)/exp(c) -> exp(a+b-c); equal bases
//                      combine: x*x -> x**2, x**a*x**b -> x**(a+b), sqrt(x)*x -> x**1.5
//   30 expand_powsimp  inverse, on one node: exp(a+b-c) -> exp(a)*exp(b)*exp(-c);
//                      x**n (integer n >= 2) -> x**(n-1)*x; x**(a+b) -> x**a*x**b
//   31 expand_log      log(a*b/c) -> log(a)+log(b)-log(c), log(x**k) -> k*log(x),
//                      log(sqrt(x)) -> 0.5*log(x); every factor must be provably >= 0
//                      (otherwise log(a*b) is defined where log(a)+log(b) is NaN)
//   32 logsimp         inverse, on one sum: log(a)+log(b)-log(c) -> log(a*b/c), same condition
//
// Overflow: exp(a)*exp(b) and exp(a+b) differ when one factor overflows and the other underflows
// (inf*0 = NaN), e.g. the softmax numerator exp(x-max) split into exp(x)*exp(-max), which the
// public engine did. Values near +-1000 are ordinary inputs of the verifier (x1e3 profiles), and
// the numeric probes of the base class only see each access on its own scale (exp(H/6-max)
// escapes them), so exponentials are split or merged only when at most one exponent is unbounded:
// the others must be provably within +-2 (small constants, tanh/erf/sigmoid). Then the two forms
// overflow and underflow at the same points up to a window of width 2 (the margin exponential_split
// also accepts). Powers of equal bases merge only for numeric exponents of one sign (x**3*x**-1
// overflows where x**2 does not).
#include <algorithm>
#include <cmath>
#include <map>

#include "ir/analysis/algebra.h"
#include "ir/leir/printer.h"
#include "transform/algebraic_base.h"

namespace steptp::strategies::algebraic {
namespace {

using leir::BinaryOp;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Func;

// A reused sub-tree without the source's parentheses around it (they belonged to its old place).
ExprPtr bare(const ExprPtr& e) {
  if (e->parens == 0) return e;
  auto copy = std::make_shared<Expr>(*e);
  copy->parens = 0;
  return copy;
}

bool is_bin(const Expr& e, BinaryOp op) { return e.kind == ExprKind::Binary && e.bop == op; }
bool is_product(const Expr& e) { return is_bin(e, BinaryOp::Mul) || is_bin(e, BinaryOp::Div); }
bool is_sum(const Expr& e) { return is_bin(e, BinaryOp::Add) || is_bin(e, BinaryOp::Sub); }

struct Factor {
  ExprPtr e;
  bool inverse;
};

void product_factors(const ExprPtr& e, bool inverse, std::vector<Factor>& out) {
  if (is_product(*e)) {
    product_factors(e->args[0], inverse, out);
    product_factors(e->args[1], is_bin(*e, BinaryOp::Div) ? !inverse : inverse, out);
    return;
  }
  out.push_back({e, inverse});
}

struct Term {
  ExprPtr e;
  bool positive;
};

void sum_terms(const ExprPtr& e, bool positive, std::vector<Term>& out) {
  if (is_sum(*e)) {
    sum_terms(e->args[0], positive, out);
    sum_terms(e->args[1], is_bin(*e, BinaryOp::Sub) ? !positive : positive, out);
    return;
  }
  if (e->kind == ExprKind::Unary) return sum_terms(e->args[0], !positive, out);
  out.push_back({e, positive});
}

ExprPtr sum_of(const std::vector<Term>& terms) {
  ExprPtr acc = terms[0].positive ? terms[0].e : leir::make_neg(terms[0].e);
  for (size_t i = 1; i < terms.size(); ++i)
    acc = leir::make_binary(terms[i].positive ? BinaryOp::Add : BinaryOp::Sub, acc, terms[i].e);
  return acc;
}

ExprPtr product_of(const std::vector<Factor>& factors) {
  std::vector<ExprPtr> num, den;
  for (const auto& f : factors) (f.inverse ? den : num).push_back(f.e);
  ExprPtr n = num.empty() ? leir::make_int(1) : num[0];
  for (size_t i = 1; i < num.size(); ++i) n = leir::make_binary(BinaryOp::Mul, n, num[i]);
  if (den.empty()) return n;
  ExprPtr d = den[0];
  for (size_t i = 1; i < den.size(); ++i) d = leir::make_binary(BinaryOp::Mul, d, den[i]);
  return leir::make_binary(BinaryOp::Div, n, d);
}

// A product chain's root: a * or / node whose parent (if any) is not one.
std::vector<Target> product_roots(const StmtView& v) {
  std::vector<Target> all = node_targets(v, [](const Expr& e) { return is_product(e); });
  std::vector<Target> out;
  for (const auto& t : all) {
    bool inner = std::any_of(all.begin(), all.end(), [&](const Target& o) {
      return o.path.size() + 1 == t.path.size() && std::equal(o.path.begin(), o.path.end(), t.path.begin());
    });
    if (!inner) out.push_back(t);
  }
  return out;
}

std::vector<Target> sum_roots(const StmtView& v) {
  std::vector<Target> all = node_targets(v, [](const Expr& e) { return is_sum(e); });
  std::vector<Target> out;
  for (const auto& t : all) {
    bool inner = std::any_of(all.begin(), all.end(), [&](const Target& o) {
      return o.path.size() + 1 == t.path.size() && std::equal(o.path.begin(), o.path.end(), t.path.begin());
    });
    if (!inner) out.push_back(t);
  }
  return out;
}

// A bound on |e| that holds for every input, if one is known: numbers, tanh/erf/sigmoid, and
// sums, products and negations of bounded parts.
std::optional<double> magnitude_bound(const ExprPtr& e) {
  if (e->is_number()) return std::fabs(e->value);
  if (e->is_call(Func::Tanh) || e->is_call(Func::Erf) || e->is_call(Func::Sigmoid)) return 1.0;
  if (e->kind == ExprKind::Unary) return magnitude_bound(e->args[0]);
  if (is_sum(*e) || is_bin(*e, BinaryOp::Mul)) {
    auto a = magnitude_bound(e->args[0]), b = magnitude_bound(e->args[1]);
    if (!a || !b) return std::nullopt;
    return is_sum(*e) ? *a + *b : *a * *b;
  }
  return std::nullopt;
}

constexpr double kExponentMargin = 2;

// Exponents (of one exponential each, or terms of one exponent) of which at most one is unbounded.
// `scale` = |ln base| for powers of a numeric base (exp: 1).
bool at_most_one_unbounded(const std::vector<ExprPtr>& exponents, double scale = 1) {
  int unbounded = 0;
  for (const auto& k : exponents) {
    auto b = magnitude_bound(k);
    if (!b || *b * scale > kExponentMargin) ++unbounded;
  }
  return unbounded <= 1;
}
bool at_most_one_unbounded(const std::vector<Term>& terms, double scale = 1) {
  std::vector<ExprPtr> exponents;
  for (const auto& t : terms) exponents.push_back(t.e);
  return at_most_one_unbounded(exponents, scale);
}

constexpr const char* kOverflowRefusal =
    "two exponents are unbounded: exp(a)*exp(b) is inf*0 = NaN where exp(a+b) is finite (a, b near +-1000)";

// base ** exponent in the usual spelling (x for 1, sqrt(x) for 0.5).
ExprPtr power(const ExprPtr& base, const ExprPtr& k) {
  if (k->is_number() && k->value == 1) return base;
  if (k->is_number() && k->value == 0.5) return leir::make_call(Func::Sqrt, {base});
  return leir::make_binary(BinaryOp::Pow, base, k);
}

// Splits a factor into base and exponent: x**k, sqrt(x) = x**0.5, x = x**1.
std::pair<ExprPtr, ExprPtr> base_exponent(const ExprPtr& f) {
  if (is_bin(*f, BinaryOp::Pow)) return {f->args[0], f->args[1]};
  if (f->is_call(Func::Sqrt)) return {f->args[0], num(0.5)};
  return {f, leir::make_int(1)};
}

// Whether `k` joins `ks` in one power without a new overflow: all numbers of one sign.
bool same_sign_numbers(const std::vector<ExprPtr>& ks, const ExprPtr& k) {
  if (!k->is_number()) return false;
  return std::all_of(ks.begin(), ks.end(), [&](const ExprPtr& x) { return x->is_number() && (x->value > 0) == (k->value > 0); });
}

ExprPtr add_exponents(const std::vector<ExprPtr>& ks) {
  bool numeric = std::all_of(ks.begin(), ks.end(), [](const ExprPtr& k) { return k->is_number(); });
  if (numeric) {
    double s = 0;
    for (const auto& k : ks) s += k->value;
    return num(s);
  }
  std::vector<Term> terms;
  for (const auto& k : ks) sum_terms(k, true, terms);
  return sum_of(terms);
}

// ---------------------------------------------------------------------------------------------

class Powsimp final : public AlgebraicStrategy {
 public:
  std::string_view name() const override { return "powsimp"; }
  std::string_view description() const override {
    return "combine powers and exponentials of one product (exp(a)*exp(b) -> exp(a+b), x*x -> x**2)";
  }

 protected:
  std::vector<Target> targets(const StmtView& v) const override { return product_roots(v); }

  Rewrite rewrite(const Target& t, const Params&, const Context&) const override {
    std::vector<Factor> fs;
    product_factors(t.expr, false, fs);
    std::vector<Factor> out;
    bool changed = false;
    // exp factors -> one exp at the position of the first.
    std::vector<Term> exp_args;
    std::vector<ExprPtr> exp_exponents;  // one per exp factor
    int first_exp = -1;
    for (const auto& f : fs)
      if (f.e->is_call(Func::Exp)) {
        if (first_exp < 0) first_exp = static_cast<int>(out.size());
        sum_terms(f.e->args[0], !f.inverse, exp_args);
        exp_exponents.push_back(f.e->args[0]);
      } else {
        out.push_back(f);
      }
    int n_exp = static_cast<int>(exp_exponents.size());
    bool exp_refused = n_exp >= 2 && !at_most_one_unbounded(exp_exponents);
    if (exp_refused) {
      out = fs;
    } else if (n_exp >= 2) {
      std::stable_partition(exp_args.begin(), exp_args.end(), [](const Term& t) { return t.positive; });
      for (auto& a : exp_args) a.e = bare(a.e);
      out.insert(out.begin() + first_exp, Factor{leir::make_call(Func::Exp, {sum_of(exp_args)}), false});
      changed = true;
    } else if (n_exp == 1) {
      out.clear();
      out = fs;
    } else {
      out = fs;
    }
    // Equal bases among the numerator factors.
    std::vector<Factor> merged;
    std::map<std::string, size_t> seen;  // canonical key of base -> index in merged
    std::vector<std::vector<ExprPtr>> exponents;
    for (const auto& f : out) {
      auto [base, k] = base_exponent(f.e);
      std::string key = analysis::canonical_key(base);
      if (f.inverse || base->is_number()) {
        merged.push_back(f);
        exponents.emplace_back();
        continue;
      }
      auto it = seen.find(key);
      if (it != seen.end() && !same_sign_numbers(exponents[it->second], k)) it = seen.end();
      if (it == seen.end()) {
        seen.emplace(key, merged.size());
        merged.push_back(f);
        exponents.push_back({k});
      } else {
        exponents[it->second].push_back(k);
        merged[it->second].e = power(base, add_exponents(exponents[it->second]));
        changed = true;
      }
    }
    if (!changed)
      return Rewrite::refuse(exp_refused ? kOverflowRefusal : "no two exponentials and no equal bases in this product");
    return Rewrite::to(product_of(merged));
  }
};

class ExpandPowsimp final : public AlgebraicStrategy {
 public:
  std::string_view name() const override { return "expand_powsimp"; }
  std::string_view description() const override {
    return "split one power or exponential (exp(a+b) -> exp(a)*exp(b), x**3 -> x**2*x)";
  }

 protected:
  std::vector<Target> targets(const StmtView& v) const override {
    return node_targets(v, [](const Expr& e) {
      if (e.is_call(Func::Exp)) return is_sum(*e.args[0]);
      if (!is_bin(e, BinaryOp::Pow)) return false;
      const Expr& k = *e.args[1];
      return is_sum(k) || (k.is_number() && k.value >= 2 && k.value == std::floor(k.value) && k.value <= 16);
    });
  }

  Rewrite rewrite(const Target& t, const Params&, const Context&) const override {
    const ExprPtr& e = t.expr;
    if (e->is_call(Func::Exp)) {
      std::vector<Term> terms;
      sum_terms(e->args[0], true, terms);
      if (!at_most_one_unbounded(terms)) return Rewrite::refuse(kOverflowRefusal);
      ExprPtr acc;
      for (const auto& term : terms) {
        ExprPtr f = leir::make_call(Func::Exp, {term.positive ? bare(term.e) : leir::make_neg(term.e)});
        acc = acc ? leir::make_binary(BinaryOp::Mul, acc, f) : f;
      }
      return Rewrite::to(acc);
    }
    const ExprPtr& base = e->args[0];
    const ExprPtr& k = e->args[1];
    if (k->is_number()) {
      double n = k->value;
      ExprPtr head = n - 1 == 1 ? base : leir::make_binary(BinaryOp::Pow, base, leir::make_int(static_cast<int64_t>(n - 1)));
      return Rewrite::to(leir::make_binary(BinaryOp::Mul, head, base));
    }
    std::vector<Term> terms;
    sum_terms(k, true, terms);
    if (!base->is_number() || base->value <= 0)
      return Rewrite::refuse("the base is not a positive constant: x**a*x**b is inf*0 = NaN where x**(a+b) is finite");
    if (!at_most_one_unbounded(terms, std::fabs(std::log(base->value)))) return Rewrite::refuse(kOverflowRefusal);
    ExprPtr acc;
    for (const auto& term : terms) {
      ExprPtr f = power(base, term.positive ? term.e : leir::make_neg(term.e));
      acc = acc ? leir::make_binary(BinaryOp::Mul, acc, f) : f;
    }
    return Rewrite::to(acc);
  }
};

class ExpandLog final : public AlgebraicStrategy {
 public:
  std::string_view name() const override { return "expand_log"; }
  std::string_view description() const override {
    return "log(a*b) -> log(a)+log(b), log(a/b) -> log(a)-log(b), log(x**k) -> k*log(x) (a, b >= 0)";
  }

 protected:
  std::vector<Target> targets(const StmtView& v) const override {
    return node_targets(v, [](const Expr& e) {
      return e.is_call(Func::Log) &&
             (is_product(*e.args[0]) || is_bin(*e.args[0], BinaryOp::Pow) || e.args[0]->is_call(Func::Sqrt));
    });
  }

  bool checks_denominators() const override { return false; }

  Rewrite rewrite(const Target& t, const Params&, const Context& c) const override {
    const ExprPtr& arg = t.expr->args[0];
    auto log_of = [](const ExprPtr& x) { return leir::make_call(Func::Log, {bare(x)}); };
    if (arg->is_call(Func::Sqrt))  // defined exactly where sqrt is: no sign condition
      return Rewrite::to(leir::make_binary(BinaryOp::Mul, num(0.5), log_of(arg->args[0])));
    if (is_bin(*arg, BinaryOp::Pow)) {
      if (!nonnegative(arg->args[0], c.nonneg_tensors))
        return Rewrite::refuse(brief(arg->args[0]) + " is not provably >= 0 (log(x**k) -> k*log(x) needs x >= 0)");
      return Rewrite::to(leir::make_binary(BinaryOp::Mul, arg->args[1], log_of(arg->args[0])));
    }
    std::vector<Factor> fs;
    product_factors(arg, false, fs);
    for (const auto& f : fs)
      if (!nonnegative(f.e, c.nonneg_tensors))
        return Rewrite::refuse("factor " + brief(f.e) + " is not provably >= 0 (log(a*b) -> log(a)+log(b) needs a, b >= 0)");
    std::vector<Term> terms;
    for (const auto& f : fs) terms.push_back({log_of(f.e), !f.inverse});
    std::stable_partition(terms.begin(), terms.end(), [](const Term& x) { return x.positive; });
    return Rewrite::to(sum_of(terms));
  }
};

class Logsimp final : public AlgebraicStrategy {
 public:
  std::string_view name() const override { return "logsimp"; }
  std::string_view description() const override {
    return "log(a)+log(b) -> log(a*b), log(a)-log(b) -> log(a/b) (a, b >= 0)";
  }

 protected:
  std::vector<Target> targets(const StmtView& v) const override { return sum_roots(v); }
  bool checks_denominators() const override { return false; }

  Rewrite rewrite(const Target& t, const Params&, const Context& c) const override {
    std::vector<Term> terms;
    sum_terms(t.expr, true, terms);
    std::vector<Factor> logs;
    std::vector<Term> rest;
    int first_log = -1;
    std::string refusal;
    for (const auto& term : terms) {
      if (term.e->is_call(Func::Log)) {
        if (!nonnegative(term.e->args[0], c.nonneg_tensors)) {
          refusal = brief(term.e->args[0]) + " is not provably >= 0";
          rest.push_back(term);
          continue;
        }
        if (first_log < 0) first_log = static_cast<int>(rest.size());
        logs.push_back({term.e->args[0], !term.positive});
      } else {
        rest.push_back(term);
      }
    }
    if (logs.size() < 2)
      return Rewrite::refuse(refusal.empty() ? "fewer than two logarithms in this sum"
                                             : "fewer than two combinable logarithms (" + refusal + ")");
    std::stable_partition(logs.begin(), logs.end(), [](const Factor& f) { return !f.inverse; });
    for (auto& f : logs) f.e = bare(f.e);
    ExprPtr combined = leir::make_call(Func::Log, {product_of(logs)});
    rest.insert(rest.begin() + first_log, Term{combined, true});
    std::stable_partition(rest.begin(), rest.end(), [](const Term& x) { return x.positive; });
    return Rewrite::to(sum_of(rest));
  }
};

RegisterStrategy<Powsimp> powsimp_registrar(29);
RegisterStrategy<ExpandPowsimp> expand_powsimp_registrar(30);
RegisterStrategy<ExpandLog> expand_log_registrar(31);
RegisterStrategy<Logsimp> logsimp_registrar(32);

}  // namespace
}  // namespace steptp::strategies::algebraic
