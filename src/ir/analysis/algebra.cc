#include "ir/analysis/algebra.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "base/error.h"
#include "ir/leir/printer.h"

namespace steptp::analysis {

using GiNaC::ex;
using GiNaC::numeric;
using leir::BinaryOp;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Func;

namespace {

std::recursive_mutex& ginac_mutex() {
  static std::recursive_mutex m;
  return m;
}

// A tree of numbers only (no access, no loop variable): its algebra is constant folding, which
// is not ours to do.
bool is_constant_tree(const ExprPtr& e) {
  if (e->kind == ExprKind::Access || e->kind == ExprKind::IndexVar) return false;
  for (const auto& a : e->args)
    if (!is_constant_tree(a)) return false;
  return true;
}

// "1e-05", "0.5", "4", "2.0", "1.0507010221481323" -> exact rational. nullopt for anything else.
std::optional<numeric> decimal_rational(const std::string& s) {
  std::string digits;
  long exp10 = 0;
  bool dot = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits += c;
      if (dot) --exp10;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (digits.empty()) return std::nullopt;
  if (i < s.size()) {
    if (s[i] != 'e' && s[i] != 'E') return std::nullopt;
    ++i;
    int sign = 1;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) sign = s[i++] == '-' ? -1 : 1;
    if (i >= s.size()) return std::nullopt;
    long v = 0;
    for (; i < s.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i])) || v > 100000) return std::nullopt;
      v = v * 10 + (s[i] - '0');
    }
    exp10 += sign * v;
  }
  size_t nz = digits.find_first_not_of('0');
  digits = nz == std::string::npos ? "0" : digits.substr(nz);
  if (std::labs(exp10) > 400 || digits.size() > 40) return std::nullopt;
  numeric n(digits.c_str());
  numeric ten(10);
  return exp10 >= 0 ? n * ten.power(numeric(exp10)) : n / ten.power(numeric(-exp10));
}

bool fits_int64(const numeric& n) {
  return n.is_integer() && abs(n) < numeric("9007199254740992");
}

// Whether p/q has a finite decimal expansion (q = 2^a 5^b): then it prints as one literal.
bool is_finite_decimal(const numeric& r) {
  numeric q = r.denom();
  for (int f : {2, 5})
    while (GiNaC::irem(q, numeric(f)).is_zero()) q = q / f;
  return q == 1;
}

ExprPtr int_literal(const numeric& n) {
  if (fits_int64(n)) return leir::make_int(n.to_long());
  return leir::make_number(n.to_double());
}

// A non-negative rational as a LEIR literal (p/q when it has no finite decimal form).
ExprPtr rational_literal(const numeric& r) {
  if (r.is_integer()) return int_literal(r);
  if (is_finite_decimal(r) || !fits_int64(r.numer()) || !fits_int64(r.denom()))
    return leir::make_number(r.to_double());
  return leir::make_binary(BinaryOp::Div, int_literal(r.numer()), int_literal(r.denom()));
}

ExprPtr chain(BinaryOp op, const std::vector<ExprPtr>& xs) {
  ExprPtr acc = xs.front();
  for (size_t i = 1; i < xs.size(); ++i) acc = leir::make_binary(op, acc, xs[i]);
  return acc;
}

