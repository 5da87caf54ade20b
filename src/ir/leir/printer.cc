#include "ir/leir/printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace steptp::leir {

namespace {

// Binding strength, loosest first (LEIR.md §2).
enum Prec : int { kOr = 1, kAnd, kCompare, kAdd, kMul, kUnary, kPow, kAtom };

int prec_of(BinaryOp op) {
  switch (op) {
    case BinaryOp::Or: return kOr;
    case BinaryOp::And: return kAnd;
    case BinaryOp::Add: case BinaryOp::Sub: return kAdd;
    case BinaryOp::Mul: case BinaryOp::Div: case BinaryOp::FloorDiv: case BinaryOp::Mod: return kMul;
    case BinaryOp::Pow: return kPow;
  }
  return kAtom;
}

int prec_of(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Binary: return prec_of(e.bop);
    case ExprKind::Compare: return kCompare;
    case ExprKind::Unary: return kUnary;
    case ExprKind::Number: return e.value < 0 ? kUnary : kAtom;  // "-0.5" reads back as unary minus
    default: return kAtom;
  }
}

void print(const Expr& e, std::string& out);

void print_bare(const Expr& e, std::string& out);

// Prints `e` wrapped in as many parentheses as precedence needs or the source wrote.
void print_operand(const Expr& e, bool needed, std::string& out) {
  int n = std::max<int>(needed ? 1 : 0, e.parens);
  out.append(static_cast<size_t>(n), '(');
  print_bare(e, out);
  out.append(static_cast<size_t>(n), ')');
}

void print(const Expr& e, std::string& out) { print_operand(e, false, out); }

void print_bare(const Expr& e, std::string& out) {
  switch (e.kind) {
    case ExprKind::Number:
      if (!e.text.empty()) out += e.text;
      else out += format_number(e.value, false);
      return;
    case ExprKind::IndexVar:
      out += e.text;
      return;
    case ExprKind::Access:
      out += e.tensor;
      out += "^{";
      out += to_string(e.dtype);
      out += ',';
      out += to_char(e.scope);
      out += '}';
      if (!e.args.empty()) {
        out += "_{";
        for (size_t i = 0; i < e.args.size(); ++i) {
          if (i) out += ',';
          print(*e.args[i], out);
        }
        out += '}';
      }
      return;
    case ExprKind::Unary:
      out += '-';
      print_operand(*e.args[0], prec_of(*e.args[0]) < kUnary, out);
      return;
    case ExprKind::Binary: {
      int p = prec_of(e.bop);
      const Expr& l = *e.args[0];
      const Expr& r = *e.args[1];
      if (e.bop == BinaryOp::Pow) {
        // Right associative; a unary operand on either side is parenthesized as Python prints it.
        print_operand(l, prec_of(l) <= kPow, out);
        out += "**";
        print_operand(r, prec_of(r) < kPow, out);
      } else {
        print_operand(l, prec_of(l) < p, out);
        out += to_string(e.bop);
        print_operand(r, prec_of(r) <= p, out);
      }
      return;
    }
    case ExprKind::Compare:
      for (size_t i = 0; i < e.args.size(); ++i) {
        if (i) out += to_string(e.cmp_ops[i - 1]);
        print_operand(*e.args[i], prec_of(*e.args[i]) <= kCompare, out);
      }
      return;
    case ExprKind::Call:
      out += to_string(e.func);
      out += '(';
      for (size_t i = 0; i < e.args.size(); ++i) {
        if (i) out += ',';
        print(*e.args[i], out);
      }
      out += ')';
      return;
  }
}

void print_items(const std::vector<Item>& body, std::string& out);

void print_nest(const Nest& n, std::string& out) {
  out += print_nest_header(n);
  out += '[';
  print_items(n.body, out);
  out += "];";
}

void print_items(const std::vector<Item>& body, std::string& out) {
  for (const auto& item : body) {
    if (item.is_stmt()) out += print_stmt(item.stmt);
    else print_nest(item.nest, out);
  }
}

void print_pretty(const std::vector<Item>& body, int depth, std::string& out) {
  std::string indent(static_cast<size_t>(depth) * 2, ' ');
  for (const auto& item : body) {
    if (item.is_stmt()) {
      out += indent + print_stmt(item.stmt) + '\n';
      continue;
    }
    out += indent + print_nest_header(item.nest) + "[\n";
    print_pretty(item.nest.body, depth + 1, out);
    out += indent + "];\n";
  }
}

}  // namespace

std::string format_number(double v, bool integer) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (integer && v == std::trunc(v) && std::fabs(v) < 9.007199254740992e15)
    return fmt::format("{}", static_cast<long long>(v));
  std::string s = fmt::format("{}", v);  // shortest round-trip, like Python's repr
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string print_expr(const ExprPtr& e) {
  std::string out;
  print(*e, out);
  return out;
}

std::string print_stmt(const Stmt& s) {
  std::string out;
  print(*s.lhs, out);
  out += '=';
  print(*s.rhs, out);
  out += ';';
  return out;
}

std::string print_loop(const Loop& l) {
  return fmt::format("{}^{{{}}}_{{{}={}}}", to_char(l.kind), l.extent, l.var, l.start);
}

std::string print_nest_header(const Nest& n) {
  std::string out;
  for (const auto& l : n.loops) out += print_loop(l);
  return out;
}

std::string print_body(const std::vector<Item>& body) {
  std::string out;
  print_items(body, out);
  return out;
}

std::string print_body_pretty(const std::vector<Item>& body) {
  std::string out;
  print_pretty(body, 0, out);
  return out;
}

}  // namespace steptp::leir
