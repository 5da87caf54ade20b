// The algebraic strategies that need a computer algebra system (STRATEGIES.md 23-28, 33-34),
// done by GiNaC on REGIONS (algebraic_base.h): each region of a statement is converted with
// analysis::AlgebraSession (tensor accesses opaque, distinct subscripts distinct), transformed,
// and printed back in the public sympy-like style. All of them are in one file on purpose: GiNaC
// headers are heavy to compile.
//
//   23 factorization        rational form, then numerator and denominator factored over Q
//                           (sympy's factor): a*b+a*c -> a*(b+c), K*(x-m)/s+M -> (K*x-K*m+M*s)/s
//   24 expand_factorization multiply out products and integer powers of sums (sympy's expand)
//   25 cancellation         p/q with p expanded and common factors cancelled (sympy's cancel);
//                           cancelling a factor that can be zero is refused by the guards
//   26 expand_cancellation  inverse: every fraction whose numerator is a sum becomes a sum of
//                           fractions, each term reduced on its own: (K*x-K*m+M*s)/s -> K*x/s-K*m/s+M
//   27 apart                partial fractions in one chosen variable (param "var"): polynomial
//                           division q + r/d when the denominator depends on it, otherwise the
//                           numerator split by powers of the variable: (x-m)/s -> x/s-m/s
//   28 together             a sum with fractions over one common denominator (the product of the
//                           distinct denominators at their highest power; no gcd cancellation)
//   33 collect              terms collected by powers of one chosen tensor access or exp/log call
//                           (param "term"): 0.5*x+0.5*x*erf(u) -> x*(0.5+0.5*erf(u)), D+D -> 2*D
//   34 expand_collect       inverse: one chosen product with a sum factor (param "product") is
//                           multiplied out: x*0.5*(1+erf(u)) -> 0.5*x+0.5*x*erf(u)
#include <algorithm>
#include <map>
#include <set>

#include "ir/analysis/algebra.h"
#include "ir/leir/printer.h"
#include "transform/algebraic_base.h"

namespace steptp::strategies::algebraic {
namespace {

using analysis::AlgebraSession;
using GiNaC::ex;
using GiNaC::exmap;
using GiNaC::numeric;
using leir::ExprPtr;

struct CasResult {
  std::optional<ex> value;
  std::string refusal;
};
CasResult ok(ex e) { return {std::move(e), {}}; }
CasResult no(std::string why) { return {std::nullopt, std::move(why)}; }

std::string printed(const AlgebraSession& s, const ex& e) { return leir::print_expr(s.to_leir(e)); }

const std::string* string_param(const Params& p, const std::string& key) {
  auto it = p.find(key);
  if (it == p.end()) return nullptr;
  return std::get_if<std::string>(&it->second);
}

class CasStrategy : public AlgebraicStrategy {
 protected:
  std::vector<Target> targets(const StmtView& v) const override { return region_targets(v); }

  Rewrite rewrite(const Target& t, const Params& params, const Context&) const override {
    AlgebraSession s;
    ex e = s.to_ginac(t.expr);
    CasResult r = transform(s, e, params);
    if (!r.value) return Rewrite::refuse(r.refusal);
    return Rewrite::to(s.to_leir(*r.value));
  }

  std::vector<Params> target_params(const Target& t, const Context&) const override {
    AlgebraSession s;
    ex e = s.to_ginac(t.expr);
    return params_of(s, e);
  }