struct Signed {
  bool negative = false;
  ExprPtr expr;  // magnitude
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Keys

std::string structural_key(const ExprPtr& e) {
  std::string out;
  auto args = [&](std::string head) {
    out += head;
    out += '(';
    for (size_t i = 0; i < e->args.size(); ++i) {
      if (i) out += ',';
      out += structural_key(e->args[i]);
    }
    out += ')';
  };
  switch (e->kind) {
    case ExprKind::Number: return "n:" + leir::format_number(e->value, false);
    case ExprKind::IndexVar: return "v:" + e->text;
    case ExprKind::Access:
      args("A:" + e->tensor + ":" + std::string(leir::to_string(e->dtype)) + ":" + leir::to_char(e->scope));
      return out;
    case ExprKind::Unary: args("neg"); return out;
    case ExprKind::Binary: args("b" + std::string(leir::to_string(e->bop))); return out;
    case ExprKind::Compare: {
      std::string ops;
      for (auto op : e->cmp_ops) ops += leir::to_string(op);
      args("c" + ops);
      return out;
    }
    case ExprKind::Call: args("f" + std::string(leir::to_string(e->func))); return out;
  }
  return out;
}

namespace {

std::optional<double> constant_value(const ExprPtr& e) {
  switch (e->kind) {
    case ExprKind::Number: return e->value;
    case ExprKind::Unary: {
      auto v = constant_value(e->args[0]);
      if (v) return -*v;
      return std::nullopt;
    }
    case ExprKind::Binary: {
      auto l = constant_value(e->args[0]);
      auto r = constant_value(e->args[1]);
      if (!l || !r) return std::nullopt;
      switch (e->bop) {
        case BinaryOp::Add: return *l + *r;
        case BinaryOp::Sub: return *l - *r;
        case BinaryOp::Mul: return *l * *r;
        case BinaryOp::Div: return *l / *r;
        case BinaryOp::Pow: return std::pow(*l, *r);
        default: return std::nullopt;
      }
    }
    default: return std::nullopt;
  }
}

void additive_terms(const ExprPtr& e, bool negative, std::vector<std::string>& out) {
  if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::Add || e->bop == BinaryOp::Sub)) {
    additive_terms(e->args[0], negative, out);
    additive_terms(e->args[1], e->bop == BinaryOp::Sub ? !negative : negative, out);
    return;
  }
  if (e->kind == ExprKind::Unary) {
    additive_terms(e->args[0], !negative, out);
    return;
  }
  out.push_back((negative ? "-" : "+") + canonical_key(e));
}

void multiplicative_factors(const ExprPtr& e, bool inverse, std::vector<std::string>& out) {
  if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::Mul || e->bop == BinaryOp::Div)) {
    multiplicative_factors(e->args[0], inverse, out);
    multiplicative_factors(e->args[1], e->bop == BinaryOp::Div ? !inverse : inverse, out);
    return;
  }
  out.push_back((inverse ? "/" : "*") + canonical_key(e));
}

std::string pow_key(const ExprPtr& base, const std::string& exponent) {
  return "pow(" + canonical_key(base) + "," + exponent + ")";
}

}  // namespace

std::string canonical_key(const ExprPtr& e) {
  if (auto v = constant_value(e); v && is_constant_tree(e)) return "n:" + leir::format_number(*v, false);
  if (e->kind == ExprKind::Binary) {
    switch (e->bop) {
      case BinaryOp::Add:
      case BinaryOp::Sub: {
        std::vector<std::string> terms;
        additive_terms(e, false, terms);
        std::sort(terms.begin(), terms.end());
        std::string out = "sum(";
        for (auto& t : terms) out += t + ";";
        return out + ")";
      }
      case BinaryOp::Mul:
      case BinaryOp::Div: {
        std::vector<std::string> fs;
        multiplicative_factors(e, false, fs);
        std::sort(fs.begin(), fs.end());
        std::string out = "prod(";
        for (auto& f : fs) out += f + ";";
        return out + ")";
      }
      case BinaryOp::Pow: {
        auto v = constant_value(e->args[1]);
        if (v) return pow_key(e->args[0], leir::format_number(*v, false));
        return pow_key(e->args[0], canonical_key(e->args[1]));
      }
      default: break;
    }
  }
  if (e->kind == ExprKind::Call && e->func == Func::Sqrt) return pow_key(e->args[0], "0.5");
  if (e->kind == ExprKind::Call && e->func == Func::Rsqrt) return pow_key(e->args[0], "-0.5");
  if (e->kind == ExprKind::Call && e->func == Func::Pow) {
    auto v = constant_value(e->args[1]);
    return pow_key(e->args[0], v ? leir::format_number(*v, false) : canonical_key(e->args[1]));
  }
  if (e->kind == ExprKind::Unary) return "neg(" + canonical_key(e->args[0]) + ")";
  if (e->kind == ExprKind::Number || e->kind == ExprKind::IndexVar) return structural_key(e);
  // Access, Compare, Call, other binary: same head, canonical children.
  auto head = std::make_shared<Expr>(*e);
  head->args.clear();
  std::string out = structural_key(head);
  // structural_key of the childless head ends in "()": replace with canonical children.
  out.resize(out.size() - 1);
  for (size_t i = 0; i < e->args.size(); ++i) {
    if (i) out += ',';
    out += canonical_key(e->args[i]);
  }
  return out + ")";
}

