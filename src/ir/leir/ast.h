// The LEIR abstract syntax tree (LEIR.md §2).
//
// Expressions are immutable and shared (ExprPtr = shared_ptr<const Expr>): rewrites build new
// nodes and reuse untouched subtrees, so copying a Program is cheap and candidates never alias
// mutable state. Statements, nests and programs are plain values.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/leir/types.h"

namespace steptp::leir {

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

enum class ExprKind : uint8_t {
  Number,   // literal: value + original spelling ("1e-05", "0.5", "4", "inf")
  IndexVar, // a loop variable used as a value or in a subscript
  Access,   // tensor element read: NAME^{dtype,scope}_{i,j}
  Unary,    // -x
  Binary,   // x op y
  Compare,  // chainable comparison: a < b <= c
  Call,     // f(x, ...)
};

enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, And, Or };
enum class CompareOp : uint8_t { Lt, Le, Gt, Ge, Eq, Ne };
enum class Func : uint8_t {
  // core
  Exp, Log, Sqrt, Abs, Erf, Max, Min, IfThenElse,
  // extension
  Tanh, Sigmoid, Pow, Floor, Ceil, Sin, Cos, Log1p, Rsqrt,
};

std::string_view to_string(BinaryOp op);  // "+", "//", "**", "&", ...
std::string_view to_string(CompareOp op);  // "<", "<=", ...
std::string_view to_string(Func f);        // "exp", "if_then_else", ...
std::optional<Func> parse_func(std::string_view name);
int arity(Func f);  // number of arguments the function takes

struct Expr {
  ExprKind kind = ExprKind::Number;
  SourceLoc loc;

  // Number
  double value = 0.0;
  std::string text;  // Number: spelling ("" = synthesized, printed from value). IndexVar: name.

  // Access
  std::string tensor;
  DType dtype = DType::F64;
  Scope scope = Scope::Global;

  // Operator payloads
  BinaryOp bop = BinaryOp::Add;
  Func func = Func::Exp;
  std::vector<CompareOp> cmp_ops;  // Compare: args.size() == cmp_ops.size() + 1

  // Parentheses the source wrote around this node beyond those precedence requires; kept so
  // that printing reproduces public programs byte for byte. Ignored by equal().
  uint8_t parens = 0;

  // Children: Access indices, Unary operand, Binary lhs/rhs, Compare operands, Call arguments.
  std::vector<ExprPtr> args;

  bool is_number() const { return kind == ExprKind::Number; }
  bool is_var() const { return kind == ExprKind::IndexVar; }
  bool is_access() const { return kind == ExprKind::Access; }
  bool is_call(Func f) const { return kind == ExprKind::Call && func == f; }
  const std::string& var_name() const { return text; }
};

// Factories. `loc` defaults to "synthesized".
ExprPtr make_number(double value, std::string text = {}, SourceLoc loc = {});
ExprPtr make_int(int64_t value, SourceLoc loc = {});
ExprPtr make_var(std::string name, SourceLoc loc = {});
ExprPtr make_access(std::string tensor, DType dtype, Scope scope, std::vector<ExprPtr> indices,
                    SourceLoc loc = {});
ExprPtr make_neg(ExprPtr x, SourceLoc loc = {});
ExprPtr make_binary(BinaryOp op, ExprPtr lhs, ExprPtr rhs, SourceLoc loc = {});
ExprPtr make_compare(std::vector<ExprPtr> operands, std::vector<CompareOp> ops, SourceLoc loc = {});
ExprPtr make_call(Func f, std::vector<ExprPtr> args, SourceLoc loc = {});

// Structural equality (ignores source locations; numbers compare by value).
bool equal(const Expr& a, const Expr& b);
bool equal(const ExprPtr& a, const ExprPtr& b);

// A statement `lhs = rhs;` where lhs is an Access.
struct Stmt {
  ExprPtr lhs;
  ExprPtr rhs;
  SourceLoc loc;
};

// K^{extent}_{var=start}
struct Loop {
  LoopKind kind = LoopKind::Serial;
  int64_t extent = 1;
  std::string var;
  int64_t start = 0;
  SourceLoc loc;
};

struct Item;

// loops [ body ];  — loops run lexicographically (outermost first), body items in order.
struct Nest {
  std::vector<Loop> loops;
  std::vector<Item> body;
  SourceLoc loc;
};

// One element of a body: a statement or a nested nest.
struct Item {
  enum class Kind : uint8_t { Stmt, Nest };
  Kind kind = Kind::Stmt;
  Stmt stmt;  // valid when kind == Stmt
  Nest nest;  // valid when kind == Nest

  static Item of(Stmt s);
  static Item of(Nest n);
  bool is_stmt() const { return kind == Kind::Stmt; }
  bool is_nest() const { return kind == Kind::Nest; }
};

// A known tensor of the signature (LEIR.md §1).
struct TensorDecl {
  std::string name;
  Role role = Role::Input;
  DType dtype = DType::F64;
  std::vector<int64_t> shape;           // [] = scalar
  std::optional<std::vector<double>> value;  // constants and params only: flat, row-major
  std::string alias;                    // original name (e.g. "gemm.weight"), may be empty
  SourceLoc loc;

  int64_t numel() const;
};

struct Program {
  std::string name;
  std::vector<TensorDecl> known;
  std::vector<Item> body;
  std::string file;  // where it was read from (for diagnostics); empty if synthesized

  const TensorDecl* find_known(std::string_view tensor) const;
};

}  // namespace steptp::leir