  virtual std::vector<Params> params_of(AlgebraSession&, const ex&) const { return {Params{}}; }
  virtual CasResult transform(AlgebraSession& s, const ex& e, const Params& params) const = 0;
};

std::vector<ex> terms_of(const ex& e) {
  std::vector<ex> out;
  if (GiNaC::is_a<GiNaC::add>(e)) {
    for (size_t i = 0; i < e.nops(); ++i) out.push_back(e.op(i));
  } else {
    out.push_back(e);
  }
  return out;
}

// The atoms (tensor accesses, loop variables) that occur in `e`, keyed by their LEIR print.
std::map<std::string, ex> atoms_in(const AlgebraSession& s, const ex& e) {
  std::map<std::string, ex> out;
  for (const auto& sym : s.atom_symbols()) {
    ExprPtr a = s.atom_expr(sym);
    if (!a || !(a->is_access() || a->is_var())) continue;
    if (e.has(sym)) out.emplace(leir::print_expr(a), sym);
  }
  return out;
}

// Every sum among the factors of a product expanded: GiNaC's grouping inside an irreducible
// factor follows its internal term order, the expanded polynomial does not.
ex canonical_factors(const ex& e) {
  if (GiNaC::is_a<GiNaC::add>(e)) return e.expand();
  if (GiNaC::is_a<GiNaC::power>(e)) return GiNaC::pow(canonical_factors(e.op(0)), e.op(1));
  if (GiNaC::is_a<GiNaC::mul>(e)) {
    ex out = 1;
    for (size_t i = 0; i < e.nops(); ++i) out *= canonical_factors(e.op(i));
    return out;
  }
  return e;
}

// ---------------------------------------------------------------------------------------------

class Factorization final : public CasStrategy {
 public:
  std::string_view name() const override { return "factorization"; }
  std::string_view description() const override {
    return "factor an expression over the rationals (a*b+a*c -> a*(b+c)), numerator and denominator";
  }

 protected:
  CasResult transform(AlgebraSession&, const ex& e, const Params&) const override {
    exmap back;
    ex nd = GiNaC::numer_denom(analysis::rational_view(e, back));
    ex out = canonical_factors(GiNaC::factor(nd.op(0))) / canonical_factors(GiNaC::factor(nd.op(1)));
    return ok(out.subs(back, GiNaC::subs_options::no_pattern));
  }
};

class ExpandFactorization final : public CasStrategy {
 public:
  std::string_view name() const override { return "expand_factorization"; }
  std::string_view description() const override {
    return "multiply out products and integer powers of sums ((a-b)**2 -> a**2-2*a*b+b**2)";
  }

 protected:
  CasResult transform(AlgebraSession&, const ex& e, const Params&) const override { return ok(e.expand()); }
};

class Cancellation final : public CasStrategy {
 public:
  std::string_view name() const override { return "cancellation"; }
  std::string_view description() const override {
    return "one fraction p/q with p expanded and the common factors of p and q cancelled";
  }

 protected:
  CasResult transform(AlgebraSession&, const ex& e, const Params&) const override {
    exmap back;
    ex nd = GiNaC::numer_denom(analysis::rational_view(e, back));
    return ok((nd.op(0).expand() / canonical_factors(nd.op(1))).subs(back, GiNaC::subs_options::no_pattern));
  }
};

class ExpandCancellation final : public CasStrategy {
 public:
  std::string_view name() const override { return "expand_cancellation"; }
  std::string_view description() const override {
    return "split every fraction whose numerator is a sum into a sum of fractions, each reduced";
  }

 protected:
  CasResult transform(AlgebraSession&, const ex& e, const Params&) const override {
    ex out = 0;
    bool split = false;
    for (const auto& t : terms_of(e)) {
      exmap back;
      ex nd = GiNaC::numer_denom(analysis::rational_view(t, back));
      ex n = nd.op(0).expand();
      ex d = nd.op(1);
      if (d.is_equal(ex(1)) || GiNaC::is_a<numeric>(d) || !GiNaC::is_a<GiNaC::add>(n)) {
        out += t;
        continue;
      }
      split = true;
      for (const auto& nt : terms_of(n)) out += (nt / d).subs(back, GiNaC::subs_options::no_pattern);
    }
    if (!split) return no("no fraction with a sum in its numerator");
    return ok(out);
  }
};

class Apart final : public CasStrategy {
 public:
  std::string_view name() const override { return "apart"; }
  std::string_view description() const override {
    return "partial fractions in one variable: one fraction -> a sum of simpler fractions";
  }

 protected:
  std::vector<Params> params_of(AlgebraSession& s, const ex& e) const override {
    std::vector<Params> out;
    for (const auto& [key, sym] : atoms_in(s, e)) out.push_back(Params{{"var", key}});
    return out;
  }

