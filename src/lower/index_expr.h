// Integer subscript expressions (+ - * // % over loop variables, literals and gathers), emitted
// in one place for every backend; each target supplies only its spelling of the leaves and of
// floor division / modulo.
#pragma once

#include <functional>
#include <string>

#include "ir/leir/ast.h"
#include "lower/rejection.h"

namespace steptp::backend {

struct IndexSpelling {
  std::function<std::string(int64_t)> number;             // an integer literal
  std::function<std::string(const leir::Expr&)> var;      // a loop variable
  std::function<std::string(const leir::ExprPtr&)> gather;  // an integer tensor read
  std::string floordiv, mod;                              // "f" in f(a, b)
  bool parenthesize_neg = true;                           // "(-x)" rather than "-x"
};

// Throws the target's rejection through `fail` for anything that is not an integer subscript.
using FailFn = std::function<void(leir::SourceLoc, RejectionCode, const std::string&)>;
std::string emit_index(const leir::ExprPtr& e, const IndexSpelling& s, const FailFn& fail);

}  // namespace steptp::backend
