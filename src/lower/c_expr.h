// C-family spelling of LEIR expressions, shared by the CPU (C++/OpenMP) and CUDA C generators:
// flat row-major subscripts (int64), values in the statement's compute type, and conditions, with
// one semantics (LEIR.md §3: if_then_else is lazy, comparisons chain, booleans are 0/1). Each
// target spells only its literals and functions; hooks let a generator read accesses its own way
// (the CPU's tracked accumulators and integer masks).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "ir/leir/ast.h"
#include "ir/leir/tensors.h"
#include "lower/rejection.h"

namespace steptp::backend {

struct CSpelling {
  std::string (*literal)(double v, const std::string& compute_type);
  std::map<leir::Func, std::string> calls;  // every function but if_then_else
  std::string pow;                          // the ** operator
  // select(c, a, b) evaluating both branches without a branch; empty: every if_then_else is a
  // lazy `c ? a : b`. Used only where both branches are safe to evaluate (speculation_safe).
  std::string select;
};

// Whether evaluating the branches of `if_then_else` even when not taken is safe: every tensor
// access in them reads an element that is certainly in bounds because the condition (always
// evaluated) reads one with the same subscripts from a tensor no larger in any dimension.
// Arithmetic cannot trap (floating point), so that leaves only the laziness prefix scans need.
bool speculation_safe(const leir::Expr& if_then_else, const leir::TensorTable& table);

class CExprEmitter {
 public:
  CExprEmitter(const leir::Program& p, const CSpelling& spelling) : table_(leir::build_tensor_table(p)), sp_(spelling) {}
  virtual ~CExprEmitter() = default;

  std::string lit(double v) const { return sp_.literal(v, ct_); }
  std::string index(const leir::ExprPtr& e) const;         // an integer subscript
  std::string flat(const leir::ExprPtr& access) const;     // row-major offset of an access
  std::string cond(const leir::ExprPtr& e) const;          // a C boolean
  std::string value(const leir::ExprPtr& e) const;         // a value of type ct_

  // double when anything is f64 (or `all_f64`) or nothing is floating (integer programs follow
  // the real-valued semantics); float otherwise.
  std::string compute_type(const leir::Stmt& s, bool all_f64 = false) const;
  // Whether `s` stores into an integer tensor a value made only of integers (integer tensors,
  // loop variables, integral literals) through min, max and if_then_else, whatever its conditions
  // compare: argmax's C = min(C, if_then_else(A >= D, a, 256)). Such a value is exact in int64
  // (as in the real-valued semantics), where the float compute type would round integers above
  // 2^24 and convert every element to float and back, which kept the loop slow. A target that
  // computes it as "int64_t" needs int64 overloads of its min/max/select; conditions keep their
  // own floating type (cond).
  bool integer_valued(const leir::Stmt& s) const;

 protected:
  [[noreturn]] virtual void fail(const leir::SourceLoc& loc, RejectionCode code, const std::string& msg) const = 0;
  // A target's own spelling of an access as a value / a condition; nullopt: the default.
  virtual std::optional<std::string> access_value(const leir::ExprPtr&) const { return std::nullopt; }
  virtual std::optional<std::string> access_condition(const leir::ExprPtr&) const { return std::nullopt; }

  leir::TensorTable table_;
  // Compute type of the statement being emitted; cond() switches it to the condition's own
  // floating type while it spells the condition of an integer-valued statement.
  mutable std::string ct_ = "double";

 private:
  CSpelling sp_;
};

}  // namespace steptp::backend