  CasResult transform(AlgebraSession& s, const ex& e, const Params& params) const override {
    const std::string* var = string_param(params, "var");
    if (!var) return no("missing parameter var");
    auto atoms = atoms_in(s, e);
    auto it = atoms.find(*var);
    if (it == atoms.end()) return no(*var + " does not occur");
    ex x = it->second;
    exmap back;
    ex nd = GiNaC::numer_denom(analysis::rational_view(e, back));
    ex n = nd.op(0).expand(), d = nd.op(1);
    if (d.is_equal(ex(1)) || GiNaC::is_a<numeric>(d)) return no("not a fraction");
    if (!n.is_polynomial(x) || !d.is_polynomial(x)) return no("not a rational function of " + *var);
    if (d.has(x)) {
      ex q = GiNaC::quo(n, d, x), r = GiNaC::rem(n, d, x);
      if (q.is_zero()) return no("numerator degree in " + *var + " is below the denominator's");
      return ok((q + r / d).subs(back, GiNaC::subs_options::no_pattern));
    }
    int deg = n.degree(x), ldeg = n.ldegree(x);
    if (deg == ldeg) return no("the numerator has a single power of " + *var);
    ex out = 0;
    for (int k = ldeg; k <= deg; ++k) {
      ex c = n.coeff(x, k);
      if (!c.is_zero()) out += c * GiNaC::pow(x, k) / d;
    }
    return ok(out.subs(back, GiNaC::subs_options::no_pattern));
  }
};

class Together final : public CasStrategy {
 public:
  std::string_view name() const override { return "together"; }
  std::string_view description() const override {
    return "a sum of fractions -> one fraction over a common denominator";
  }

 protected:
  CasResult transform(AlgebraSession&, const ex& e, const Params&) const override {
    if (!GiNaC::is_a<GiNaC::add>(e)) return no("not a sum");
    // Denominator bases with their largest power, in first-occurrence order.
    std::vector<std::pair<ex, numeric>> dens;
    auto note = [&](const ex& base, const numeric& k) {
      for (auto& [b, m] : dens)
        if (b.is_equal(base)) {
          if (k > m) m = k;
          return;
        }
      dens.emplace_back(base, k);
    };
    for (const auto& t : terms_of(e)) {
      std::vector<ex> factors;
      if (GiNaC::is_a<GiNaC::mul>(t)) for (size_t i = 0; i < t.nops(); ++i) factors.push_back(t.op(i));
      else factors.push_back(t);
      for (const auto& f : factors)
        if (GiNaC::is_a<GiNaC::power>(f) && GiNaC::is_a<numeric>(f.op(1)) && GiNaC::ex_to<numeric>(f.op(1)) < 0)
          note(f.op(0), -GiNaC::ex_to<numeric>(f.op(1)));
    }
    if (dens.empty()) return no("no term is a fraction");
    ex common = 1;
    for (const auto& [b, k] : dens) common *= GiNaC::pow(b, k);
    ex numerator = 0;
    for (const auto& t : terms_of(e)) numerator += t * common;
    return ok(numerator / common);
  }
};

// The sub-expressions a sum can be collected in: tensor accesses and exp/log calls occurring in
// at least two terms of the expanded form.
std::vector<std::pair<std::string, ex>> collectors(const AlgebraSession& s, const ex& expanded) {
  std::map<std::string, ex> candidates;
  for (const auto& [key, sym] : atoms_in(s, expanded)) candidates.emplace(key, sym);
  GiNaC::exset calls;
  expanded.find(GiNaC::exp(GiNaC::wild()), calls);
  expanded.find(GiNaC::log(GiNaC::wild()), calls);
  for (const auto& c : calls) candidates.emplace(printed(s, c), c);
  std::vector<std::pair<std::string, ex>> out;
  for (const auto& [key, x] : candidates) {
    int n = 0;
    for (const auto& t : terms_of(expanded)) n += t.has(x) ? 1 : 0;
    if (n >= 2) out.emplace_back(key, x);
  }
  return out;
}

class Collect final : public CasStrategy {
 public:
  std::string_view name() const override { return "collect"; }
  std::string_view description() const override {
    return "collect the terms of a sum by powers of one tensor access or exp/log call";
  }

 protected:
  std::vector<Params> params_of(AlgebraSession& s, const ex& e) const override {
    std::vector<Params> out;
    for (const auto& [key, x] : collectors(s, e.expand())) out.push_back(Params{{"term", key}});
    return out;
  }

