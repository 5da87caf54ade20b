#include "ir/leir/ast.h"

#include <array>
#include <cmath>

namespace steptp::leir {

namespace {
constexpr std::array<std::string_view, 9> kBinaryOps = {"+", "-", "*", "/", "//", "%", "**", "&", "|"};
constexpr std::array<std::string_view, 6> kCompareOps = {"<", "<=", ">", ">=", "==", "!="};
constexpr std::array<std::string_view, 17> kFuncNames = {
    "exp",  "log",     "sqrt", "abs",   "erf",  "max", "min", "if_then_else", "tanh",
    "sigmoid", "pow", "floor", "ceil", "sin", "cos", "log1p", "rsqrt"};
constexpr std::array<int, 17> kFuncArity = {1, 1, 1, 1, 1, 2, 2, 3, 1, 1, 2, 1, 1, 1, 1, 1, 1};

std::shared_ptr<Expr> node(ExprKind kind, SourceLoc loc) {
  auto e = std::make_shared<Expr>();
  e->kind = kind;
  e->loc = loc;
  return e;
}
}  // namespace

std::string_view to_string(BinaryOp op) { return kBinaryOps[static_cast<size_t>(op)]; }
std::string_view to_string(CompareOp op) { return kCompareOps[static_cast<size_t>(op)]; }
std::string_view to_string(Func f) { return kFuncNames[static_cast<size_t>(f)]; }
int arity(Func f) { return kFuncArity[static_cast<size_t>(f)]; }

std::optional<Func> parse_func(std::string_view name) {
  for (size_t i = 0; i < kFuncNames.size(); ++i)
    if (kFuncNames[i] == name) return static_cast<Func>(i);
  return std::nullopt;
}

ExprPtr make_number(double value, std::string text, SourceLoc loc) {
  auto e = node(ExprKind::Number, loc);
  e->value = value;
  e->text = std::move(text);
  return e;
}

ExprPtr make_int(int64_t value, SourceLoc loc) {
  return make_number(static_cast<double>(value), std::to_string(value), loc);
}

ExprPtr make_var(std::string name, SourceLoc loc) {
  auto e = node(ExprKind::IndexVar, loc);
  e->text = std::move(name);
  return e;
}

ExprPtr make_access(std::string tensor, DType dtype, Scope scope, std::vector<ExprPtr> indices,
                    SourceLoc loc) {
  auto e = node(ExprKind::Access, loc);
  e->tensor = std::move(tensor);
  e->dtype = dtype;
  e->scope = scope;
  e->args = std::move(indices);
  return e;
}

ExprPtr make_neg(ExprPtr x, SourceLoc loc) {
  auto e = node(ExprKind::Unary, loc);
  e->args = {std::move(x)};
  return e;
}

ExprPtr make_binary(BinaryOp op, ExprPtr lhs, ExprPtr rhs, SourceLoc loc) {
  auto e = node(ExprKind::Binary, loc);
  e->bop = op;
  e->args = {std::move(lhs), std::move(rhs)};
  return e;
}

ExprPtr make_compare(std::vector<ExprPtr> operands, std::vector<CompareOp> ops, SourceLoc loc) {
  auto e = node(ExprKind::Compare, loc);
  e->args = std::move(operands);
  e->cmp_ops = std::move(ops);
  return e;
}

ExprPtr make_call(Func f, std::vector<ExprPtr> args, SourceLoc loc) {
  auto e = node(ExprKind::Call, loc);
  e->func = f;
  e->args = std::move(args);
  return e;
}

bool equal(const Expr& a, const Expr& b) {
  if (&a == &b) return true;
  if (a.kind != b.kind || a.args.size() != b.args.size()) return false;
  switch (a.kind) {
    case ExprKind::Number:
      if (!(a.value == b.value || (std::isnan(a.value) && std::isnan(b.value)))) return false;
      break;
    case ExprKind::IndexVar:
      if (a.text != b.text) return false;
      break;
    case ExprKind::Access:
      if (a.tensor != b.tensor || a.dtype != b.dtype || a.scope != b.scope) return false;
      break;
    case ExprKind::Unary:
      break;
    case ExprKind::Binary:
      if (a.bop != b.bop) return false;
      break;
    case ExprKind::Compare:
      if (a.cmp_ops != b.cmp_ops) return false;
      break;
    case ExprKind::Call:
      if (a.func != b.func) return false;
      break;
  }
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!equal(*a.args[i], *b.args[i])) return false;
  return true;
}

bool equal(const ExprPtr& a, const ExprPtr& b) {
  if (!a || !b) return a == b;
  return equal(*a, *b);
}

Item Item::of(Stmt s) {
  Item it;
  it.kind = Kind::Stmt;
  it.stmt = std::move(s);
  return it;
}

Item Item::of(Nest n) {
  Item it;
  it.kind = Kind::Nest;
  it.nest = std::move(n);
  return it;
}

int64_t TensorDecl::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const TensorDecl* Program::find_known(std::string_view tensor) const {
  for (const auto& d : known)
    if (d.name == tensor) return &d;
  return nullptr;
}

}  // namespace steptp::leir
