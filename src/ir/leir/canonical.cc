// The canonical form of a program (see canonical.h).
#include "ir/leir/canonical.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/hash.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"

namespace steptp::leir {
namespace {

class Canonicalizer {
 public:
  explicit Canonicalizer(const Program& p) {
    for (const auto& d : p.known) known_.insert(d.name);
  }

  std::vector<Item> body(const std::vector<Item>& items) {
    std::vector<Item> out;
    out.reserve(items.size());
    for (const auto& it : items) {
      if (it.is_stmt()) {
        // The left-hand side first: an intermediate is then named where it is first written, an
        // order that commuting operands on some right-hand side cannot change.
        Stmt s = it.stmt;
        s.lhs = expr(it.stmt.lhs);
        s.rhs = expr(it.stmt.rhs);
        s.loc = {};
        out.push_back(Item::of(std::move(s)));
        continue;
      }
      Nest n;
      const size_t bound = scope_.size();
      for (const auto& l : it.nest.loops) {
        Loop c = l;
        c.var = fmt::format("_v{}", loops_++);
        c.loc = {};
        scope_.emplace_back(l.var, c.var);
        n.loops.push_back(std::move(c));
      }
      n.body = body(it.nest.body);
      scope_.resize(bound);
      out.push_back(Item::of(std::move(n)));
    }
    return out;
  }

 private:
  static bool is_value(const ExprPtr& e, double v) { return e->is_number() && e->value == v; }

  // Operands of a commutative operator in the order of their printed canonical text.
  static void order(std::vector<ExprPtr>& two) {
    if (print_expr(two[1]) < print_expr(two[0])) std::swap(two[0], two[1]);
  }

  ExprPtr expr(const ExprPtr& e) {
    switch (e->kind) {
      case ExprKind::Number: return make_number(e->value);
      case ExprKind::IndexVar: {
        for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
          if (it->first == e->var_name()) return make_var(it->second);
        return make_var(e->var_name());  // unbound (invalid program): left as written
      }
      case ExprKind::Access: {
        std::vector<ExprPtr> idx;
        for (const auto& a : e->args) idx.push_back(expr(a));
        return make_access(tensor(e->tensor), e->dtype, e->scope, std::move(idx));
      }
      case ExprKind::Unary: return make_neg(expr(e->args[0]));
      case ExprKind::Binary: {
        std::vector<ExprPtr> ops = {expr(e->args[0]), expr(e->args[1])};
        switch (e->bop) {
          case BinaryOp::Add:
            if (is_value(ops[1], 0)) return ops[0];
            if (is_value(ops[0], 0)) return ops[1];
            order(ops);
            break;
          case BinaryOp::Sub:
            if (is_value(ops[1], 0)) return ops[0];
            break;
          case BinaryOp::Mul:
            if (is_value(ops[1], 1)) return ops[0];
            if (is_value(ops[0], 1)) return ops[1];
            order(ops);
            break;
          case BinaryOp::Div:
            if (is_value(ops[1], 1)) return ops[0];
            break;
          case BinaryOp::And:
          case BinaryOp::Or: order(ops); break;
          default: break;
        }
        return make_binary(e->bop, ops[0], ops[1]);
      }
      case ExprKind::Compare: {
        std::vector<ExprPtr> ops;
        for (const auto& a : e->args) ops.push_back(expr(a));
        if (ops.size() == 2 && (e->cmp_ops[0] == CompareOp::Eq || e->cmp_ops[0] == CompareOp::Ne)) order(ops);
        return make_compare(std::move(ops), e->cmp_ops);
      }
      case ExprKind::Call: {
        std::vector<ExprPtr> args;
        for (const auto& a : e->args) args.push_back(expr(a));
        if (e->func == Func::Max || e->func == Func::Min) order(args);
        return make_call(e->func, std::move(args));
      }
    }
    return e;
  }

  // Known tensors keep their names (they are the interface); intermediates are numbered.
  std::string tensor(const std::string& name) {
    if (known_.count(name)) return name;
    auto [it, fresh] = temps_.emplace(name, "");
    if (fresh) it->second = fmt::format("_t{}", temps_.size() - 1);
    return it->second;
  }

  std::set<std::string> known_;
  std::map<std::string, std::string> temps_;
  std::vector<std::pair<std::string, std::string>> scope_;  // (source name, canonical name), innermost last
  int loops_ = 0;
};

}  // namespace

Program canonical_form(const Program& p) {
  Program c;
  c.known = p.known;
  for (auto& d : c.known) d.alias.clear(), d.loc = {};
  std::sort(c.known.begin(), c.known.end(), [](const TensorDecl& a, const TensorDecl& b) { return a.name < b.name; });
  c.body = Canonicalizer(p).body(p.body);
  return c;
}

namespace {

// What both hashes read: the signature lines, then the body, as printed.
std::string hashed_text(const Program& p) {
  std::string s;
  for (const auto& d : p.known) s += signature_line(d) + "\n";
  s += print_body(p.body);
  return s;
}

}  // namespace

uint64_t program_hash(const Program& p) { return base::fnv1a(hashed_text(p), base::kProgramHashBasis); }

uint64_t canonical_hash(const Program& p) { return base::fnv1a(hashed_text(canonical_form(p)), base::kFnvOffsetBasis); }

}  // namespace steptp::leir