size_t expr_size(const ExprPtr& e) {
  size_t n = 1;
  for (const auto& a : e->args) n += expr_size(a);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Session

AlgebraSession::AlgebraSession() : lock_(ginac_mutex()) {}
AlgebraSession::~AlgebraSession() = default;

GiNaC::symbol AlgebraSession::atom(const ExprPtr& e) {
  std::string key = structural_key(e);
  auto it = by_key_.find(key);
  if (it != by_key_.end()) return atoms_[it->second].sym;
  size_t index = atoms_.size();
  atoms_.push_back({GiNaC::symbol("@" + std::to_string(index)), e});
  by_key_.emplace(std::move(key), index);
  return atoms_.back().sym;
}

ExprPtr AlgebraSession::atom_expr(const ex& e) const {
  if (!GiNaC::is_a<GiNaC::symbol>(e)) return nullptr;
  const std::string& name = GiNaC::ex_to<GiNaC::symbol>(e).get_name();
  if (name.size() < 2 || name[0] != '@' ||
      !std::all_of(name.begin() + 1, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return nullptr;
  size_t index = std::stoul(name.substr(1));
  if (index >= atoms_.size() || !atoms_[index].sym.is_equal(GiNaC::ex_to<GiNaC::basic>(e)))
    return nullptr;
  return atoms_[index].expr;
}

std::vector<GiNaC::symbol> AlgebraSession::atom_symbols() const {
  std::vector<GiNaC::symbol> out;
  for (const auto& a : atoms_) out.push_back(a.sym);
  return out;
}

ex AlgebraSession::to_ginac(const ExprPtr& e) {
  try {
    switch (e->kind) {
      case ExprKind::Number: {
        if (!std::isfinite(e->value)) return atom(e);
        std::string text = e->text.empty() ? leir::format_number(e->value, false) : e->text;
        auto r = decimal_rational(text);
        if (!r) r = decimal_rational(leir::format_number(e->value, false));
        if (!r) return atom(e);
        return *r;
      }
      case ExprKind::IndexVar:
      case ExprKind::Access:
      case ExprKind::Compare:
        return atom(e);
      case ExprKind::Unary:
        return -to_ginac(e->args[0]);
      case ExprKind::Binary: {
        switch (e->bop) {
          case BinaryOp::Add: return to_ginac(e->args[0]) + to_ginac(e->args[1]);
          case BinaryOp::Sub: return to_ginac(e->args[0]) - to_ginac(e->args[1]);
          case BinaryOp::Mul: return to_ginac(e->args[0]) * to_ginac(e->args[1]);
          case BinaryOp::Div: {
            ex d = to_ginac(e->args[1]);
            if (d.is_zero()) return atom(e);
            return to_ginac(e->args[0]) / d;
          }
          case BinaryOp::Pow: {
            if (is_constant_tree(e)) return atom(e);
            ex b = to_ginac(e->args[0]);
            ex x = to_ginac(e->args[1]);
            if (b.is_zero()) return atom(e);
            return GiNaC::pow(b, x);
          }
          default: return atom(e);
        }
      }
      case ExprKind::Call: {
        if (is_constant_tree(e)) return atom(e);
        switch (e->func) {
          case Func::Exp: return GiNaC::exp(to_ginac(e->args[0]));
          case Func::Log: {
            ex a = to_ginac(e->args[0]);
            if (a.is_zero()) return atom(e);
            return GiNaC::log(a);
          }
          case Func::Sqrt: return GiNaC::sqrt(to_ginac(e->args[0]));
          case Func::Rsqrt: {
            ex a = to_ginac(e->args[0]);
            if (a.is_zero()) return atom(e);
            return GiNaC::pow(a, numeric(-1, 2));
          }
          case Func::Pow: {
            ex b = to_ginac(e->args[0]);
            if (b.is_zero()) return atom(e);
            return GiNaC::pow(b, to_ginac(e->args[1]));
          }
          default: return atom(e);
        }
      }
    }
  } catch (const std::exception&) {
    // GiNaC rejected an intermediate (a pole it detected after simplification): keep the whole
    // sub-tree opaque rather than guess.
    return atom(e);
  }
  return atom(e);
}

// ---------------------------------------------------------------------------------------------
// Rational view

namespace {

ex rational_view_rec(const ex& e, std::vector<std::pair<ex, GiNaC::symbol>>& table) {
  auto temp_for = [&](const ex& unit) -> ex {
    for (const auto& [u, sym] : table)
      if (u.is_equal(unit)) return sym;
    table.emplace_back(unit, GiNaC::symbol("@t" + std::to_string(table.size())));
    return table.back().second;
  };
  if (GiNaC::is_a<GiNaC::power>(e)) {
    const ex& k = e.op(1);
    if (GiNaC::is_a<numeric>(k) && GiNaC::ex_to<numeric>(k).is_integer())
      return GiNaC::pow(rational_view_rec(e.op(0), table), k);
    if (GiNaC::is_a<numeric>(k) && GiNaC::ex_to<numeric>(k) < 0)
      return GiNaC::pow(temp_for(GiNaC::pow(e.op(0), -k)), -1);
    return temp_for(e);
  }
  if (GiNaC::is_a<GiNaC::function>(e)) return temp_for(e);
  if (GiNaC::is_a<GiNaC::add>(e) || GiNaC::is_a<GiNaC::mul>(e)) {
    GiNaC::exvector ops;
    for (size_t i = 0; i < e.nops(); ++i) ops.push_back(rational_view_rec(e.op(i), table));
    if (GiNaC::is_a<GiNaC::add>(e)) return GiNaC::add(ops);
    return GiNaC::mul(ops);
  }
  return e;
}

}  // namespace

ex rational_view(const ex& e, GiNaC::exmap& back) {
  std::vector<std::pair<ex, GiNaC::symbol>> table;
  ex out = rational_view_rec(e, table);
  for (const auto& [unit, sym] : table) back[sym] = unit;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Back to LEIR

namespace {

class Printer {
 public:
  explicit Printer(const AlgebraSession& s) : session_(s) {}

  ExprPtr expr(const ex& e) const {
    Signed s = term(e);
    return s.negative ? leir::make_neg(s.expr) : s.expr;
  }

 private:
  const AlgebraSession& session_;

  static std::string key(const ExprPtr& e) { return leir::print_expr(e); }

  // Splits a term of a sum into its rational coefficient and the rest.
  static std::pair<numeric, ex> split_coefficient(const ex& t) {
    if (GiNaC::is_a<numeric>(t)) return {GiNaC::ex_to<numeric>(t), ex(1)};
    if (GiNaC::is_a<GiNaC::mul>(t)) {
      numeric c(1);
      ex rest = 1;
      for (size_t i = 0; i < t.nops(); ++i) {
        if (GiNaC::is_a<numeric>(t.op(i))) c *= GiNaC::ex_to<numeric>(t.op(i));
        else rest *= t.op(i);
      }
      return {c, rest};
    }
    return {numeric(1), t};
  }

  // Sort key of a term of a sum: its printed form without coefficient; constants last.
  std::string term_key(const ex& t) const {
    auto [c, rest] = split_coefficient(t);
    if (rest.is_equal(ex(1))) return "~";
    return key(expr(rest));
  }

  // Terms of a sum ordered by term_key (stable, deterministic).
  std::vector<ex> ordered_terms(const ex& sum) const {
    std::vector<std::pair<std::string, ex>> keyed;
    for (size_t i = 0; i < sum.nops(); ++i) keyed.emplace_back(term_key(sum.op(i)), sum.op(i));
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<ex> out;
    for (auto& k : keyed) out.push_back(k.second);
    return out;
  }

  // Whether the leading term (in our order) of a sum has a negative coefficient.
  bool leads_negative(const ex& sum) const {
    auto terms = ordered_terms(sum);
    return split_coefficient(terms.front()).first < 0;
  }

  Signed term(const ex& e) const {
    if (GiNaC::is_a<numeric>(e)) {
      numeric n = GiNaC::ex_to<numeric>(e);
      if (!n.is_rational()) {
        double v = n.to_double();
        return {v < 0, leir::make_number(std::fabs(v))};
      }
      return {n < 0, rational_literal(abs(n))};
    }
    if (GiNaC::is_a<GiNaC::symbol>(e)) {
      ExprPtr a = session_.atom_expr(e);
      if (!a)
        throw base::Error(base::ErrorKind::Failed,
                          "algebra: symbol " + GiNaC::ex_to<GiNaC::symbol>(e).get_name() + " has no LEIR meaning");
      return {false, a};
    }
    if (GiNaC::is_a<GiNaC::add>(e)) return {false, sum(e)};
    if (GiNaC::is_a<GiNaC::mul>(e) || GiNaC::is_a<GiNaC::power>(e)) return product(e);
    if (GiNaC::is_the_function<GiNaC::exp_SERIAL>(e))
      return {false, leir::make_call(Func::Exp, {expr(e.op(0))})};
    if (GiNaC::is_the_function<GiNaC::log_SERIAL>(e))
      return {false, leir::make_call(Func::Log, {expr(e.op(0))})};
    std::ostringstream os;
    os << e;
    throw base::Error(base::ErrorKind::Failed, "algebra: cannot express " + os.str() + " in LEIR");
  }

  ExprPtr sum(const ex& e) const {
    std::vector<ex> terms = ordered_terms(e);
    std::vector<Signed> signed_terms;
    for (const auto& t : terms) signed_terms.push_back(term(t));
    // Lead with a positive term when there is one: `a-b`, not `-b+a`.
    auto first_positive = std::find_if(signed_terms.begin(), signed_terms.end(),
                                       [](const Signed& s) { return !s.negative; });
    if (first_positive != signed_terms.end()) std::rotate(signed_terms.begin(), first_positive, first_positive + 1);
    ExprPtr acc = signed_terms.front().negative ? leir::make_neg(signed_terms.front().expr)
                                                : signed_terms.front().expr;
    for (size_t i = 1; i < signed_terms.size(); ++i)
      acc = leir::make_binary(signed_terms[i].negative ? BinaryOp::Sub : BinaryOp::Add, acc, signed_terms[i].expr);
    return acc;
  }

  // base ** k for a positive exponent k.
  ExprPtr positive_power(const ex& base, const numeric& k) const {
    ExprPtr b = expr(base);
    if (k == 1) return b;
    if (k == numeric(1, 2)) return leir::make_call(Func::Sqrt, {b});
    return leir::make_binary(BinaryOp::Pow, b, rational_literal(k));
  }

  Signed product(const ex& e) const {
    numeric coeff(1);
    std::vector<std::pair<ex, ex>> factors;  // (base, exponent)
    auto add_factor = [&](const ex& f) {
      if (GiNaC::is_a<numeric>(f)) coeff *= GiNaC::ex_to<numeric>(f);
      else if (GiNaC::is_a<GiNaC::power>(f)) factors.emplace_back(f.op(0), f.op(1));
      else factors.emplace_back(f, ex(1));
    };
    if (GiNaC::is_a<GiNaC::mul>(e)) {
      for (size_t i = 0; i < e.nops(); ++i) add_factor(e.op(i));
    } else {
      add_factor(e);
    }
    // Sign-normalize sums raised to integer powers so the result does not depend on which sign
    // GiNaC happened to choose (it follows its internal term order).
    for (auto& [base, k] : factors) {
      if (!GiNaC::is_a<GiNaC::add>(base) || !GiNaC::is_a<numeric>(k) || !GiNaC::ex_to<numeric>(k).is_integer())
        continue;
      if (leads_negative(base)) {
        base = -base;  // an add times -1 distributes one level only (no expansion inside terms)
        if (GiNaC::ex_to<numeric>(k).is_odd()) coeff = -coeff;
      }
    }
    // A negative overall sign goes into the first sum raised to an odd power, if any:
    // (a-b)*k rather than -((b-a)*k).
    if (coeff < 0) {
      std::vector<std::pair<std::string, size_t>> odd_sums;
      for (size_t i = 0; i < factors.size(); ++i) {
        const auto& [base, k] = factors[i];
        if (GiNaC::is_a<GiNaC::add>(base) && GiNaC::is_a<numeric>(k) && GiNaC::ex_to<numeric>(k).is_integer() &&
            GiNaC::ex_to<numeric>(k).is_odd())
          odd_sums.emplace_back(key(expr(base)), i);
      }
      if (!odd_sums.empty()) {
        std::sort(odd_sums.begin(), odd_sums.end());
        auto& base = factors[odd_sums.front().second].first;
        base = -base;  // an add times -1 distributes one level only (no expansion inside terms)
        coeff = -coeff;
      }
    }
    bool negative = coeff < 0;
    coeff = abs(coeff);
    std::vector<ExprPtr> num, den;
    for (const auto& [base, k] : factors) {
      if (GiNaC::is_a<numeric>(k)) {
        numeric kn = GiNaC::ex_to<numeric>(k);
        if (kn > 0) num.push_back(positive_power(base, kn));
        else den.push_back(positive_power(base, -kn));
      } else {
        num.push_back(leir::make_binary(BinaryOp::Pow, expr(base), expr(k)));
      }
    }
    // Sums last (sympy's K*(a-b)), otherwise by printed form.
    auto by_key = [](const ExprPtr& a, const ExprPtr& b) {
      bool sa = a->kind == ExprKind::Binary && (a->bop == BinaryOp::Add || a->bop == BinaryOp::Sub);
      bool sb = b->kind == ExprKind::Binary && (b->bop == BinaryOp::Add || b->bop == BinaryOp::Sub);
      if (sa != sb) return sb;
      return key(a) < key(b);
    };
    std::stable_sort(num.begin(), num.end(), by_key);
    std::stable_sort(den.begin(), den.end(), by_key);
    if (coeff != 1) {
      if (coeff.is_integer() || is_finite_decimal(coeff) || !fits_int64(coeff.numer()) || !fits_int64(coeff.denom())) {
        num.insert(num.begin(), rational_literal(coeff));
      } else {
        if (coeff.numer() != 1) num.insert(num.begin(), int_literal(coeff.numer()));
        den.insert(den.begin(), int_literal(coeff.denom()));
      }
    }
    ExprPtr numerator = num.empty() ? leir::make_int(1) : chain(BinaryOp::Mul, num);
    if (den.empty()) return {negative, numerator};
    return {negative, leir::make_binary(BinaryOp::Div, numerator, chain(BinaryOp::Mul, den))};
  }
};

}  // namespace

ExprPtr AlgebraSession::to_leir(const ex& e) const { return Printer(*this).expr(e); }

}  // namespace steptp::analysis
