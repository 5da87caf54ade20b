// Affine subscripts: c0 + Σ coef·var over loop variables, and their ranges over loop bounds.
// The compiler uses them to turn subscripts into flat offsets with precomputed strides and to
// drop bounds checks that interval analysis proves unnecessary; input generation uses them to
// find the values a gather index may take.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/leir/ast.h"

namespace steptp::interp {

struct LinearTerm {
  int var = 0;  // loop-variable register (position of the loop in the enclosing chain)
  int64_t coef = 0;
};

struct Linear {
  int64_t c0 = 0;
  std::vector<LinearTerm> terms;  // distinct vars, no zero coefficients
};

// Resolves an index-variable name to its register, or -1 if unbound.
struct VarScope {
  std::vector<std::string> names;  // register i holds names[i]; inner loops shadow outer ones
  int find(const std::string& name) const {
    for (int i = static_cast<int>(names.size()) - 1; i >= 0; --i)
      if (names[i] == name) return i;
    return -1;
  }
};

// The linear form of `e`, or nullopt if it is not affine in loop variables (gathers, //, %,
// products of variables, non-integer constants, unbound variables).
std::optional<Linear> to_linear(const leir::Expr& e, const VarScope& scope);

struct Range {
  int64_t lo = 0;
  int64_t hi = 0;
};

// Range of a linear form when each variable register i ranges over var_ranges[i].
Range range_of(const Linear& l, const std::vector<Range>& var_ranges);

}  // namespace steptp::interp