  CasResult transform(AlgebraSession& s, const ex& e, const Params& params) const override {
    const std::string* term = string_param(params, "term");
    if (!term) return no("missing parameter term");
    ex expanded = e.expand();
    if (!GiNaC::is_a<GiNaC::add>(expanded)) return no("not a sum");
    for (const auto& [key, x] : collectors(s, expanded)) {
      if (key != *term) continue;
      GiNaC::symbol tmp("@collect");
      ex sub = expanded.subs(x == tmp, GiNaC::subs_options::no_pattern);
      if (sub.has(x)) return no(key + " also occurs inside other sub-expressions");
      std::map<int, int> per_degree;
      for (const auto& t : terms_of(sub))
        if (t.has(tmp)) ++per_degree[t.degree(tmp)];
      bool grouped = std::any_of(per_degree.begin(), per_degree.end(), [](const auto& kv) { return kv.second >= 2; });
      if (!grouped) return no("no two terms share a power of " + key);
      return ok(sub.collect(tmp).subs(tmp == x, GiNaC::subs_options::no_pattern));
    }
    return no(*term + " does not occur in two terms");
  }
};

// Products with a sum among their factors, keyed by their LEIR print (deterministic).
std::vector<std::pair<std::string, ex>> distributable_products(const AlgebraSession& s, const ex& e) {
  std::map<std::string, ex> found;
  std::function<void(const ex&)> visit = [&](const ex& x) {
    if (GiNaC::is_a<GiNaC::mul>(x)) {
      for (size_t i = 0; i < x.nops(); ++i)
        if (GiNaC::is_a<GiNaC::add>(x.op(i))) {
          found.emplace(printed(s, x), x);
          break;
        }
    }
    for (size_t i = 0; i < x.nops(); ++i) visit(x.op(i));
  };
  visit(e);
  return {found.begin(), found.end()};
}

class ExpandCollect final : public CasStrategy {
 public:
  std::string_view name() const override { return "expand_collect"; }
  std::string_view description() const override {
    return "multiply one product with a sum factor out over that sum (inverse of collect)";
  }

 protected:
  std::vector<Params> params_of(AlgebraSession& s, const ex& e) const override {
    std::vector<Params> out;
    for (const auto& [key, x] : distributable_products(s, e)) out.push_back(Params{{"product", key}});
    return out;
  }

  CasResult transform(AlgebraSession& s, const ex& e, const Params& params) const override {
    const std::string* product = string_param(params, "product");
    if (!product) return no("missing parameter product");
    for (const auto& [key, m] : distributable_products(s, e)) {
      if (key != *product) continue;
      // The sum factor to distribute over: the first by its LEIR print. GiNaC's own factor order
      // follows hash values that change from run to run (ASLR), so "the first op" would not.
      size_t pick = m.nops();
      std::string pick_key;
      for (size_t i = 0; i < m.nops(); ++i) {
        if (!GiNaC::is_a<GiNaC::add>(m.op(i))) continue;
        std::string k = printed(s, m.op(i));
        if (pick == m.nops() || k < pick_key) pick = i, pick_key = std::move(k);
      }
      ex distributed = 0;
      ex rest = 1;
      const ex sum = m.op(pick);
      for (size_t i = 0; i < m.nops(); ++i)
        if (i != pick) rest *= m.op(i);
      for (const auto& t : terms_of(sum)) distributed += rest * t;
      return ok(e.subs(m == distributed, GiNaC::subs_options::no_pattern));
    }
    return no("no product " + *product);
  }
};

RegisterStrategy<Factorization> factorization_registrar(23);
RegisterStrategy<ExpandFactorization> expand_factorization_registrar(24);
RegisterStrategy<Cancellation> cancellation_registrar(25);
RegisterStrategy<ExpandCancellation> expand_cancellation_registrar(26);
RegisterStrategy<Apart> apart_registrar(27);
RegisterStrategy<Together> together_registrar(28);
RegisterStrategy<Collect> collect_registrar(33);
RegisterStrategy<ExpandCollect> expand_collect_registrar(34);

}  // namespace
}  // namespace steptp::strategies::algebraic
